import { clip, errorSentence } from './text.ts';

test('clip: short text untouched; long text cut, with its length when asked', () => {
  expect(clip('abc', 3)).toBe('abc');
  expect(clip('abcdef', 3)).toBe('abc…');
  expect(clip('x'.repeat(100), 10, { showLength: true })).toBe(`${'x'.repeat(10)}… (100 characters)`);
});

test('errorSentence: the name when it tells something, the first line, clipped; anything thrown', () => {
  expect(errorSentence(new TypeError('boom'))).toBe('TypeError: boom');
  expect(errorSentence(new Error('plain'))).toBe('plain');
  expect(errorSentence(Object.assign(new Error('refused\n  at x'), { name: 'ValidationException' }))).toBe(
    'ValidationException: refused',
  );
  // From another realm: not an Error instance, same shape.
  expect(errorSentence({ name: 'TimeoutError', message: 'too slow' })).toBe('TimeoutError: too slow');
  expect(errorSentence('a string')).toBe('a string');
  expect(errorSentence(undefined)).toBe('unknown error');
  expect(errorSentence(42)).toBe('42');
  expect(errorSentence({ code: 1 })).toBe('unknown error');
  expect(errorSentence(new Error('y'.repeat(400)))).toBe(`${'y'.repeat(300)}…`);
  expect(errorSentence(new Error('y'.repeat(400)), { max: 20 })).toBe(`${'y'.repeat(20)}…`);
});

test('errorSentence: the bare message, every line, for errors phrased for the reader', () => {
  const phrased = Object.assign(new Error('no task rec-1\nsee --help'), { name: 'CliError' });
  expect(errorSentence(phrased)).toBe('CliError: no task rec-1');
  expect(errorSentence(phrased, { bare: true, allLines: true })).toBe('no task rec-1\nsee --help');
});
