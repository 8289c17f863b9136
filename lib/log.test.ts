import { createLogger, invocationRunner, logLevelFrom, setLogSink } from './log.ts';

let lines: Record<string, unknown>[] = [];
let restore: ReturnType<typeof setLogSink>;
beforeEach(() => {
  lines = [];
  restore = setLogSink((line) => lines.push(JSON.parse(line)));
});
afterEach(() => setLogSink(restore));

describe('logLevelFrom', () => {
  test("the function's Lambda log level wins over LOG_LEVEL; TRACE and FATAL map to debug and error", () => {
    expect(logLevelFrom({})).toBe('info');
    expect(logLevelFrom({ LOG_LEVEL: 'warn' })).toBe('warn');
    expect(logLevelFrom({ LOG_LEVEL: 'warn', AWS_LAMBDA_LOG_LEVEL: 'DEBUG' })).toBe('debug');
    expect(logLevelFrom({ AWS_LAMBDA_LOG_LEVEL: 'TRACE' })).toBe('debug');
    expect(logLevelFrom({ AWS_LAMBDA_LOG_LEVEL: 'FATAL' })).toBe('error');
    expect(logLevelFrom({ AWS_LAMBDA_LOG_LEVEL: 'error', LOG_LEVEL: 'debug' })).toBe('error');
    expect(logLevelFrom({ AWS_LAMBDA_LOG_LEVEL: 'LOUD', LOG_LEVEL: 'nonsense' })).toBe('info');
  });

  test('lines below the level are not written', () => {
    const log = createLogger('worker', logLevelFrom({ AWS_LAMBDA_LOG_LEVEL: 'WARN' }));
    log.debug('a');
    log.info('b');
    log.warn('c');
    log.error('d');
    expect(lines.map((l) => [l.level, l.event])).toEqual([
      ['warn', 'c'],
      ['error', 'd'],
    ]);
  });
});

describe('the keys of a line', () => {
  test('time, level, function, event; inside an invocation the Lambda request id and cold-start flag', async () => {
    const log = createLogger('ingest', 'debug');
    const runInvocation = invocationRunner();
    log.info('outside', { service: 'recording' });
    await runInvocation({ awsRequestId: 'req-a' }, async () => {
      await new Promise((r) => setTimeout(r, 1));
      log.info('first');
    });
    runInvocation({ awsRequestId: 'req-b' }, () => log.warn('second', { error: new TypeError('x') }));
    expect(lines[0]).toEqual({
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      level: 'info',
      function: 'ingest',
      event: 'outside',
      service: 'recording',
    });
    // The first invocation of a runner (of a handler module: of a container) is the cold start.
    expect(lines[1]).toMatchObject({ event: 'first', awsRequestId: 'req-a', coldStart: true });
    expect(lines[2]).toMatchObject({
      event: 'second',
      awsRequestId: 'req-b',
      coldStart: false,
      error: 'TypeError: x',
    });
  });

  test('concurrent invocations keep their own request ids', async () => {
    const log = createLogger('worker');
    const runInvocation = invocationRunner();
    await Promise.all(
      ['r1', 'r2', 'r3'].map((id, i) =>
        runInvocation({ awsRequestId: id }, async () => {
          await new Promise((r) => setTimeout(r, 10 - 3 * i));
          log.info('done', { id });
        }),
      ),
    );
    expect(lines.map((l) => [l.id, l.awsRequestId])).toEqual([
      ['r3', 'r3'],
      ['r2', 'r2'],
      ['r1', 'r1'],
    ]);
  });
});
