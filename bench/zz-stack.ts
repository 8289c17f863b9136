import { startLocalStack } from '../devkit/local/stack.ts';
import { setLogSink } from '../lib/log.ts';
setLogSink(() => undefined);
for (let i = 0; i < 4; i++) {
  const c0 = process.cpuUsage(); const t0 = performance.now();
  const s = await startLocalStack({ port: 0, memory: true } as any);
  const c1 = process.cpuUsage(c0); const t1 = performance.now();
  await s.stop();
  const c2 = process.cpuUsage(c0);
  console.log('start', (t1 - t0).toFixed(0), 'ms wall', ((c1.user + c1.system) / 1000).toFixed(0), 'ms cpu; with stop', ((c2.user + c2.system) / 1000).toFixed(0), 'ms cpu', (performance.now() - t0).toFixed(0), 'ms wall');
}
process.exit(0);
