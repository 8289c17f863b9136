import { createColors } from 'picocolors';
import { prettyLogLine } from './dev-log.ts';

const c = createColors(false);
const at = '2025-11-22T08:00:00.123Z';

describe('prettyLogLine', () => {
  test('a callback request: time, route, status, task, type, verdict and duration on one line', () => {
    const line = JSON.stringify({
      time: at,
      level: 'info',
      function: 'ingest',
      event: 'callback_request',
      awsRequestId: 'x',
      coldStart: false,
      route: 'POST /callbacks/recording',
      service: 'recording',
      appKey: 'demo-app',
      type: 2,
      id: 'rec-1',
      status: 200,
      mode: 'enforce',
      verdict: 'valid',
      latencyMs: 3.4,
    });
    expect(prettyLogLine(line, c)!.split(/\s{2,}/)).toEqual([
      '08:00:00.123',
      'POST /callbacks/recording',
      '200',
      'rec-1',
      '2 slice',
      'valid',
      '3.4 ms',
    ]);
  });

  test('a refusal adds its code; a callback set aside in report mode says how it comes back', () => {
    const refused = JSON.stringify({
      time: at,
      level: 'warn',
      event: 'callback_request',
      route: 'POST /callbacks/screenshot',
      status: 401,
      type: 1,
      id: 'img-1',
      verdict: 'invalid',
      code: 'invalid_signature',
      latencyMs: 1,
    });
    expect(prettyLogLine(refused, c)).toMatch(/ 401 .* invalid_signature$/);
    const setAside = JSON.stringify({ time: at, event: 'callback_request', status: 200, setAside: true });
    expect(prettyLogLine(setAside, c)).toMatch(/set aside: callbacks quarantine apply recovers it$/);
    const replay = JSON.stringify({ time: at, event: 'callback_request', status: 200, claim: 'replayed' });
    expect(prettyLogLine(replay, c)).toMatch(/a replay: set aside as replayed_signature$/);
  });

  test('warnings and errors in short; routine lines are left to the JSON format', () => {
    const quarantined = JSON.stringify({
      time: at,
      level: 'warn',
      function: 'worker',
      event: 'callback_quarantined',
      awsRequestId: 'x',
      coldStart: true,
      reason: 'invalid_callback',
      id: 'rec-2',
    });
    expect(prettyLogLine(quarantined, c)).toBe(
      '08:00:00.123  WARN   worker callback_quarantined  reason=invalid_callback id=rec-2',
    );
    expect(prettyLogLine(JSON.stringify({ time: at, level: 'info', event: 'batch_done' }), c)).toBeNull();
    expect(prettyLogLine('not json', c)).toBe('not json');
  });
});
