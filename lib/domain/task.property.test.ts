// Order independence of the task state, over random realistic lifecycles of both services.
import fc from 'fast-check';
import { foldTask } from '../../test/support/fold-task.ts';
import { reduceTask } from './reduce-task.ts';
import { applyToFile, applyToHeader, fileNameOf, tallyCallback } from './task.ts';
import type { FileRecord, Tally, TaskHeader } from './task.ts';
import type { Callback } from './callback.ts';
import {
  anyLifecycle,
  callbacksOf,
  mustParse,
  reorderKeysDeep,
  withDuplicatesShuffled,
} from '../../test/support/lifecycles.ts';
import type { Lifecycle } from '../../test/support/lifecycles.ts';

const NUM_RUNS = 250;

/** Header and file records after applying callbacks once each, as the store holds them. */
interface State {
  header: TaskHeader | null;
  files: Map<string, FileRecord>;
  tally: Tally | null;
}

function stateOf(callbacks: readonly Callback[]): State {
  const state: State = { header: null, files: new Map(), tally: null };
  for (const cb of callbacks) apply(state, cb);
  return state;
}

function apply(state: State, cb: Callback): State {
  const fileName = fileNameOf(cb);
  if (fileName) state.files.set(fileName, applyToFile(state.files.get(fileName) ?? null, cb));
  state.header = applyToHeader(state.header, cb);
  state.tally = tallyCallback(state.tally, cb);
  return state;
}

const cloneState = (s: State): State => structuredClone(s);

/** A lifecycle with a permutation of its callbacks (no duplicates). */
const lifecycleInSomeOrder = anyLifecycle().chain((lifecycle) =>
  fc.tuple(
    fc.constant(lifecycle),
    fc.shuffledSubarray(callbacksOf(lifecycle), {
      minLength: lifecycle.bodies.length,
      maxLength: lifecycle.bodies.length,
    }),
  ),
);

