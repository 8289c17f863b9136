// Every AWS SDK client a function builds passes through `functionClient`: deployed it returns the client without
// the SDK's request logging; the local stack sets a hook here while it loads a function's module, which adds to
// each of that function's clients the check of its calls against the function's role (devkit/local/iam/enforce.ts).
export type ClientHook = (client: object) => void;

/** The part of an SDK client `functionClient` changes: its middleware stack. */
interface SdkClient {
  middlewareStack: { remove(name: string): boolean };
}

/**
 * The setting of a client that a function calls many times an invocation (the worker: a few calls a record):
 * the SDK resolves each command's middleware stack once, not on every call. No middleware may then be added
 * after the client's first call; the local stack adds its checks as the client is built (the hook below).
 */
export const MANY_CALLS = { cacheMiddleware: true } as const;

let hook: ClientHook | undefined;

/** Sets the hook the clients built from now on get (undefined: none); returns the previous one. */
export function setClientHook(next: ClientHook | undefined): ClientHook | undefined {
  const previous = hook;
  hook = next;
  return previous;
}

/**
 * The client without the SDK's request logging. Whoever builds a client here logs its own lines and gives the SDK
 * no logger; its logging middleware would still copy every request and response through the service's filter of
 * sensitive fields (about a tenth of a call's CPU), for a logger that drops them.
 */
export function withoutSdkLogging<T extends SdkClient>(client: T): T {
  client.middlewareStack.remove('loggerMiddleware');
  return client;
}

export function functionClient<T extends SdkClient>(client: T): T {
  withoutSdkLogging(client);
  hook?.(client);
  return client;
}

/**
 * Where a function's clients go and as whom, when it is not where the SDK would find out by itself from the
 * process's environment: the local stack gives each of its handlers its own emulators' endpoints, region and
 * keys, so that two stacks run in one process. Deployed, none is given.
 */
export interface ClientSettings {
  region?: string;
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  /** `s3`: the buckets of the stage's own account (the local stack's S3 emulator is addressed path-style). */
  endpoints?: Partial<Record<'dynamodb' | 'sqs' | 'sns' | 's3' | 'firehose', string>>;
}

/** The part of a client's configuration `settings` decide for `service` (empty when none are given). */
export function clientConfigOf(
  service: 'dynamodb' | 'sqs' | 'sns' | 's3' | 'firehose',
  settings: ClientSettings = {},
): { region?: string; endpoint?: string; credentials?: ClientSettings['credentials'] } {
  const endpoint = settings.endpoints?.[service];
  return {
    ...(settings.region ? { region: settings.region } : {}),
    ...(settings.credentials ? { credentials: settings.credentials } : {}),
    ...(endpoint ? { endpoint } : {}),
  };
}
