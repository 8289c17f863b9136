// The header's counts under chaos, with the ordering of a FIFO queue simulated (support/counts-chaos.ts): three
// workers over the same tasks, one batch of a task at a time and in order, random latency on every DynamoDB
// call, stale eventually consistent reads, workers dying before or after a random write (the whole batch comes
// back), failed records coming back with everything after them in their task. Every task must equal the fold,
// every header's counts a recount of its items, the events published lie between MUST and MAY, and each task's
// event sequence numbers only grow. Hundreds of seeds here, several at a time on one emulator (each seed's
// tasks are its own); thousands in the soak (`npm run soak -- --chaos-seeds N`).
import { runCountsChaos, type ChaosOutcome } from './support/counts-chaos.ts';
import { useQuietDynamo } from '../support/quiet-dynamo.ts';

const local = useQuietDynamo();
const SEEDS = Array.from({ length: 200 }, (_, i) => 1000 + i);
/** Seeds run at once: each waits on its latencies most of the time. */
const AT_ONCE = 8;

const TITLE = `FIFO-ordered chaos, ${SEEDS.length} seeds: tasks equal the fold, headers a recount, events in MUST..MAY`;

test(TITLE, async () => {
  const outcomes: ChaosOutcome[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: AT_ONCE }, async () => {
      while (next < SEEDS.length) outcomes.push(await runCountsChaos(SEEDS[next++]!, local.db));
    }),
  );
  const failed = outcomes.filter((o) => o.problems.length > 0).map((o) => ({ seed: o.seed, problems: o.problems }));
  expect(failed).toEqual([]);
  // The faults did strike: workers died mid-batch and reads answered stale.
  const sum = (pick: (o: ChaosOutcome) => number) => outcomes.reduce((n, o) => n + pick(o), 0);
  expect(outcomes).toHaveLength(SEEDS.length);
  expect(sum((o) => o.deaths)).toBeGreaterThan(SEEDS.length / 2);
  expect(sum((o) => o.staleAnswers)).toBeGreaterThan(SEEDS.length / 4);
}, 240_000);
