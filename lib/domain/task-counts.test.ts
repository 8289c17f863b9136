import {
  NONE_ABSORBED,
  batchChange,
  addCounts,
  changeOf,
  laterMarksChange,
  lastSequence,
  markAfterWrite,
  sequenceBefore,
  sequenceOf,
  zeroCounts,
  type FileMark,
  type WriteCharge,
} from './task-counts.ts';
import type { FileState } from './task.ts';

const seq = (n: number | bigint) => sequenceOf(String(n))!;

/** A write to one file, with the mark it left. */
function write(s: string, name: string, state: FileState, mark: FileMark | null, events = 0): WriteCharge {
  return { sequence: s, file: { name, state, mark }, transition: null, events, uncertain: false };
}

describe('sequence numbers', () => {
  test('compared as fixed-width strings, they order as the numbers do beyond 2^53 and across lengths', () => {
    const a = sequenceOf('9007199254740993')!;
    const b = sequenceOf('9007199254740992')!;
    // As JavaScript numbers the two are equal: the reason they are never stored as numbers.
    expect(Number('9007199254740993')).toBe(Number('9007199254740992'));
    expect(a > b).toBe(true);
    expect(sequenceOf('18446744073709551616')! > sequenceOf('9999999999999999999')!).toBe(true);
    expect(sequenceBefore(sequenceOf('10000000000000000000')!)).toBe(sequenceOf('9999999999999999999'));
  });

  test('anything but a decimal string is no sequence number', () => {
    for (const raw of [undefined, null, '', '12a', '-1', '1'.repeat(41), ' 12']) expect(sequenceOf(raw)).toBeNull();
  });
});

describe('marks', () => {
  test(
    'two writes to one file before the header catches up: the second keeps the state counted before the ' +
      'first (a mark of the previous state alone would count the first write never)',
    () => {
      const absorbed = seq(10);
      const first = markAfterWrite(null, null, seq(11), absorbed, 1);
      const second = markAfterWrite(first, 'pending', seq(12), absorbed, 1);
      expect(second).toEqual({ seq: seq(12), counted: null, events: 2 });
      // Charged once, by the batch holding its last writer: none -> uploaded, two callbacks.
      expect(batchChange([write(seq(12), 'f', 'uploaded', second)], absorbed)).toEqual(changeOf(null, 'uploaded', 2));
    },
  );

  test('a mark whose writer the header absorbed starts again from the state as the next writer finds it', () => {
    const old: FileMark = { seq: seq(5), counted: null, events: 1 };
    expect(markAfterWrite(old, 'failed', seq(20), seq(19), 1)).toEqual({ seq: seq(20), counted: 'failed', events: 1 });
  });
});

