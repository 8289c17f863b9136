// The stage parameter `storageSettings` (JSON of appKey to the way its storage is reached; docs/verification.md),
// resolved when the service is packaged: the verifier's STORAGE_SETTINGS, and the grants its role needs for them,
// exactly those: HeadObject (s3:GetObject) on the objects of each S3 bucket of the stage's account named, for the
// buckets whose setting allows a probe HeadBucket (s3:ListBucket) and the write and delete of its canary objects,
// and the read of each Parameter Store parameter or Secrets Manager secret that holds an S3-compatible storage's
// access keys (read with the function's role by the Parameters and Secrets extension). The verifier checks the
// settings whole when it loads (lib/config/storage-settings.ts); here only what the grants are made of is read,
// and a value that is no JSON object is refused in one sentence.
'use strict';

const { StageParameterError } = require('./stage-parameter-error.cjs');

/** The settings as JSON text, checked to be an object of objects. */
function parseSettings(text) {
  let settings;
  try {
    settings = JSON.parse(String(text ?? '').trim() || '{}');
  } catch {
    throw new StageParameterError('Stage parameter storageSettings must be JSON: {"<appKey>": {"type": "s3", ...}}.');
  }
  const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
  if (!isObject(settings) || !Object.values(settings).every(isObject))
    throw new StageParameterError('Stage parameter storageSettings must be a JSON object of appKey to setting.');
  return settings;
}

const sorted = (values) => [...new Set(values)].sort();

/** Where a probe writes its canary objects (lib/config/storage-settings.ts PROBE_PREFIX). */
const PROBE_PREFIX = '.rtc-callbacks-receiver-probe/';

/** The statements of the verifier's grants on the storages the settings name (none: no statement). */
function storageStatements(settings) {
  const all = Object.values(settings);
  const buckets = sorted(all.filter((s) => s.type === 's3' && typeof s.bucket === 'string').map((s) => s.bucket));
  const credentials = all.filter((s) => s.type === 's3-compatible' && s.credentials).map((s) => s.credentials);
  const parameters = sorted(credentials.filter((c) => typeof c.parameter === 'string').map((c) => c.parameter));
  const secrets = sorted(credentials.filter((c) => typeof c.secret === 'string').map((c) => c.secret));
  const statements = [];
  if (buckets.length)
    statements.push({
      Sid: 'CheckStoredFiles',
      Effect: 'Allow',
      // HeadObject is authorised as s3:GetObject; the bucket's objects only, nothing of the bucket itself.
      Action: 's3:GetObject',
      Resource: buckets.map((b) => ({ 'Fn::Sub': `arn:\${AWS::Partition}:s3:::${b}/*` })),
    });
  // The probe of an incident's storage, where its setting allows one: the bucket, and its canary objects only.
  const probed = sorted(all.filter((s) => s.type === 's3' && s.probe === true).map((s) => s.bucket));
  if (probed.length) {
    statements.push({
      Sid: 'ProbeStorageBuckets',
      Effect: 'Allow',
      Action: 's3:ListBucket',
      Resource: probed.map((b) => ({ 'Fn::Sub': `arn:\${AWS::Partition}:s3:::${b}` })),
    });
    const prefixOf = (b) => all.find((s) => s.type === 's3' && s.bucket === b).prefix ?? '';
    statements.push({
      Sid: 'ProbeStorageCanaries',
      Effect: 'Allow',
      Action: ['s3:DeleteObject', 's3:PutObject'],
      Resource: probed.map((b) => ({ 'Fn::Sub': `arn:\${AWS::Partition}:s3:::${b}/${prefixOf(b)}${PROBE_PREFIX}*` })),
    });
  }
  if (parameters.length)
    statements.push({
      Sid: 'ReadStorageKeysParameters',
      Effect: 'Allow',
      Action: 'ssm:GetParameter',
      Resource: parameters.map((p) => ({
        'Fn::Sub': `arn:\${AWS::Partition}:ssm:\${AWS::Region}:\${AWS::AccountId}:parameter${p}`,
      })),
    });
  if (parameters.length)
    statements.push({
      Sid: 'DecryptStorageKeysParameters',
      Effect: 'Allow',
      // As the ingest's own parameter: only through Parameter Store, and only for these parameters.
      Action: 'kms:Decrypt',
      Resource: { 'Fn::Sub': 'arn:${AWS::Partition}:kms:${AWS::Region}:${AWS::AccountId}:key/*' },
      Condition: {
        StringEquals: {
          'kms:ViaService': { 'Fn::Sub': 'ssm.${AWS::Region}.${AWS::URLSuffix}' },
          'kms:EncryptionContext:PARAMETER_ARN': parameters.map((p) => ({
            'Fn::Sub': `arn:\${AWS::Partition}:ssm:\${AWS::Region}:\${AWS::AccountId}:parameter${p}`,
          })),
        },
      },
    });
  if (secrets.length)
    statements.push({
      Sid: 'ReadStorageKeysSecrets',
      Effect: 'Allow',
      Action: 'secretsmanager:GetSecretValue',
      // Secrets Manager adds six random characters to a secret's name in its ARN.
      Resource: secrets.map((s) => ({
        'Fn::Sub': `arn:\${AWS::Partition}:secretsmanager:\${AWS::Region}:\${AWS::AccountId}:secret:${s}-??????`,
      })),
    });
  return statements;
}

module.exports = async ({ resolveVariable }) => {
  const settings = parseSettings(await resolveVariable('param:storageSettings'));
  const statements = storageStatements(settings);
  return {
    storageSettings: JSON.stringify(settings),
    // A policy of its own, attached to the verifier's role, only when a storage is named (a policy holds a statement).
    resources: statements.length
      ? {
          Resources: {
            VerifierStoragePolicy: {
              Type: 'AWS::IAM::Policy',
              Properties: {
                PolicyName: 'verifier-storage',
                Roles: [{ Ref: 'VerifierRole' }],
                PolicyDocument: { Version: '2012-10-17', Statement: statements },
              },
            },
          },
        }
      : {},
  };
};
module.exports.parseSettings = parseSettings;
module.exports.storageStatements = storageStatements;
