// Stage parameters that need a check YAML cannot make, resolved when the service is packaged
// (`${file(infra/stage-params.cjs):<name>}` in serverless.yml and infra/*.yml):
// - signatureMode `off` accepts unsigned callbacks: it is refused unless the stage is marked as development
//   (`--param development=true`). CloudFormation checks the same at deploy time (infra/parameters.yml,
//   Rules), and the ingest refuses to start on it (lib/ingest/config.ts);
// - the route throttling limits become numbers: a `--param` value is a string, a CloudFormation parameter's
//   Ref too, and the HTTP API stage's RouteSettings reach API Gateway as written, unconverted;
// - the ingest's reserved concurrency, a whole number or none (the property left out);
// - the secrets extension layer: the stage's own ARN, else the version pinned for the deploy region
//   (infra/secrets-extension-layers.cjs), never "the latest";
// - who besides the ingest may send to the callback queue: IAM principal ARNs, the ingest's role first.
'use strict';

const pinnedLayers = require('./secrets-extension-layers.cjs');

const { StageParameterError } = require('./stage-parameter-error.cjs');

function booleanParam(name, value) {
  const text = String(value).trim().toLowerCase();
  if (text === 'true' || text === 'false') return text === 'true';
  throw new StageParameterError(`Stage parameter ${name} must be true or false, not ${JSON.stringify(value)}.`);
}

function positiveNumber(name, value, { integer }) {
  const text = String(value).trim();
  const n = Number(text);
  if (text !== '' && Number.isFinite(n) && n > 0 && (!integer || Number.isInteger(n))) return n;
  throw new StageParameterError(
    `Stage parameter ${name} must be a positive ${integer ? 'whole number' : 'number'}, not ${JSON.stringify(value)}.`,
  );
}

/** `value` as a reserved concurrency: a whole number above 0, or none when empty. */
function reservedConcurrency(name, value) {
  const text = String(value ?? '').trim();
  if (text === '') return { Ref: 'AWS::NoValue' };
  if (/^[1-9][0-9]*$/.test(text)) return Number(text);
  throw new StageParameterError(
    `Stage parameter ${name} must be a whole number above 0, or empty for none, not ${JSON.stringify(value)}.`,
  );
}

/** The extension layer's ARN: the stage's, or the one pinned for `region`. */
function secretsLayerArn(given, region) {
  const text = String(given ?? '').trim();
  if (text !== '') {
    if (/^arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:layer:[A-Za-z0-9_-]+:\d+$/.test(text)) return text;
    throw new StageParameterError(
      'Stage parameter paramsSecretsLayerArn must be a layer version ARN (...:layer:<name>:<version>), not ' +
        `${JSON.stringify(given)}.`,
    );
  }
  const pinned = pinnedLayers[region];
  if (pinned) return pinned;
  throw new StageParameterError(
    `No secrets extension layer is pinned for region ${region}: give one with --param paramsSecretsLayerArn=<arn> ` +
      '(aws ssm get-parameter --name /aws/service/aws-parameters-and-secrets-lambda-extension/arm64/latest).',
  );
}

/**
 * The principals that may send to the callback queue: the ingest's role, then each ARN of `value` (a comma list of
 * IAM role or user ARNs, `*` allowed, as the queue policy's ArnLike takes them).
 */
function queueSenders(value) {
  const arns = String(value ?? '')
    .split(',')
    .map((a) => a.trim())
    .filter((a) => a !== '');
  for (const arn of arns) {
    if (!/^arn:aws[a-z-]*:(iam|sts)::(\d{12}|\*):[A-Za-z0-9+=,.@_/*-]+$/.test(arn))
      throw new StageParameterError(
        `Stage parameter callbackQueueSenders must list IAM principal ARNs (arn:aws:iam::<account>:role/<name>), ` +
          `not ${JSON.stringify(arn)}.`,
      );
  }
  return [{ 'Fn::GetAtt': ['IngestRole', 'Arn'] }, ...arns];
}

module.exports = async ({ resolveVariable }) => {
  const param = (name) => resolveVariable(`param:${name}`);
  const development = booleanParam('development', await param('development'));
  const signatureMode = String(await param('signatureMode')).trim();
  if (signatureMode === 'off' && !development) {
    throw new StageParameterError(
      'Stage parameter signatureMode=off accepts unsigned callbacks and is for development stages only: ' +
        'mark the stage with --param development=true, or use enforce or report.',
    );
  }
  return {
    development: String(development),
    signatureMode,
    // Requests per second (API Gateway takes fractions) and a burst of whole requests.
    callbackRateLimit: positiveNumber('callbackRateLimit', await param('callbackRateLimit'), { integer: false }),
    callbackBurstLimit: positiveNumber('callbackBurstLimit', await param('callbackBurstLimit'), { integer: true }),
    readRateLimit: positiveNumber('readRateLimit', await param('readRateLimit'), { integer: false }),
    readBurstLimit: positiveNumber('readBurstLimit', await param('readBurstLimit'), { integer: true }),
    ingestReservedConcurrency: reservedConcurrency(
      'ingestReservedConcurrency',
      await param('ingestReservedConcurrency'),
    ),
    paramsSecretsLayerArn: secretsLayerArn(
      await param('paramsSecretsLayerArn'),
      await resolveVariable('self:provider.region'),
    ),
    callbackQueueSenders: queueSenders(await param('callbackQueueSenders')),
  };
};
module.exports.booleanParam = booleanParam;
