import type { Logger } from '../../lib/log.ts';
import { LambdaRuntimeError } from './lambda-invoke.ts';
import { MAX_RESPONSE_BYTES, localFunction } from './lambda-runtime.ts';
import type { FunctionSettings } from './stack-template.ts';

const lines: Array<[string, Record<string, unknown> | undefined]> = [];
const log: Logger = {
  debug() {},
  info() {},
  warn: (event, fields) => lines.push([event, fields]),
  error: (event, fields) => lines.push([event, fields]),
};
const settings = (over: Partial<FunctionSettings> = {}): FunctionSettings => ({
  key: 'worker',
  logicalId: 'WorkerLambdaFunction',
  functionName: 'svc-local-worker',
  exportName: 'handler',
  environment: {},
  literalVariables: [],
  layers: [],
  memoryMb: 256,
  timeoutS: 30,
  roleLogicalId: 'WorkerRole',
  roleName: 'svc-local-WorkerRole',
  ...over,
});
const run = (s: FunctionSettings, handler: (event: unknown, context: never) => Promise<unknown>) =>
  localFunction({
    settings: s,
    handler: handler as never,
    log,
    logGroupName: '/aws/lambda/x',
    region: 'us-east-1',
    accountId: '000000000000',
  });

beforeEach(() => {
  lines.length = 0;
});

test("an invocation ends at the function's time-out with Lambda's error, whatever the handler does", async () => {
  const invoke = run(settings({ timeoutS: 0.05 }), () => new Promise((r) => setTimeout(r, 1000)));
  const started = Date.now();
  const failed = invoke({ Records: [] });
  await expect(failed).rejects.toBeInstanceOf(LambdaRuntimeError);
  await expect(failed).rejects.toMatchObject({
    name: 'Sandbox.Timedout',
    message: /Task timed out after 0\.05 seconds$/,
  });
  expect(Date.now() - started).toBeLessThan(900);
  expect(lines.map(([event]) => event)).toEqual(['function_timed_out']);
});

test('the handler sees the time left and its memory size in its context', async () => {
  const invoke = run(settings({ timeoutS: 6, memoryMb: 512 }), async (_, context: never) => {
    const c = context as { getRemainingTimeInMillis(): number; memoryLimitInMB: string; functionName: string };
    return { left: c.getRemainingTimeInMillis(), memory: c.memoryLimitInMB, name: c.functionName };
  });
  const out = (await invoke({})) as { left: number; memory: string; name: string };
  expect(out.left).toBeGreaterThan(5000);
  expect(out.left).toBeLessThanOrEqual(6000);
  expect([out.memory, out.name]).toEqual(['512', 'svc-local-worker']);
});

test('a response over 6 MB is refused as Lambda refuses it', async () => {
  const big = run(settings(), async () => ({ body: 'x'.repeat(MAX_RESPONSE_BYTES) }));
  await expect(big({})).rejects.toMatchObject({
    name: 'Function.ResponseSizeTooLarge',
    message: 'Response payload size exceeded maximum allowed payload size (6291456 bytes).',
  });
  const fits = run(settings(), async () => ({ body: 'x'.repeat(MAX_RESPONSE_BYTES - 20) }));
  await expect(fits({})).resolves.toBeDefined();
});

test('a heap beyond the memory size is reported once', async () => {
  const invoke = run(settings({ memoryMb: 1 }), async () => 'ok');
  await invoke({});
  await invoke({});
  expect(lines.filter(([event]) => event === 'function_memory_exceeded')).toHaveLength(1);
});
