// Callback secrets per appKey, several at once so that a secret can be rotated without a gap.
// Locally they come from the CALLBACK_SECRETS env JSON; deployed, from an SSM Parameter Store SecureString
// read through the AWS Parameters and Secrets Lambda Extension (an HTTP endpoint on localhost), which keeps
// the SSM SDK client out of the bundle. No secret value ever goes into an error message or a log line.
import type { Logger } from '../log.ts';

export type SecretsByAppKey = ReadonlyMap<string, readonly string[]>;

export interface SecretsProvider {
  /** Resolves the current secrets; rejects with SecretsUnavailableError when none could ever be loaded. */
  get(): Promise<SecretsByAppKey>;
  /** Where the secrets come from, for logs (a variable or parameter name, never a value). */
  readonly source: string;
}

export class SecretsUnavailableError extends Error {
  override name = 'SecretsUnavailableError';
}

/**
 * Parses `{"<appKey>": ["<secret>", ...]}` (a single string is taken as a one-secret list).
 * Errors name the source and, at most, the appKey: JSON.parse's own message would quote the text.
 */
export function parseSecrets(text: string, source: string): SecretsByAppKey {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new SecretsUnavailableError(`${source} is not valid JSON.`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new SecretsUnavailableError(`${source} must be a JSON object mapping each appKey to a list of secrets.`);
  }
  const secrets = new Map<string, readonly string[]>();
  for (const [appKey, value] of Object.entries(parsed)) {
    const list: unknown[] = Array.isArray(value) ? value : [value];
    if (list.length === 0 || !list.every((s) => typeof s === 'string' && s !== '')) {
      throw new SecretsUnavailableError(
        `${source}: the secrets of appKey "${appKey}" must be a non-empty list of non-empty strings.`,
      );
    }
    secrets.set(appKey, list as string[]);
  }
  return secrets;
}

/**
 * The secret a sender signs with: the newest of an appKey's, which a rotation lists first (docs/deployment.md,
 * "Rotating a secret": `["<new>", "<old>"]`). A receiver accepts any of them.
 */
export function signingSecret(secrets: readonly string[]): string {
  const newest = secrets[0];
  if (newest === undefined) throw new SecretsUnavailableError('no secret to sign with');
  return newest;
}

/** Secrets from a JSON text known at start-up (CALLBACK_SECRETS). A malformed text fails every get(). */
export function jsonSecrets(text: string, source: string): SecretsProvider {
  let result: { secrets: SecretsByAppKey } | { error: unknown };
  try {
    result = { secrets: parseSecrets(text, source) };
  } catch (error) {
    result = { error };
  }
  return {
    source,
    get: async () => {
      if ('error' in result) throw result.error;
      return result.secrets;
    },
  };
}

export interface ExtensionSecretsOptions {
  /** SSM parameter name (CALLBACK_SECRETS_PARAM). */
  paramName: string;
  /** The extension's port (PARAMETERS_SECRETS_EXTENSION_HTTP_PORT, 2773 by default). */
  port: number;
  /** AWS_SESSION_TOKEN: the extension only answers requests that carry it. */
  sessionToken: () => string | undefined;
  /** How long loaded secrets are used before the next read (SECRETS_REFRESH_S). */
  refreshMs: number;
  /** After a failed refresh the last good secrets are kept and a new read is tried after this long. */
  retryAfterFailureMs?: number;
  /** Time-out of one read from the extension. */
  timeoutMs?: number;
  host?: string;
  now: () => number;
  logger: Logger;
}

const parameterValueOf = (payload: unknown): unknown =>
  (payload as { Parameter?: { Value?: unknown } } | null)?.Parameter?.Value;

/** How the extension is asked for the parameter: its URL, the token it wants, how long it may take. */
interface ExtensionRequest {
  url: string;
  sessionToken: () => string | undefined;
  timeoutMs: number;
  /** The parameter, as messages name it. */
  source: string;
}

/** The secrets the parameter holds now, as the extension answers. */
async function readFromExtension({ url, sessionToken, timeoutMs, source }: ExtensionRequest): Promise<SecretsByAppKey> {
  const token = sessionToken();
  if (!token) throw new Error('AWS_SESSION_TOKEN is not set, so the extension cannot be called');
  const response = await fetch(url, {
    headers: { 'X-Aws-Parameters-Secrets-Token': token },
    signal: AbortSignal.timeout(timeoutMs),
  });
  // The answer holds the decrypted secrets: read it as text and never echo it.
  const text = await response.text();
  if (!response.ok) throw new Error(`the extension answered HTTP ${response.status}`);
  let payload: unknown;
  try {
    payload = JSON.parse(text);
  } catch {
    throw new Error('the extension answer is not JSON');
  }
  const value = parameterValueOf(payload);
  if (typeof value !== 'string') throw new Error('the extension answer has no Parameter.Value');
  return parseSecrets(value, source);
}

/**
 * Reads the parameter once per container, then again once `refreshMs` has passed (the request that finds
 * them expired waits for the read). A failed refresh keeps the last good secrets; a failed first read
 * rejects, and the next call tries again.
 */
export function extensionSecrets(options: ExtensionSecretsOptions): SecretsProvider {
  const { paramName, port, sessionToken, refreshMs, now, logger } = options;
  const retryAfterFailureMs = options.retryAfterFailureMs ?? Math.min(refreshMs, 30_000);
  const timeoutMs = options.timeoutMs ?? 1000;
  const url =
    `http://${options.host ?? 'localhost'}:${port}/systemsmanager/parameters/get` +
    `?name=${encodeURIComponent(paramName)}&withDecryption=true`;
  const source = `SSM parameter ${paramName}`;

  const request: ExtensionRequest = { url, sessionToken, timeoutMs, source };

  let current: SecretsByAppKey | undefined;
  let nextReadAt = 0;
  let inFlight: Promise<SecretsByAppKey> | undefined;

  async function load(): Promise<SecretsByAppKey> {
    try {
      const secrets = await readFromExtension(request);
      const firstLoad = current === undefined;
      current = secrets;
      nextReadAt = now() + refreshMs;
      if (firstLoad) logger.info('callback_secrets_loaded', { source, appKeys: secrets.size });
      return secrets;
    } catch (error) {
      const reason = describe(error);
      if (current) {
        nextReadAt = now() + retryAfterFailureMs;
        logger.warn('callback_secrets_refresh_failed', { source, reason, keptAppKeys: current.size });
        return current;
      }
      throw new SecretsUnavailableError(`Could not read the callback secrets from ${source}: ${reason}.`);
    }
  }

  return {
    source,
    get() {
      if (current && now() < nextReadAt) return Promise.resolve(current);
      inFlight ??= load().finally(() => {
        inFlight = undefined;
      });
      return inFlight;
    },
  };
}

/** A short reason for a failed read. Only our own messages and network error names: nothing from the answer. */
function describe(error: unknown): string {
  if (error instanceof SecretsUnavailableError) return error.message.replace(/\.$/, '');
  // Duck-typed: errors from fetch may come from another realm, where `instanceof Error` is false.
  const { name, message, cause } = (error ?? {}) as { name?: unknown; message?: unknown; cause?: { code?: unknown } };
  if (name === 'TimeoutError' || name === 'AbortError') return 'the extension did not answer in time';
  if (typeof message !== 'string') return 'unknown error';
  return typeof cause?.code === 'string' ? `${message} (${cause.code})` : message;
}
