// `npm run soak -- --full-size`: the cases of `npm test` at the size the platform really reaches, too long
// for the test suite (which runs each of them smaller, catching the same mistakes): for now the 8,640
// failed uploads of one image over a day of retries every 10 s (test/support/many-attempts.ts), whose
// attempts are read back over several pages. Each case runs against its own DynamoDB emulator; the part
// prints one line per case and resolves to the exit code (1 when a case found a problem).
import { startDynamo } from '../../lib/local/dynamo.ts';
import { setLogSink } from '../../lib/log.ts';
import { FULL_DAY_ATTEMPTS, manyAttemptsProblems } from '../support/many-attempts.ts';

interface FullSizeCase {
  name: string;
  /** What differs from the expected state: empty when the case holds. */
  run(): Promise<string[]>;
}

const cases: FullSizeCase[] = [
  {
    name: `${FULL_DAY_ATTEMPTS.toLocaleString('en')} failed uploads of one image, some twice, in any order`,
    async run() {
      const db = await startDynamo();
      try {
        return await manyAttemptsProblems({
          client: db.client,
          tableName: db.tableName,
          attempts: FULL_DAY_ATTEMPTS,
          imageId: 'img-outage',
        });
      } finally {
        await db.stop();
      }
    },
  },
];

export async function runFullSizeCases(say: (line: string) => void): Promise<number> {
  const restoreSink = setLogSink(() => undefined);
  let failed = 0;
  try {
    for (const c of cases) {
      const started = Date.now();
      const problems = await c.run();
      const took = `${((Date.now() - started) / 1000).toFixed(1)} s`;
      if (problems.length === 0) say(`full size: ${c.name}: ok (${took})`);
      else {
        failed++;
        say(`full size: ${c.name}: FAILED (${took})\n  ${problems.join('\n  ')}`);
      }
    }
  } finally {
    setLogSink(restoreSink);
  }
  return failed === 0 ? 0 : 1;
}
