// Long values a callback may carry are kept short in its task's header, so that the header, written at every
// count update, stays under the 1 KB a write unit covers: a message or an `extra` over HEADER_TEXT_BYTES of
// UTF-8 is cut there (at a character's boundary) and ends with CLIP_MARK; a config over HEADER_CONFIG_BYTES of
// JSON is replaced by a marker. The whole value stays in the raw callback it came from (`GET
// /tasks/{id}/events`). Clipped where a callback's facts enter the task, so that the task, its events and every
// republication of them say the same text.

/** UTF-8 bytes of a message or an `extra` a task keeps, its mark aside. */
export const HEADER_TEXT_BYTES = 128;
/** What ends a clipped text. */
export const CLIP_MARK = '…';
/** UTF-8 bytes of JSON of a config a task keeps whole. */
export const HEADER_CONFIG_BYTES = 256;

const utf8 = new TextEncoder();

/** The text, or its longest start of at most HEADER_TEXT_BYTES that ends on a character, and the mark. */
export function clipText(text: string | null): string | null {
  if (text === null || utf8.encode(text).length <= HEADER_TEXT_BYTES) return text;
  let kept = '';
  let bytes = 0;
  for (const point of text) {
    bytes += utf8.encode(point).length;
    if (bytes > HEADER_TEXT_BYTES) break;
    kept += point;
  }
  return `${kept}${CLIP_MARK}`;
}

/** The config, or, when its JSON is too long to keep, a marker that says how long it was. */
export function clipConfig(config: Record<string, unknown>): Record<string, unknown> {
  const bytes = utf8.encode(JSON.stringify(config)).length;
  return bytes <= HEADER_CONFIG_BYTES ? config : { clipped: true, bytes };
}
