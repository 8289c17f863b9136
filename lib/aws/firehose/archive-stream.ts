// The archive's writer on AWS: Data Firehose Direct PUT (infra/archive.yml), whose dynamic partitioning files each
// line under its `partition` and compresses what it writes to S3. The lines of a batch go in as few PutRecordBatch
// calls as its limits allow (500 records, 4 MiB), never one request per callback: Firehose bills each record
// rounded up to 5 KB, whatever it holds. An entry Firehose refuses (FailedPutCount: throttled, mostly) is sent
// once more; one refused again is reported not archived, and its record fails.
import { type FirehoseClient, PutRecordBatchCommand, type _Record } from '@aws-sdk/client-firehose';
import type { ArchiveLine, ArchiveWriter } from '../../domain/archive.ts';

/** Firehose's limits of one PutRecordBatch call. */
const MAX_RECORDS = 500;
const MAX_BYTES = 4 * 1024 * 1024;

/** A line as Firehose stores it: its JSON and a newline, so that the objects it writes are JSON Lines. */
function encodeLine(line: ArchiveLine): Uint8Array {
  return new TextEncoder().encode(`${JSON.stringify(line)}\n`);
}

/** The indexes of `records` in the groups each PutRecordBatch call takes. */
function callsOf(records: readonly _Record[]): number[][] {
  const calls: number[][] = [];
  let current: number[] = [];
  let bytes = 0;
  records.forEach((r, i) => {
    const size = r.Data!.byteLength;
    if (current.length === MAX_RECORDS || (current.length > 0 && bytes + size > MAX_BYTES)) {
      calls.push(current);
      current = [];
      bytes = 0;
    }
    current.push(i);
    bytes += size;
  });
  if (current.length > 0) calls.push(current);
  return calls;
}

export function firehoseArchive(client: FirehoseClient, streamName: string): ArchiveWriter {
  /** Sends the records at `indexes`; answers those Firehose refused. */
  const send = async (records: readonly _Record[], indexes: readonly number[]): Promise<number[]> => {
    const refused: number[] = [];
    for (const call of callsOf(indexes.map((i) => records[i]!))) {
      const res = await client.send(
        new PutRecordBatchCommand({ DeliveryStreamName: streamName, Records: call.map((k) => records[indexes[k]!]!) }),
      );
      if (!res.FailedPutCount) continue;
      res.RequestResponses?.forEach((r, k) => {
        if (r.ErrorCode) refused.push(indexes[call[k]!]!);
      });
    }
    return refused;
  };
  return {
    async put(lines) {
      const records = lines.map((line) => ({ Data: encodeLine(line) }));
      const refused = await send(
        records,
        records.map((_, i) => i),
      );
      const left = new Set(refused.length > 0 ? await send(records, refused) : []);
      return lines.map((_, i) => !left.has(i));
    },
  };
}
