import { createLogger, setLogSink } from '../../lib/log.ts';
import { describeFaults, type FaultKind, parseFaults } from './fault-spec.ts';
import { createFaultSession } from './faults.ts';

describe('parseFaults', () => {
  test('reads each kind and its rate', () => {
    expect(parseFaults('dynamo=0.05,crash=0.02,sns=0.1')).toEqual({ dynamo: 0.05, crash: 0.02, sns: 0.1 });
    expect(parseFaults(' crash = 1 , ')).toEqual({ crash: 1 });
    expect(parseFaults('sns=.5')).toEqual({ sns: 0.5 });
  });

  test.each([
    ['', /no fault given/],
    ['disk=0.1', /unknown fault "disk": the kinds are dynamo, crash, sns/],
    ['dynamo', /dynamo needs a rate from 0 to 1/],
    ['dynamo=1.5', /dynamo needs a rate from 0 to 1/],
    ['dynamo=-0.1', /dynamo needs a rate from 0 to 1/],
    ['dynamo=1e-2', /dynamo needs a rate from 0 to 1/],
    ['dynamo=0.1=2', /dynamo needs a rate/],
    ['sns=0.1,sns=0.2', /sns is given twice/],
  ])('refuses %j', (text, message) => {
    expect(() => parseFaults(text)).toThrow(message);
  });

  test('describes the rates given', () => {
    expect(describeFaults({ dynamo: 0.05, crash: 0, sns: 0.1 })).toBe('dynamo 5%, sns 10%');
    expect(describeFaults({})).toBe('none');
  });
});

describe('a fault session', () => {
  let restore: ReturnType<typeof setLogSink>;
  beforeAll(() => {
    restore = setLogSink(() => {});
  });
  afterAll(() => setLogSink(restore));

  const draws = (seed: string, kind: FaultKind, n: number, rate: number) => {
    const session = createFaultSession({ [kind]: rate }, seed, createLogger('faults'));
    return Array.from({ length: n }, () => session.draw(kind, true));
  };

  test('the same seed gives the same faults; another seed others', () => {
    expect(draws('s1', 'dynamo', 200, 0.3)).toEqual(draws('s1', 'dynamo', 200, 0.3));
    expect(draws('s1', 'dynamo', 200, 0.3)).not.toEqual(draws('s2', 'dynamo', 200, 0.3));
  });

  test('fails about the share asked, before or after the call where it may be after', () => {
    const out = draws('share', 'crash', 10_000, 0.1);
    const failed = out.filter((d) => d !== null).length;
    expect(failed).toBeGreaterThan(900);
    expect(failed).toBeLessThan(1100);
    expect(out.filter((d) => d === 'after').length).toBeGreaterThan(350);
    const session = createFaultSession({ sns: 1 }, 'x', createLogger('faults'));
    expect(Array.from({ length: 50 }, () => session.draw('sns', false))).toEqual(Array(50).fill('before'));
    expect(session.injected).toEqual({ dynamo: 0, crash: 0, sns: 50 });
  });

  test('rates 0 and 1, and rates changed on the way', () => {
    expect(draws('z', 'sns', 100, 0).every((d) => d === null)).toBe(true);
    const session = createFaultSession({ dynamo: 1 }, 'x', createLogger('faults'));
    expect(session.draw('dynamo', false)).toBe('before');
    expect(session.draw('crash', true)).toBeNull();
    session.setRates({});
    expect(session.draw('dynamo', false)).toBeNull();
    expect(session.injected.dynamo).toBe(1);
  });
});
