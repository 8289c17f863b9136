// The soak's days part at a small size (test/soak/days.ts): two simulated days of a few dozen tasks on a fake
// clock, swept every 5 minutes, checked at each midnight against the brute force. `npm run soak -- --parts days`
// runs it at full size.
import { runDays } from './days.ts';

test('two simulated days: every fact of time stored, published and listed as the brute force says', async () => {
  const f = await runDays({ days: 2, tasksPerDay: 24, seed: 'days-jest' });
  expect(f.firstProblems).toEqual([]);
  expect(f.checks).toBe(2);
  // The run reached every kind of fact, and the sweeps it was meant to.
  expect(f.facts.lost).toBeGreaterThan(0);
  expect(f.facts.warned).toBeGreaterThan(0);
  expect(f.facts.stalled).toBeGreaterThan(0);
  expect(f.facts.settled).toBeGreaterThan(0);
  expect(f.sweeps.twoAtOnce).toBeGreaterThan(0);
  expect(f.sweeps.crashed).toBeGreaterThan(0);
}, 120_000);
