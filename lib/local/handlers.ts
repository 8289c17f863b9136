// The local stack runs the very handlers that are deployed (functions/*.ts), not a copy assembled from
// lib/: what is tested locally is what runs on Lambda. Those modules read their settings from process.env
// and build their SDK clients once, when first imported, as a Lambda container does. So the environment
// is set first and the modules are imported afterwards; and since a module is evaluated only once per
// process, a second stack in the same process can only reuse them when it needs the very same environment
// (same endpoints, that is, same ports: a restart on the same ports works). Anything else is refused here
// with a clear error instead of silently talking to the first stack's emulators.
import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2, SQSBatchResponse, SQSEvent } from 'aws-lambda';

export interface DeployedHandlers {
  ingest(event: APIGatewayProxyEventV2): Promise<APIGatewayProxyResultV2>;
  api(event: APIGatewayProxyEventV2): Promise<APIGatewayProxyResultV2>;
  worker(event: SQSEvent): Promise<SQSBatchResponse | undefined>;
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

let loaded: { env: Readonly<Record<string, string>>; handlers: Promise<DeployedHandlers> } | undefined;

export async function loadDeployedHandlers(env: Record<string, string>): Promise<DeployedHandlers> {
  if (loaded) {
    const before = loaded.env;
    const names = new Set([...Object.keys(before), ...Object.keys(env)]);
    const differing = [...names].filter((name) => before[name] !== env[name]);
    if (differing.length === 0) return loaded.handlers;
    throw new Error(
      `the deployed handlers are already loaded in this process with other settings (${differing.join(', ')}); ` +
        'they read their environment once, so a second local stack in one process must use the same ports and settings',
    );
  }
  for (const name of UNSET) delete process.env[name];
  Object.assign(process.env, env);
  // Each call gets a request id of its own, as Lambda gives one to each invocation.
  const context = () => ({ awsRequestId: randomUUID() });
  const handlers = Promise.all([
    import('../../functions/ingest.ts'),
    import('../../functions/worker.ts'),
    import('../../functions/api.ts'),
  ]).then(
    ([ingest, worker, api]): DeployedHandlers => ({
      ingest: (event) => ingest.handler(event, context()),
      worker: (event) => worker.handler(event, context()),
      api: (event) => api.handler(event, context()),
    }),
  );
  loaded = { env: { ...env }, handlers };
  return handlers;
}
