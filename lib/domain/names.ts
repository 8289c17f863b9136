// The names a callback gives (appKey, task id, room, session, user, file) become parts of table keys, of the
// worker's group keys, of log lines and of what the CLI prints. A control character there can join two
// names into one key or rewrite what an operator reads, and no name the platform hands out holds one, so
// the ingest refuses such a body (docs/contract.md §1) and the worker's full parse keeps it aside.
import type { Service } from '../platform/services.ts';
import { ID_FIELD_OF } from '../platform/services.ts';

/**
 * C0 controls (U+0000–U+001F, tab and line breaks included), DEL, C1 controls (U+0080–U+009F), and the
 * bidirectional embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069), which reorder how the
 * text around them is displayed. Invisible but harmless characters (zero-width space, BOM) are left alone.
 */
const refusedInNames = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/u;

/** Whether a name holds a character refused in names. */
export function hasRefusedCharacter(name: string): boolean {
  return refusedInNames.test(name);
}

/** What the refusal says about a field, after its name. */
export const REFUSED_CHARACTERS_IN_WORDS = 'must not contain control or bidirectional formatting characters';

/** The name fields of a body of each service, as dot paths (`output.fileName`). */
export const NAME_FIELDS_OF: Record<Service, readonly string[]> = {
  recording: ['appKey', ID_FIELD_OF.recording, 'roomId', 'sessionId', 'userId', 'output.fileName'],
  screenshot: ['appKey', ID_FIELD_OF.screenshot, 'roomId', 'sessionId', 'output.fileName'],
};

/** The first name field of a body that is a string holding a refused character, or null. */
export function fieldWithRefusedCharacter(service: Service, body: Record<string, unknown>): string | null {
  for (const path of NAME_FIELDS_OF[service]) {
    let value: unknown = body;
    for (const step of path.split('.')) value = ownField(value, step);
    if (typeof value === 'string' && hasRefusedCharacter(value)) return path;
  }
  return null;
}

/** A field of a JSON object (own properties only: `__proto__` is a key like any other), else undefined. */
function ownField(value: unknown, name: string): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  return Object.getOwnPropertyDescriptor(value, name)?.value;
}
