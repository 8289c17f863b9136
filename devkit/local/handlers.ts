// The local stack runs the handlers that are deployed, not a copy assembled from lib/: each functions/<key>.ts
// is one line, `export const handler = <factory>(process.env)`, and the stack calls that very factory with the
// function's environment from the template, and the settings of its clients (this stack's emulators, region and
// keys: not read by the SDK from process.env). Each stack builds its own handlers, so two stacks with different
// ports or settings run side by side in one process. While a
// factory runs, the clients it builds get the function's role (devkit/local/iam/enforce.ts) and the services'
// message limits (devkit/local/service-limits.ts) and the faults asked for (devkit/local/faults.ts), through the client
// hook of lib/aws/clients.ts.
//
// A new function: a factory `create<Name>Handler(env, clients = {})` beside its logic (lib/<area>/handler.ts),
// whose clients take `clientConfigOf(service, clients)` (lib/aws/clients.ts), its entry functions/<key>.ts
// calling it with process.env, and one line in handlerFactories below; devkit/local/handlers.test.ts holds each
// entry to its line here.
import { randomUUID } from 'node:crypto';
import { createApiHandler } from '../../lib/api/handler.ts';
import { type ClientSettings, setClientHook } from '../../lib/aws/clients.ts';
import { createIngestHandler } from '../../lib/ingest/handler.ts';
import { createSweeperHandler } from '../../lib/sweeper/handler.ts';
import { createVerifierHandler } from '../../lib/verifier/handler.ts';
import { createWorkerHandler } from '../../lib/worker/handler.ts';
import { injectFaults } from './faults.ts';
import { enforceIam, type IamSession } from './iam/enforce.ts';
import { enforceServiceLimits } from './service-limits.ts';
import { enforceStoredAccess } from './stack-storage.ts';
/** An invocation as Lambda makes it: the event, and a context with the request id and time left. */
export type LambdaHandler = (event: unknown, context: LambdaContext) => Promise<unknown>;

export interface LambdaContext {
  awsRequestId: string;
  functionName: string;
  memoryLimitInMB: string;
  getRemainingTimeInMillis(): number;
}

export interface FunctionToBuild {
  /** `functions/<key>.ts`. */
  key: string;
  exportName: string;
  /** The function's own variables (the template's, resolved). */
  environment: Record<string, string>;
}

type Environment = Readonly<Record<string, string | undefined>>;

type HandlerFactory = (env: Environment, clients: ClientSettings) => LambdaHandler;

/** The factory each entry of functions/ calls with process.env, by the entry's key. */
export const handlerFactories: Readonly<Record<string, HandlerFactory>> = {
  ingest: createIngestHandler as HandlerFactory,
  worker: createWorkerHandler as HandlerFactory,
  api: createApiHandler as HandlerFactory,
  sweeper: createSweeperHandler as HandlerFactory,
  verifier: createVerifierHandler as HandlerFactory,
};

/**
 * Each function's handler, by key, built by its factory with `base` (what Lambda sets) and its own environment;
 * its clients sent to `clients` (this stack's emulators, region and keys, rather than what the SDK would read
 * from process.env) and checked against its role in `iam` (none: not checked).
 */
export function buildDeployedHandlers(
  base: Record<string, string>,
  functions: readonly FunctionToBuild[],
  iam: IamSession | undefined,
  clients: ClientSettings,
): Record<string, LambdaHandler> {
  const handlers: Record<string, LambdaHandler> = {};
  for (const fn of functions) {
    if (fn.exportName !== 'handler')
      throw new Error(
        `functions/${fn.key}.ts exports its handler as "handler", not "${fn.exportName}" (the template's Handler)`,
      );
    const factory = Object.hasOwn(handlerFactories, fn.key) ? handlerFactories[fn.key] : undefined;
    if (!factory) throw new Error(`functions/${fn.key}.ts has no handler factory in devkit/local/handlers.ts`);
    // The factory builds its clients synchronously: the hook is the function's while it runs, and only then.
    const previousHook = setClientHook((client) => {
      if (iam) enforceIam(client, fn.key, iam);
      enforceServiceLimits(client);
      // The objects of the local storages that stand for ones their storage refuses (devkit/local/stack-storage.ts).
      if (client.constructor.name === 'S3Client') enforceStoredAccess(client);
      // Idle unless the stack runs with faults (devkit/local/faults.ts).
      injectFaults(client, fn.key);
    });
    try {
      handlers[fn.key] = factory({ ...base, ...fn.environment }, clients);
    } finally {
      setClientHook(previousHook);
    }
  }
  return handlers;
}

/** Each call gets a request id of its own, as Lambda gives one to each invocation. */
export const newRequestContext = (functionName: string, memoryMb: number, deadline: number): LambdaContext => ({
  awsRequestId: randomUUID(),
  functionName,
  memoryLimitInMB: String(memoryMb),
  getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
});
