import { CLIP_MARK, HEADER_CONFIG_BYTES, HEADER_TEXT_BYTES, clipConfig, clipText } from './header-text.ts';

test('a text within the limit is kept; a longer one is cut at a whole character and marked', () => {
  const fits = 'a'.repeat(HEADER_TEXT_BYTES);
  expect(clipText(fits)).toBe(fits);
  expect(clipText(null)).toBeNull();
  expect(clipText(`${fits}b`)).toBe(`${fits}${CLIP_MARK}`);
  // Two-byte characters: the one that would straddle the limit is left out whole.
  const wide = `a${'ü'.repeat(HEADER_TEXT_BYTES)}`;
  expect(clipText(wide)).toBe(`a${'ü'.repeat((HEADER_TEXT_BYTES - 1) / 2 - 0.5)}${CLIP_MARK}`);
  // Clipping is the same whenever it is done: a clipped text is clipped again to itself.
  expect(clipText(clipText(wide))).toBe(clipText(wide));
});

test('a config within the limit is kept whole; a longer one is replaced by a marker of its length', () => {
  const kept = { a: '' };
  kept.a = 'v'.repeat(HEADER_CONFIG_BYTES - JSON.stringify(kept).length);
  expect(clipConfig(kept)).toBe(kept);
  const long = { a: `${kept.a}v` };
  expect(clipConfig(long)).toEqual({ clipped: true, bytes: HEADER_CONFIG_BYTES + 1 });
});
