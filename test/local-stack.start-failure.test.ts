// A start of the local stack that fails half-way undoes what it had done: its ports are free again, the
// process-wide hooks (log sink, IAM checks, faults) are as before, no stack file announces it, and a stack
// started next on the same ports runs.
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFaultSession } from '../devkit/local/faults.ts';
import { setIamSession } from '../devkit/local/iam/enforce.ts';
import type { PolicyStatement } from '../devkit/local/iam/policy.ts';
import { startLocalStack } from '../devkit/local/stack.ts';
import { stackFilePath } from '../devkit/local/stack-file.ts';
import { loadTemplate, type Template } from '../devkit/local/template.ts';
import { createLogger, setLogSink } from '../lib/log.ts';

let cwd: string;
beforeAll(async () => {
  cwd = await mkdtemp(join(tmpdir(), 'callbacks-start-failure-'));
});
afterAll(() => rm(cwd, { recursive: true, force: true }));

/** Resolves once a server could listen on `port` (127.0.0.1) and was closed again; rejects if it is taken. */
function listenOnce(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const { port: got } = server.address() as { port: number };
      server.close(() => resolve(got));
    });
  });
}

/** The template with the worker role unable to consume the queue: the start fails after the emulators. */
function withoutQueueConsumption(): Template {
  const template = structuredClone(loadTemplate().template);
  const policies = template.Resources.WorkerRole!.Properties!.Policies as Array<{
    PolicyDocument: { Statement: PolicyStatement[] };
  }>;
  for (const p of policies)
    p.PolicyDocument.Statement = p.PolicyDocument.Statement.filter((s) => s.Sid !== 'ConsumeCallbackQueue');
  return template;
}

test('a start failing after the emulators and the hooks are up leaves nothing behind', async () => {
  const ports = { port: await listenOnce(0), dynamoPort: await listenOnce(0), sqsPort: await listenOnce(0) };
  const lines: string[] = [];
  const previousSink = setLogSink((line) => lines.push(line));
  try {
    await expect(
      startLocalStack({
        ...ports,
        memory: true,
        cwd,
        quiet: true,
        faults: { rates: { crash: 1 }, seed: 'x' },
        template: withoutQueueConsumption(),
      }),
    ).rejects.toThrow(/does not have permissions to call ReceiveMessage on SQS/);

    // The gateway and both emulators were listening (the start got past them), and are closed.
    for (const port of Object.values(ports)) await expect(listenOnce(port)).resolves.toBe(port);
    expect(existsSync(stackFilePath(cwd))).toBe(false);
    // The hooks it set for this process are withdrawn: no IAM checks, no faults, the sink given back.
    expect(setIamSession(undefined)).toBeUndefined();
    expect(setFaultSession(undefined)).toBeUndefined();
    createLogger('probe').info('after_the_failed_start');
    expect(lines.map((l) => JSON.parse(l).event)).toContain('after_the_failed_start');
  } finally {
    setLogSink(previousSink);
  }

  // The same ports serve the next stack.
  const stack = await startLocalStack({ ...ports, memory: true, cwd, quiet: true });
  try {
    expect(stack.url).toBe(`http://127.0.0.1:${ports.port}`);
    expect(await (await fetch(`${stack.url}/health`)).json()).toEqual({ ok: true });
  } finally {
    await stack.stop();
  }
  for (const port of Object.values(ports)) await expect(listenOnce(port)).resolves.toBe(port);
  expect(existsSync(stackFilePath(cwd))).toBe(false);
}, 120_000);
