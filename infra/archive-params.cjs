// The stage parameters of the raw callbacks' retention and of their archive (infra/archive.yml), resolved when the
// service is packaged (`${file(infra/archive-params.cjs):<name>}`), each checked with one sentence on a bad value:
// - rawRetentionDays: how long the table keeps a raw callback (RAW_EVENT_TTL_DAYS), a whole number of days;
// - archiveRetentionDays: how long the lifecycle rule keeps the archived objects, a whole number of days and no
//   fewer than rawRetentionDays (the table's): what has left the table must still be in the archive;
// - archiveQueryLimitGb: the Athena workgroup's bytes-scanned cutoff per query, in GB, written in bytes (Athena's
//   unit, at least its minimum of 10 MB);
// - the Glue database's name: the service and stage, lower case, `_` for what Glue and Athena do not take in a name.
'use strict';

const { StageParameterError } = require('./stage-parameter-error.cjs');

/** `value` as a whole number of days, at least 1. */
function wholeDays(name, value) {
  const text = String(value ?? '').trim();
  if (/^[1-9][0-9]*$/.test(text)) return Number(text);
  throw new StageParameterError(
    `Stage parameter ${name} must be a whole number of days, at least 1, not ${JSON.stringify(value)}.`,
  );
}

/** Athena's least BytesScannedCutoffPerQuery: 10 MB. */
const MIN_CUTOFF_BYTES = 10_000_000;
const GB = 1024 ** 3;

/** `value` GB in bytes, at least Athena's minimum. */
function cutoffBytes(name, value) {
  const text = String(value ?? '').trim();
  const gb = Number(text);
  if (text !== '' && Number.isFinite(gb) && gb * GB >= MIN_CUTOFF_BYTES) return Math.round(gb * GB);
  throw new StageParameterError(
    `Stage parameter ${name} must be a number of GB, at least 0.01 (Athena's least limit is 10 MB), ` +
      `not ${JSON.stringify(value)}.`,
  );
}

/** A Glue database name of the service's stage: lower case letters, digits and `_` (Athena's names). */
function databaseName(service, stage) {
  return `${service}_${stage}_archive`.toLowerCase().replace(/[^a-z0-9_]/g, '_');
}

module.exports = async ({ resolveVariable }) => {
  const param = (name) => resolveVariable(`param:${name}`);
  const rawRetentionDays = wholeDays('rawRetentionDays', await param('rawRetentionDays'));
  const archiveRetentionDays = wholeDays('archiveRetentionDays', await param('archiveRetentionDays'));
  if (archiveRetentionDays < rawRetentionDays)
    throw new StageParameterError(
      `Stage parameter archiveRetentionDays (${archiveRetentionDays}) must be at least rawRetentionDays ` +
        `(${rawRetentionDays}): a raw callback that has left the table must still be in the archive.`,
    );
  return {
    rawRetentionDays: String(rawRetentionDays),
    archiveRetentionDays,
    archiveQueryLimitBytes: cutoffBytes('archiveQueryLimitGb', await param('archiveQueryLimitGb')),
    databaseName: databaseName(await resolveVariable('self:service'), await resolveVariable('sls:stage')),
  };
};
module.exports.databaseName = databaseName;