describe('what a batch charges its header', () => {
  test('a file written twice in the batch is charged once, from its last mark', () => {
    const absorbed = seq(99);
    const m1 = markAfterWrite(null, null, seq(100), absorbed, 1);
    const m2 = markAfterWrite(m1, 'pending', seq(101), absorbed, 1);
    const change = batchChange([write(seq(100), 'f', 'pending', m1), write(seq(101), 'f', 'failed', m2)], absorbed);
    expect(change).toEqual(changeOf(null, 'failed', 2));
  });

  test('a batch that comes back in pieces charges a mark once, with the piece holding its writer', () => {
    // Messages 10 and 11 wrote one file (mark 11), then their batch failed before its count; 10 comes back
    // alone, a duplicate finding the mark of 11, then 11 in a batch of its own.
    const absorbed = seq(9);
    const m = markAfterWrite(markAfterWrite(null, null, seq(10), absorbed, 1), 'failed', seq(11), absorbed, 1);
    expect(batchChange([write(seq(10), 'f', 'failed', m)], absorbed)).toEqual(zeroCounts());
    expect(batchChange([write(seq(11), 'f', 'failed', m)], seq(10))).toEqual(changeOf(null, 'failed', 2));
  });

  test('what a piece leaves to a later message, added to what it charges, counts the file as it stands', () => {
    // As above: 10 (an end naming the file) comes back alone. The header then counts no file at all although
    // the end's file stands failed; the task's status is read off the two together.
    const absorbed = seq(9);
    const m = markAfterWrite(markAfterWrite(null, null, seq(10), absorbed, 1), 'failed', seq(11), absorbed, 1);
    const piece = [write(seq(10), 'f', 'failed', m)];
    expect(laterMarksChange(piece, absorbed)).toEqual(changeOf(null, 'failed'));
    expect(addCounts(batchChange(piece, absorbed), laterMarksChange(piece, absorbed))).toEqual(
      changeOf(null, 'failed'),
    );
    // The piece holding the mark's writer charges it: nothing is left behind; nor without sequence numbers.
    expect(laterMarksChange([write(seq(11), 'f', 'failed', m)], seq(10))).toEqual(zeroCounts());
    expect(laterMarksChange(piece, null)).toEqual(zeroCounts());
  });

  test('a batch that comes again after its header update charges nothing: every mark is absorbed', () => {
    const m = markAfterWrite(null, null, seq(7), seq(6), 1);
    expect(batchChange([write(seq(7), 'f', 'pending', m)], seq(7))).toEqual(zeroCounts());
  });

  test('a write the header absorbed already (late, after a recount) charges its own change', () => {
    const late: WriteCharge = {
      sequence: seq(3),
      file: { name: 'f', state: 'uploaded', mark: null },
      transition: { from: 'pending', to: 'uploaded' },
      events: 1,
      uncertain: false,
    };
    expect(batchChange([late], seq(9))).toEqual(changeOf('pending', 'uploaded', 1));
  });

  test(
    'a late write onto a file whose mark is not absorbed is counted by that mark alone (its own change charged ' +
      'beside it would count it twice)',
    () => {
      const absorbed = seq(50);
      // An earlier delivery of record 52 wrote the file; record 49, absorbed by a recount, comes late.
      const pending = markAfterWrite(null, null, seq(52), absorbed, 1);
      const folded = markAfterWrite(pending, 'pending', seq(49), absorbed, 1);
      expect(folded).toEqual({ seq: seq(52), counted: null, events: 2 });
      const late: WriteCharge = {
        sequence: seq(49),
        file: { name: 'f', state: 'uploaded', mark: folded },
        transition: { from: 'pending', to: 'uploaded' },
        events: 0,
        uncertain: false,
      };
      expect(batchChange([late, write(seq(52), 'f', 'uploaded', folded)], absorbed)).toEqual(
        changeOf(null, 'uploaded', 2),
      );
    },
  );

  test(
    'a file a later message wrote before its batch stopped is charged by that message alone, whichever ' +
      'earlier message of the task writes it first in a batch of its own',
    () => {
      // Messages 8, 9 and 12 came in one batch, which stopped after 12 wrote the file; 8 and 9 come back alone.
      const absorbed = seq(7);
      const byTwelve = markAfterWrite(null, null, seq(12), absorbed, 1);
      const byNine = markAfterWrite(byTwelve, 'pending', seq(9), absorbed, 1);
      expect(byNine).toEqual({ seq: seq(12), counted: null, events: 2 });
      const early = batchChange(
        [
          write(seq(8), 'g', 'uploaded', markAfterWrite(null, null, seq(8), absorbed, 1)),
          write(seq(9), 'f', 'uploaded', byNine),
        ],
        absorbed,
      );
      // The header absorbs 9: message 12's mark is not its to charge.
      expect(early).toEqual(changeOf(null, 'uploaded', 1));
      // Message 12 comes again, finds its key recorded and charges the mark once, message 9's write included.
      const later = batchChange([write(seq(12), 'f', 'uploaded', byNine)], seq(9));
      expect(later).toEqual(changeOf(null, 'uploaded', 2));
    },
  );

  test('without sequence numbers each write charges its own change and its keys', () => {
    const charge = (from: FileState, to: FileState): WriteCharge => ({
      sequence: null,
      file: { name: 'f', state: to, mark: null },
      transition: { from, to },
      events: 1,
      uncertain: false,
    });
    expect(batchChange([charge(null, 'pending'), charge('pending', 'uploaded')], null)).toEqual(
      changeOf(null, 'uploaded', 2),
    );
  });

  test('the last sequence number of a batch, none without any', () => {
    expect(lastSequence([write(seq(4), 'a', null, null), write(seq(12), 'b', null, null)])).toBe(seq(12));
    expect(lastSequence([])).toBeNull();
    expect(NONE_ABSORBED).toBe(seq(0));
  });
});
