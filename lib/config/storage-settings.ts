// How the verifier reaches each appKey's storage (docs/verification.md, "Storage settings"): the stage's
// STORAGE_SETTINGS, JSON of appKey to one setting, checked whole when the function loads. A setting is an S3
// bucket of the stage's account (read under the verifier's role), an S3-compatible endpoint (Alibaba OSS,
// Tencent COS, Qiniu Kodo, Huawei OBS) with access keys kept in Parameter Store or Secrets Manager, or a plain
// HTTP HEAD of the file's URL. A malformed setting stops the function with one sentence naming the appKey and
// the field: verifying against a storage nobody meant would flag every file. infra/storage-params.cjs reads the
// same JSON when the service is packaged, for the grants of the verifier's role.
import * as v from 'valibot';
import { parseDuration } from '../time-point.ts';
import { StartRefused } from './read-env.ts';

/** Where an object's key comes from: the path of the reported fileUrl, or the file's name after a prefix. */
const KEY_SOURCES = ['url-path', 'file-name'] as const;

/** An S3 bucket name as S3 and the S3-compatible services accept one. */
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const REGION = /^[a-z0-9-]{2,40}$/;
/** A Parameter Store name: the role grants exactly it, so it is written out whole. */
const PARAMETER = /^\/[A-Za-z0-9_.\-/]{1,1010}$/;
/** A Secrets Manager secret's name (not an ARN: the role's grant is built from it). */
const SECRET = /^[A-Za-z0-9/_+=.@-]{1,512}$/;

/**
 * How long a storage's uploads must keep failing (platform time) before their failures make an incident: 0, the
 * default, opens one at the first sweep after a failure; `1m` leaves out a failure the platform's next retries mend.
 */
const incidentAfter = v.optional(
  v.pipe(
    v.string('must be a duration such as 1m or 30s'),
    v.transform((text) => parseDuration(text) ?? Number.NaN),
    v.check((ms) => Number.isSafeInteger(ms) && ms >= 0 && ms <= 86_400_000, 'must be a duration from 0s to 24h'),
  ),
  '0s',
);

/**
 * Whether the verifier may probe the storage while an incident lasts (the bucket, then a canary object under
 * PROBE_PREFIX written, read back and deleted): the role's grants follow it (infra/storage-params.cjs).
 */
const probe = v.optional(v.boolean('must be true or false'), false);

/** Where a probe writes its canary objects in a bucket (the verifier's grants to write are on this prefix only). */
export const PROBE_PREFIX = '.rtc-callbacks-receiver-probe/';

const keyFields = {
  key: v.optional(v.picklist(KEY_SOURCES, 'must be url-path or file-name'), 'url-path'),
  /** Before the file's name when `key` is file-name. */
  prefix: v.optional(v.pipe(v.string('must be text'), v.maxLength(512, 'must be at most 512 characters')), ''),
};

const bucket = v.pipe(
  v.string('must be text'),
  v.regex(BUCKET, 'must be an S3 bucket name (3 to 63 of a-z, 0-9, . and -)'),
);
const region = v.pipe(v.string('must be text'), v.regex(REGION, 'must be a region name such as eu-west-1'));

const S3Setting = v.strictObject(
  {
    type: v.literal('s3'),
    bucket,
    /** The bucket's region; default: the function's own. */
    region: v.optional(region),
    ...keyFields,
    incidentAfter,
    probe,
  },
  'is not a field of an s3 setting (type, bucket, region, key, prefix, incidentAfter, probe)',
);

const Credentials = v.union(
  [
    v.strictObject({
      parameter: v.pipe(v.string('must be text'), v.regex(PARAMETER, 'must be a Parameter Store name starting with /')),
    }),
    v.strictObject({
      secret: v.pipe(v.string('must be text'), v.regex(SECRET, 'must be a Secrets Manager secret name')),
    }),
  ],
  'must be {"parameter": "/name"} or {"secret": "name"}',
);

