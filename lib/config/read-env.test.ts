import * as v from 'valibot';
import { ConfigError, envSchema, positiveWholeNumber, readEnvironment, refuseStart, text } from './read-env.ts';

const schema = envSchema('worker', {
  TABLE: { value: text, invalid: 'refuse' },
  SIZE: {
    value: v.pipe(
      positiveWholeNumber('a whole number'),
      refuseStart((n: number) => n <= 10, 'is above 10'),
    ),
    default: 4,
    invalid: 'fall back',
  },
  COUNT: { value: positiveWholeNumber('a count'), default: 2, invalid: 'refuse' },
  QUEUE: { value: text, default: '', invalid: 'fall back', unsetWarning: 'QUEUE is not set' },
});

function refusal(env: Record<string, string>): ConfigError {
  try {
    readEnvironment(schema, { TABLE: 't', ...env });
  } catch (err) {
    return err as ConfigError;
  }
  throw new Error('nothing refused');
}

describe('readEnvironment', () => {
  test('values trimmed and parsed; unset or blank takes the default; an unset warning is given', () => {
    expect(readEnvironment(schema, { TABLE: ' t ', SIZE: ' 7 ', COUNT: '', QUEUE: 'q' })).toEqual({
      settings: { TABLE: 't', SIZE: 7, COUNT: 2, QUEUE: 'q' },
      warnings: [],
    });
    expect(readEnvironment(schema, { TABLE: 't' }).warnings).toEqual(['QUEUE is not set']);
  });

  test('a bad value of a fall-back variable takes the default, with a warning naming the value', () => {
    const { settings, warnings } = readEnvironment(schema, { TABLE: 't', SIZE: ' x ', QUEUE: 'q' });
    expect(settings.SIZE).toBe(4);
    expect(warnings).toEqual(['SIZE=" x " is not a whole number; using 4']);
  });

  test('a bad value of a refusing variable, a required one unset, and a refuseStart check stop the function', () => {
    const bad = refusal({ COUNT: '0' });
    expect(bad).toBeInstanceOf(ConfigError);
    expect(bad.name).toBe('WorkerConfigError');
    expect(bad.message).toBe('COUNT="0" is not a count: the worker does not start.');
    expect(() => readEnvironment(schema, { TABLE: ' ' })).toThrow('TABLE is not set: the worker does not start.');
    // The check refuses even on a fall-back variable: the value is well formed but unsafe.
    expect(refusal({ SIZE: ' 11' }).message).toBe('SIZE=" 11" is above 10: the worker does not start.');
  });
});
