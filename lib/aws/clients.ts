// Every AWS SDK client a function builds passes through `functionClient`: deployed it returns the client as
// it is; the local stack sets a hook here while it loads a function's module, which adds to each of that
// function's clients the check of its calls against the function's role (devkit/local/iam/enforce.ts).
export type ClientHook = (client: object) => void;

let hook: ClientHook | undefined;

/** Sets the hook the clients built from now on get (undefined: none); returns the previous one. */
export function setClientHook(next: ClientHook | undefined): ClientHook | undefined {
  const previous = hook;
  hook = next;
  return previous;
}

export function functionClient<T extends object>(client: T): T {
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
  endpoints?: Partial<Record<'dynamodb' | 'sqs' | 'sns', string>>;
}

/** The part of a client's configuration `settings` decide for `service` (empty when none are given). */
export function clientConfigOf(
  service: 'dynamodb' | 'sqs' | 'sns',
  settings: ClientSettings = {},
): { region?: string; endpoint?: string; credentials?: ClientSettings['credentials'] } {
  const endpoint = settings.endpoints?.[service];
  return {
    ...(settings.region ? { region: settings.region } : {}),
    ...(settings.credentials ? { credentials: settings.credentials } : {}),
    ...(endpoint ? { endpoint } : {}),
  };
}