const httpsUrl = v.pipe(
  v.string('must be text'),
  v.url('must be a URL'),
  v.check((u) => /^https?:\/\//i.test(u), 'must be an http or https URL'),
);

const S3CompatibleSetting = v.strictObject(
  {
    type: v.literal('s3-compatible'),
    /** The service's S3 endpoint, e.g. https://oss-cn-hangzhou.aliyuncs.com. */
    endpoint: httpsUrl,
    bucket,
    /** The region its signatures name (most such services accept us-east-1 for any). */
    region: v.optional(region, 'us-east-1'),
    /** Where its access keys are kept: JSON {"accessKeyId": "...", "secretAccessKey": "..."}. */
    credentials: Credentials,
    /** Path-style addresses (endpoint/bucket/key) rather than virtual-hosted ones (bucket.endpoint/key). */
    pathStyle: v.optional(v.boolean('must be true or false'), false),
    ...keyFields,
    incidentAfter,
    probe,
  },
  'is not a field of an s3-compatible setting (type, endpoint, bucket, region, credentials, pathStyle, key, prefix, ' +
    'incidentAfter, probe)',
);

const HttpSetting = v.strictObject(
  {
    type: v.literal('http'),
    /** The hosts whose URLs may be checked (a callback names the URL): none given, any host. */
    hosts: v.optional(v.array(v.pipe(v.string(), v.minLength(1)), 'must be a list of host names'), []),
    incidentAfter,
  },
  'is not a field of an http setting (type, hosts, incidentAfter)',
);

const StorageSetting = v.variant(
  'type',
  [S3Setting, S3CompatibleSetting, HttpSetting],
  'must be s3, s3-compatible or http',
);

export type S3Setting = v.InferOutput<typeof S3Setting>;
export type S3CompatibleSetting = v.InferOutput<typeof S3CompatibleSetting>;
export type StorageSetting = v.InferOutput<typeof StorageSetting>;
/** The settings by appKey; an appKey without one has its files `unverifiable`, with that reason. */
export type StorageSettings = Readonly<Record<string, StorageSetting>>;

/** An issue in one sentence: the appKey and field it is about (`appKey "a", field bucket`), and what is wrong. */
function issueSentence(issue: v.BaseIssue<unknown>): string {
  const [appKey, ...field] = (issue.path ?? []).map((p) => String(p.key));
  if (appKey === undefined) return issue.message;
  const where = `appKey ${JSON.stringify(appKey)}${field.length ? `, field ${field.join('.')}` : ''}`;
  if (!field.length) return `${where} must be a setting: {"type": "s3" | "s3-compatible" | "http", ...}`;
  // A field left out: its object's message would name the fields allowed, not the one missing.
  return `${where} ${issue.input === undefined ? 'is missing' : issue.message}`;
}

/** The settings from their JSON text; throws one sentence saying what is wrong and where. */
export function parseStorageSettings(text: string): StorageSettings {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Error('is not JSON');
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json))
    throw new Error('must be a JSON object of appKey to setting');
  const result = v.safeParse(v.record(v.pipe(v.string(), v.minLength(1, 'a non-empty appKey')), StorageSetting), json);
  if (!result.success) throw new Error(`is not valid: ${issueSentence(result.issues[0])}`);
  return result.output;
}

/** STORAGE_SETTINGS as a variable of a function's schema: a bad value stops the function. */
export const storageSettingsValue = v.pipe(
  v.string(),
  v.transform((text) => {
    try {
      return parseStorageSettings(text);
    } catch (err) {
      throw new StartRefused((err as Error).message, true);
    }
  }),
);

/**
 * The storage a setting names, as incidents and probes say it: `s3://<bucket>` in the stage's account,
 * `s3://<endpoint host>/<bucket>` elsewhere, `https://<host>` for URLs checked by HTTP.
 */
export function storageNameOf(setting: S3Setting | S3CompatibleSetting): string {
  if (setting.type === 's3') return `s3://${setting.bucket}`;
  return `s3://${new URL(setting.endpoint).host}/${setting.bucket}`;
}

/**
 * The storage an appKey's uploads go to, as its incidents name it: the bucket its setting names, the one host of an
 * http setting, else the appKey's storage as a whole. Never the reported URL: a failed upload may report none, and
 * its failures and the successes that end them must name one storage.
 */
export function storageOfAppKey(settings: StorageSettings, appKey: string): string {
  const setting = Object.hasOwn(settings, appKey) ? settings[appKey] : undefined;
  if (setting?.type === 'http') return setting.hosts.length === 1 ? `https://${setting.hosts[0]}` : `appKey ${appKey}`;
  return setting ? storageNameOf(setting) : `appKey ${appKey}`;
}
