// The DynamoDB emulator a test file runs against, started once for the file with the log lines of the
// code under test silenced (the tests assert on outcomes, not on log output). Call at the top level.
import { type LocalDynamo, startDynamo } from '../../devkit/local/dynamo.ts';
import { setLogSink } from '../../lib/log.ts';

export function useQuietDynamo(): { readonly db: LocalDynamo } {
  const local = {} as { db: LocalDynamo };
  let restoreSink: ReturnType<typeof setLogSink>;
  beforeAll(async () => {
    local.db = await startDynamo();
    restoreSink = setLogSink(() => undefined);
  });
  afterAll(async () => {
    setLogSink(restoreSink);
    await local.db.stop();
  });
  return local;
}
