// The local stack runs the very handlers that are deployed (functions/*.ts), not a copy assembled from
// lib/: what is tested locally is what runs on Lambda. Those modules read their settings from process.env
// and build their SDK clients once, when first imported, as a Lambda container does. So each module is
// imported with its own function's environment from the template in process.env (and no other function's),
// and with a client hook that puts its clients under its role (lib/local/iam/enforce.ts), the services'
// message limits (lib/local/service-limits.ts) and the faults asked for (lib/local/faults.ts). Since a module is
// evaluated only once per process, a second stack in the same process can only reuse them when it needs
// the very same environment (same endpoints, that is, same ports: a restart on the same ports works).
// Anything else is refused here with a clear error instead of silently talking to the first stack's
// emulators.
import { randomUUID } from 'node:crypto';
import { setClientHook } from '../aws/clients.ts';
import { injectFaults } from './faults.ts';
import { enforceIam } from './iam/enforce.ts';
import { enforceServiceLimits } from './service-limits.ts';

/** An invocation as Lambda makes it: the event, and a context with the request id and time left. */
export type LambdaHandler = (event: unknown, context: LambdaContext) => Promise<unknown>;

export interface LambdaContext {
  awsRequestId: string;
  functionName: string;
  memoryLimitInMB: string;
  getRemainingTimeInMillis(): number;
}

export interface FunctionToLoad {
  /** `functions/<key>.ts`. */
  key: string;
  exportName: string;
  /** The function's own variables (the template's, resolved): set while its module loads, then removed. */
  environment: Record<string, string>;
}

/**
 * Variables that would send the handlers elsewhere than the local emulators (a deployed secrets
 * parameter, a profile's credentials or endpoints, FIPS or dual-stack endpoint rewriting), and the
 * allow-list, which the stack passes only when one is given (set but empty, the ingest refuses to start).
 */
const UNSET = [
  'ALLOWED_SOURCE_CIDRS',
  'CALLBACK_SECRETS_PARAM',
  'AWS_SESSION_TOKEN',
  'AWS_PROFILE',
  'AWS_ENDPOINT_URL',
  'AWS_IGNORE_CONFIGURED_ENDPOINT_URLS',
  'AWS_USE_FIPS_ENDPOINT',
  'AWS_USE_DUALSTACK_ENDPOINT',
] as const;

type Loaded = Record<string, LambdaHandler>;
let loaded: { signature: Readonly<Record<string, string>>; handlers: Promise<Loaded> } | undefined;

/** One flat view of what the modules were loaded with, to compare a second stack's needs against. */
function signatureOf(
  base: Record<string, string>,
  functions: readonly FunctionToLoad[],
  served: Record<string, string>,
): Record<string, string> {
  const out: Record<string, string> = { ...base };
  for (const [name, value] of Object.entries(served)) out[`served.${name}`] = value;
  for (const fn of functions) {
    out[`${fn.key}.export`] = fn.exportName;
    for (const [name, value] of Object.entries(fn.environment)) out[`${fn.key}.${name}`] = value;
  }
  return out;
}

async function importEach(functions: readonly FunctionToLoad[]): Promise<Loaded> {
  const own = new Set(functions.flatMap((fn) => Object.keys(fn.environment)));
  const before = new Map([...own].map((name) => [name, process.env[name]]));
  const handlers: Loaded = {};
  try {
    // One at a time: each module sees its own variables only, and its clients get its role.
    for (const fn of functions) {
      for (const name of own) delete process.env[name];
      Object.assign(process.env, fn.environment);
      const previousHook = setClientHook((client) => {
        enforceIam(client, fn.key);
        enforceServiceLimits(client);
        // Idle unless the stack runs with faults (lib/local/faults.ts).
        injectFaults(client, fn.key);
      });
      try {
        const module = (await import(`../../functions/${fn.key}.ts`)) as Record<string, unknown>;
        const handler = module[fn.exportName];
        if (typeof handler !== 'function')
          throw new Error(`functions/${fn.key}.ts has no export ${fn.exportName} (the template's Handler)`);
        handlers[fn.key] = handler as LambdaHandler;
      } finally {
        setClientHook(previousHook);
      }
    }
  } finally {
    for (const [name, value] of before) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
  return handlers;
}

/**
 * Imports each function's module with `base` (region, credentials, endpoints: read by the SDK at each call,
 * so they stay set) and its own environment; resolves to its handler by key. `served` names what the
 * modules read once from elsewhere and keep (the secrets read through the extension): a second stack must
 * serve the same.
 */
export async function loadDeployedHandlers(
  base: Record<string, string>,
  functions: readonly FunctionToLoad[],
  served: Record<string, string> = {},
): Promise<Loaded> {
  const signature = signatureOf(base, functions, served);
  if (loaded) {
    const before = loaded.signature;
    const names = new Set([...Object.keys(before), ...Object.keys(signature)]);
    const differing = [...names].filter((name) => before[name] !== signature[name]);
    if (differing.length === 0) return loaded.handlers;
    throw new Error(
      `the deployed handlers are already loaded in this process with other settings (${differing.join(', ')}); ` +
        'they read their environment once, so a second local stack in one process must use the same ports and settings',
    );
  }
  for (const name of UNSET) delete process.env[name];
  Object.assign(process.env, base);
  const handlers = importEach(functions);
  loaded = { signature, handlers };
  return handlers;
}

/** Each call gets a request id of its own, as Lambda gives one to each invocation. */
export const newRequestContext = (functionName: string, memoryMb: number, deadline: number): LambdaContext => ({
  awsRequestId: randomUUID(),
  functionName,
  memoryLimitInMB: String(memoryMb),
  getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
});
