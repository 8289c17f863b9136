// The access keys of an S3-compatible storage, kept in Parameter Store (a SecureString) or Secrets Manager as JSON
// {"accessKeyId": "...", "secretAccessKey": "..."}, read through the AWS Parameters and Secrets Lambda Extension
// (as the ingest reads its secrets: no SSM or Secrets Manager SDK in the bundle), kept for `refreshMs`, and never
// logged or echoed: a read that fails says which parameter or secret, never what the answer held.
import type { S3CompatibleSetting } from '../../config/storage-settings.ts';

export type CredentialsSource = S3CompatibleSetting['credentials'];

export interface AccessKeys {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export interface StorageCredentials {
  read(source: CredentialsSource): Promise<AccessKeys>;
}

export interface ExtensionCredentialsOptions {
  /** PARAMETERS_SECRETS_EXTENSION_HTTP_PORT. */
  port: number;
  /** AWS_SESSION_TOKEN: the extension answers only requests that carry it. */
  sessionToken: () => string | undefined;
  refreshMs: number;
  timeoutMs: number;
  now: () => number;
  host?: string;
}

const nameOf = (source: CredentialsSource) =>
  'parameter' in source ? `parameter ${source.parameter}` : `secret ${source.secret}`;

function keysOf(value: unknown, what: string): AccessKeys {
  let json: unknown;
  try {
    json = typeof value === 'string' ? JSON.parse(value) : null;
  } catch {
    json = null;
  }
  const keys = json as Partial<AccessKeys> | null;
  if (!keys || typeof keys.accessKeyId !== 'string' || typeof keys.secretAccessKey !== 'string')
    throw new Error(`the ${what} does not hold JSON {"accessKeyId": ..., "secretAccessKey": ...}`);
  return {
    accessKeyId: keys.accessKeyId,
    secretAccessKey: keys.secretAccessKey,
    ...(typeof keys.sessionToken === 'string' ? { sessionToken: keys.sessionToken } : {}),
  };
}

/** Access keys through the extension, each source read again once `refreshMs` has passed. */
export function extensionCredentials(o: ExtensionCredentialsOptions): StorageCredentials {
  const cache = new Map<string, { keys: AccessKeys; until: number }>();
  const base = `http://${o.host ?? 'localhost'}:${o.port}`;
  return {
    async read(source) {
      const what = nameOf(source);
      const cached = cache.get(what);
      if (cached && o.now() < cached.until) return cached.keys;
      const token = o.sessionToken();
      if (!token) throw new Error('AWS_SESSION_TOKEN is not set, so the extension cannot be called');
      const url =
        'parameter' in source
          ? `${base}/systemsmanager/parameters/get?name=${encodeURIComponent(source.parameter)}&withDecryption=true`
          : `${base}/secretsmanager/get?secretId=${encodeURIComponent(source.secret)}`;
      const res = await fetch(url, {
        headers: { 'X-Aws-Parameters-Secrets-Token': token },
        signal: AbortSignal.timeout(o.timeoutMs),
      });
      // The answer holds the keys: read as text, never echoed.
      const text = await res.text();
      if (!res.ok) throw new Error(`the extension answered HTTP ${res.status} for the ${what}`);
      let payload: { Parameter?: { Value?: unknown }; SecretString?: unknown } | null = null;
      try {
        payload = JSON.parse(text);
      } catch {
        throw new Error(`the extension's answer for the ${what} is not JSON`);
      }
      const keys = keysOf('parameter' in source ? payload?.Parameter?.Value : payload?.SecretString, what);
      cache.set(what, { keys, until: o.now() + o.refreshMs });
      return keys;
    },
  };
}
