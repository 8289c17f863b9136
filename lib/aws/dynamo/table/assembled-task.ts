// A task from its items: its header and its parts (files and recorded keys) added up, as a recount and the
// checks of a header's counts see it (./items.ts gives the items' shapes).
import type { TaskParts } from '../../../domain/task-parts.ts';
import { joinTallies, type FileRecord } from '../../../domain/task.ts';
import { appKeyOf, fileFromItem, headerFromItem, keysOf, readRecorded, tallyOf, type BodyRef } from './items.ts';
import { timeOf } from '../time/time-items.ts';
import type { Item } from './table-client.ts';
import { Keys, SORT_AT } from './table.ts';

/** One recorded callback: its key, its timestamp and where its raw body lives. */
export interface RecordedKey {
  eventKey: string;
  timestamp: number;
  ref: BodyRef;
}

export interface AssembledTask {
  parts: TaskParts;
  recorded: RecordedKey[];
  sortAt: number;
}

/**
 * Adds up a task from its header and its parts (files and recorded keys): counts are the recorded keys,
 * a file's attempts its recorded upload keys, `updatedAt` and `lastError` the join of every item's tally.
 */
export function assemble(header: Item, parts: Iterable<Item>): AssembledTask {
  const recordedPrefix = `${Keys.partsPrefix(appKeyOf(header))}K#`;
  const recorded: RecordedKey[] = [];
  let tally = tallyOf(header);
  for (const [eventKey, value] of Object.entries(keysOf(header))) recorded.push({ eventKey, ...readRecorded(value) });
  const files = new Map<string, FileRecord>();
  const spilled: Item[] = [];
  for (const item of parts) {
    if (item.sk.startsWith(recordedPrefix)) {
      spilled.push(item);
      continue;
    }
    const file = fileFromItem(item);
    for (const [eventKey, value] of Object.entries(keysOf(item))) {
      const r = readRecorded(value);
      if (r.upload) file.attempts += 1;
      recorded.push({ eventKey, timestamp: r.timestamp, ref: r.ref });
    }
    tally = joinTallies(tally, tallyOf(item));
    files.set(file.fileName, file);
  }
  for (const item of spilled) {
    const file = files.get(item.fileName);
    // A key is recorded on its own only after its file's join was written: the file is there.
    const r = readRecorded(item.v);
    if (file && r.upload) file.attempts += 1;
    recorded.push({ eventKey: item.sk.slice(item.sk.lastIndexOf('#') + 1), timestamp: r.timestamp, ref: r.ref });
  }
  return {
    parts: {
      header: headerFromItem(header),
      files: [...files.values()],
      tally,
      eventCount: recorded.length,
      version: header.ver ?? 0,
      time: timeOf(header),
    },
    recorded,
    sortAt: header[SORT_AT],
  };
}
