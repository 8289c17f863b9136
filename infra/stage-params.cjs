// Stage parameters that need a check YAML cannot make, resolved when the service is packaged
// (`${file(infra/stage-params.cjs):<name>}` in serverless.yml and infra/*.yml):
// - signatureMode `off` accepts unsigned callbacks: it is refused unless the stage is marked as development
//   (`--param development=true`). CloudFormation checks the same at deploy time (infra/parameters.yml,
//   Rules), and the ingest refuses to start on it (lib/ingest/config.ts);
// - the route throttling limits become numbers: a `--param` value is a string, a CloudFormation parameter's
//   Ref too, and the HTTP API stage's RouteSettings reach API Gateway as written, unconverted.
'use strict';

class StageParameterError extends Error {
  constructor(message) {
    super(message);
    this.name = 'StageParameterError';
    // osls prints a failing resolver's stack: the sentence alone says it all.
    this.stack = message;
  }
}

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
  };
};
module.exports.booleanParam = booleanParam;