describe('task state is independent of delivery order and duplicates', () => {
  test(
    '(a) foldTask of any permutation with duplicates (exact or key-reordered) equals reduceTask of the ' + 'originals',
    () => {
      let withDuplicates = 0;
      fc.assert(
        fc.property(
          anyLifecycle().chain((l) => fc.tuple(fc.constant(l), withDuplicatesShuffled(l.bodies))),
          ([lifecycle, deliveries]) => {
            const expected = reduceTask(callbacksOf(lifecycle));
            const folded = foldTask(deliveries.map((body) => mustParse(lifecycle.service, body)));
            expect(folded).toStrictEqual(expected);
            // The lifecycle's bodies are distinct events: duplicates never count.
            expect(folded!.eventCount).toBe(lifecycle.bodies.length);
            if (deliveries.length > lifecycle.bodies.length) withDuplicates += 1;
          },
        ),
        { numRuns: NUM_RUNS },
      );
      expect(withDuplicates).toBeGreaterThan(NUM_RUNS / 2);
    },
  );

  test('the oracle agrees with what the lifecycle plan says about files and status', () => {
    fc.assert(
      fc.property(anyLifecycle(), (lifecycle: Lifecycle) => {
        const task = reduceTask(callbacksOf(lifecycle))!;
        expect(task.status).toBe(lifecycle.expected.status);
        expect(task.files.map(({ fileName, upload, attempts }) => ({ fileName, upload, attempts }))).toStrictEqual(
          lifecycle.expected.files,
        );
      }),
      { numRuns: NUM_RUNS },
    );
  });

  test('(b) a callback applied again, right away or later, changes nothing', () => {
    fc.assert(
      fc.property(
        lifecycleInSomeOrder.chain(([lifecycle, callbacks]) =>
          fc.tuple(
            fc.constant(lifecycle),
            fc.constant(callbacks),
            fc.nat({ max: callbacks.length - 1 }),
            fc.option(fc.nat(), { freq: 2 }),
          ),
        ),
        ([lifecycle, callbacks, index, reorderSeed]) => {
          const x = callbacks[index]!;
          const again = reorderSeed === null ? x : mustParse(lifecycle.service, reorderKeysDeep(x.body, reorderSeed));
          const once = foldTask(callbacks);
          // Twice in a row, where it first arrived.
          expect(foldTask([...callbacks.slice(0, index + 1), again, ...callbacks.slice(index + 1)])).toStrictEqual(
            once,
          );
          // Again at the end.
          expect(foldTask([...callbacks, again])).toStrictEqual(once);
        },
      ),
      { numRuns: NUM_RUNS },
    );
  });

  test('(b) applyToHeader, applyToFile and tallyCallback are idempotent', () => {
    fc.assert(
      fc.property(
        lifecycleInSomeOrder.chain(([lifecycle, callbacks]) =>
          fc.tuple(fc.constant(lifecycle), fc.constant(callbacks), fc.nat({ max: callbacks.length - 1 })),
        ),
        ([, callbacks, index]) => {
          const x = callbacks[index]!;
          const before = stateOf(callbacks.slice(0, index));
          const header = applyToHeader(before.header, x);
          expect(applyToHeader(header, x)).toStrictEqual(header);
          const tally = tallyCallback(before.tally, x);
          expect(tallyCallback(tally, x)).toStrictEqual(tally);
          const fileName = fileNameOf(x);
          if (fileName) {
            const file = applyToFile(before.files.get(fileName) ?? null, x);
            expect(applyToFile(file, x)).toStrictEqual(file);
          }
        },
      ),
      { numRuns: NUM_RUNS },
    );
  });

  test('(c) applyToFile and applyToHeader commute for two distinct callbacks on the same file', () => {
    let checked = 0;
    fc.assert(
      fc.property(
        lifecycleInSomeOrder.chain(([_lifecycle, callbacks]) =>
          fc.tuple(
            fc.constant(callbacks),
            fc.nat({ max: callbacks.length - 1 }),
            fc.nat({ max: callbacks.length - 1 }),
            fc.array(fc.boolean(), { minLength: callbacks.length, maxLength: callbacks.length }),
          ),
        ),
        ([callbacks, i, j, inBase]) => {
          const a = callbacks[i]!;
          const b = callbacks[j]!;
          const fileName = fileNameOf(a);
          fc.pre(i !== j && fileName !== null && fileNameOf(b) === fileName);
          checked += 1;
          // Some state already built from other callbacks of the task, then a and b in either order.
          const base = stateOf(callbacks.filter((_cb, k) => inBase[k] && k !== i && k !== j));
          const ab = apply(apply(cloneState(base), a), b);
          const ba = apply(apply(cloneState(base), b), a);
          expect(ab.files.get(fileName)).toStrictEqual(ba.files.get(fileName));
          expect(ab.header).toStrictEqual(ba.header);
          // The file joins alone, from the same record.
          const f0 = base.files.get(fileName) ?? null;
          expect(applyToFile(applyToFile(f0, a), b)).toStrictEqual(applyToFile(applyToFile(f0, b), a));
        },
      ),
      { numRuns: NUM_RUNS },
    );
    expect(checked).toBeGreaterThan(NUM_RUNS / 2);
  });

  test('applyToHeader commutes for any two distinct callbacks of a task', () => {
    fc.assert(
      fc.property(
        lifecycleInSomeOrder.chain(([, callbacks]) =>
          fc.tuple(
            fc.constant(callbacks),
            fc.nat({ max: callbacks.length - 1 }),
            fc.nat({ max: callbacks.length - 1 }),
          ),
        ),
        ([callbacks, i, j]) => {
          fc.pre(i !== j);
          const base = stateOf(callbacks.filter((_, k) => k !== i && k !== j));
          const ab = apply(apply(cloneState(base), callbacks[i]!), callbacks[j]!);
          const ba = apply(apply(cloneState(base), callbacks[j]!), callbacks[i]!);
          expect(ab.header).toStrictEqual(ba.header);
          expect(ab.tally).toStrictEqual(ba.tally);
        },
      ),
      { numRuns: NUM_RUNS },
    );
  });
});
