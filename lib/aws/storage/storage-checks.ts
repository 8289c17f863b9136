// One check of a reported file in its storage, as the appKey's setting says to reach it (lib/config/
// storage-settings.ts): HeadObject on an S3 bucket of the stage's account (the verifier's role), or on an
// S3-compatible endpoint with the access keys its setting names, or an HTTP HEAD of the reported URL. The answer
// is what the storage said (lib/domain/verification.ts StorageAnswer): the object's size, ETag and checksum, or
// 404, 403, or no answer. Nothing is retried here but what the SDK retries itself; the verifier decides.
import { HeadObjectCommand, S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import type { S3CompatibleSetting, StorageSetting, StorageSettings } from '../../config/storage-settings.ts';
import { storageNameOf, storageOfAppKey } from '../../config/storage-settings.ts';
import type { StorageAnswer } from '../../domain/verification.ts';
import { errorSentence } from '../../text.ts';
import { type ClientSettings, clientConfigOf, functionClient } from '../clients.ts';
import { objectKeyOf } from './object-key.ts';
import { probeStorage } from './probe.ts';
import type { ProbeResult } from '../../domain/storage-incidents.ts';
import type { StorageCredentials } from './storage-credentials.ts';

export interface StorageCheckOptions {
  /** The longest a check may take, connection included. */
  timeoutMs: number;
  /** Where the stage's own clients go (the local stack's emulator), their region and keys. */
  clients?: ClientSettings;
  /** Access keys of S3-compatible endpoints, read when first needed. */
  credentials?: StorageCredentials;
}

/** A check's answer, and the storage it asked (`s3://bucket`, `https://host`), for logs and incidents. */
export type CheckedAnswer = StorageAnswer & { storage: string | null };

/** The HTTP status of an SDK error, when it came from a response. */
const statusOf = (err: unknown): number | undefined =>
  (err as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;

/** What an S3 error means for a file: the object is not there, access is refused, or the storage did not answer. */
function s3ErrorAnswer(err: unknown, what: string): StorageAnswer {
  const name = String((err as { name?: unknown } | null)?.name ?? '');
  const status = statusOf(err);
  // The local stack refuses a call its role does not allow before it is sent, as AccessDeniedException.
  if (status === 401 || status === 403 || /AccessDenied|Forbidden|InvalidAccessKeyId|SignatureDoesNotMatch/.test(name))
    return { found: false, why: 'forbidden', message: `${what}: access denied (${status ?? name})` };
  if (status === 404 || /^(NotFound|NoSuchKey|NoSuchBucket)$/.test(name))
    return { found: false, why: 'not_found', message: `${what}: no such object (404)` };
  return { found: false, why: 'unreachable', message: `${what}: the storage did not answer (${errorSentence(err)})` };
}

/** The checks of every appKey's storage, with one S3 client per region of the stage's own buckets. */
export class StorageChecks {
  private readonly settings: StorageSettings;
  private readonly options: StorageCheckOptions;
  /** The stage's own buckets, by region ('' for the function's own): built at load, under the function's role. */
  private readonly ownClients = new Map<string, S3Client>();
  /** The S3-compatible endpoints' clients, built when first used, with the access keys of their setting. */
  private readonly foreignClients = new Map<string, S3Client>();

  constructor(settings: StorageSettings, options: StorageCheckOptions) {
    this.settings = settings;
    this.options = options;
    for (const setting of Object.values(settings))
      if (setting.type === 's3' && !this.ownClients.has(setting.region ?? ''))
        this.ownClients.set(setting.region ?? '', this.ownClient(setting.region));
  }

  /** The appKeys that have a setting. */
  appKeys(): string[] {
    return Object.keys(this.settings);
  }

  settingOf(appKey: string): StorageSetting | undefined {
    return Object.hasOwn(this.settings, appKey) ? this.settings[appKey] : undefined;
  }

  /** The storage an appKey's setting names (null: no setting, or checks by the URL's host). */
  storageOf(appKey: string): string | null {
    const setting = this.settingOf(appKey);
    return setting && setting.type !== 'http' ? storageNameOf(setting) : null;
  }

  /** The storage an appKey's uploads go to, as its incidents name it (storageOfAppKey). */
  storageOfAppKey(appKey: string): string {
    return storageOfAppKey(this.settings, appKey);
  }

  /** How long an appKey's uploads must keep failing before they make an incident (its setting's incidentAfter). */
  incidentAfterOf(appKey: string): number {
    return this.settingOf(appKey)?.incidentAfter ?? 0;
  }

  /** A probe of an appKey's storage, when its setting allows one (null otherwise). */
  async probe(appKey: string): Promise<ProbeResult | null> {
    const setting = this.settingOf(appKey);
    if (!setting || setting.type === 'http' || !setting.probe) return null;
    const client = setting.type === 's3' ? this.ownClients.get(setting.region ?? '')! : this.foreignClient(setting);
    return probeStorage(client, setting);
  }

  async check(appKey: string, fileName: string, fileUrl: string | null): Promise<CheckedAnswer> {
    const setting = this.settingOf(appKey);
    if (!setting) {
      const message = `no storage setting for appKey ${JSON.stringify(appKey)} (STORAGE_SETTINGS)`;
      return { found: false, why: 'unconfigured', message, storage: null };
    }
    if (setting.type === 'http') return this.headUrl(setting.hosts, fileUrl);
    const storage = storageNameOf(setting);
    const located = objectKeyOf(setting, fileName, fileUrl);
    if ('error' in located) return { found: false, why: 'bad_url', message: located.error, storage };
    const what = `${storage}/${located.key}`;
    try {
      const client = setting.type === 's3' ? this.ownClients.get(setting.region ?? '')! : this.foreignClient(setting);
      const head = await client.send(
        new HeadObjectCommand({ Bucket: setting.bucket, Key: located.key, ChecksumMode: 'ENABLED' }),
      );
      // The checksum the object was stored with, named by its algorithm.
      const checksums: [string, string | undefined][] = [
        ['sha256', head.ChecksumSHA256],
        ['sha1', head.ChecksumSHA1],
        ['crc64nvme', head.ChecksumCRC64NVME],
        ['crc32c', head.ChecksumCRC32C],
        ['crc32', head.ChecksumCRC32],
      ];
      const checksum = checksums.find(([, value]) => value);
      return {
        found: true,
        size: typeof head.ContentLength === 'number' ? head.ContentLength : null,
        etag: head.ETag ?? null,
        checksum: checksum ? `${checksum[0]}:${checksum[1]}` : null,
        storage,
      };
    } catch (err) {
      return { ...s3ErrorAnswer(err, what), storage };
    }
  }

  /** An HTTP HEAD of the reported URL: 2xx holds the file (its Content-Length and ETag), 404 and 410 do not. */
  private async headUrl(hosts: readonly string[], fileUrl: string | null): Promise<CheckedAnswer> {
    let url: URL;
    try {
      url = new URL(fileUrl ?? '');
    } catch {
      return { found: false, why: 'bad_url', message: 'the reported fileUrl is not a URL', storage: null };
    }
    const storage = `${url.protocol}//${url.host}`;
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      return { found: false, why: 'bad_url', message: 'the reported fileUrl is not an http or https URL', storage };
    if (hosts.length > 0 && !hosts.includes(url.hostname))
      return { found: false, why: 'bad_url', message: `${url.hostname} is not a host of the setting`, storage };
    try {
      const res = await fetch(url, { method: 'HEAD', signal: AbortSignal.timeout(this.options.timeoutMs) });
      await res.arrayBuffer();
      const what = `HEAD ${storage}${url.pathname}`;
      if (res.ok) {
        const length = res.headers.get('content-length');
        const size = length !== null && /^\d+$/.test(length) ? Number(length) : null;
        return { found: true, size, etag: res.headers.get('etag'), checksum: null, storage };
      }
      if (res.status === 404 || res.status === 410)
        return { found: false, why: 'not_found', message: `${what}: no such file (${res.status})`, storage };
      if (res.status === 401 || res.status === 403)
        return { found: false, why: 'forbidden', message: `${what}: access denied (${res.status})`, storage };
      return { found: false, why: 'unreachable', message: `${what}: answered HTTP ${res.status}`, storage };
    } catch (err) {
      const message = `HEAD ${storage}${url.pathname}: no answer (${errorSentence(err, { bare: true })})`;
      return { found: false, why: 'unreachable', message, storage };
    }
  }

  private clientConfig(): Pick<S3ClientConfig, 'maxAttempts' | 'requestHandler'> {
    const timeout = this.options.timeoutMs;
    return {
      maxAttempts: 2,
      requestHandler: {
        connectionTimeout: Math.min(timeout, 2000),
        requestTimeout: timeout,
        throwOnRequestTimeout: true,
      },
    };
  }

  private ownClient(region: string | undefined): S3Client {
    const base = clientConfigOf('s3', this.options.clients);
    return functionClient(
      new S3Client({
        ...base,
        ...(region ? { region } : {}),
        // An emulator's endpoint takes the bucket in the path.
        ...(base.endpoint ? { forcePathStyle: true } : {}),
        ...this.clientConfig(),
      }),
    );
  }

  private foreignClient(setting: S3CompatibleSetting): S3Client {
    const id = `${setting.endpoint}|${setting.region}|${JSON.stringify(setting.credentials)}|${setting.pathStyle}`;
    let client = this.foreignClients.get(id);
    if (!client) {
      const credentials = this.options.credentials;
      if (!credentials) throw new Error('no reader of storage credentials was given');
      client = functionClient(
        new S3Client({
          endpoint: setting.endpoint,
          region: setting.region,
          forcePathStyle: setting.pathStyle,
          credentials: () => credentials.read(setting.credentials),
          ...this.clientConfig(),
        }),
      );
      this.foreignClients.set(id, client);
    }
    return client;
  }
}
