// The only validation on the ingest path: enough to route, sign-check and log a callback, nothing more.
// Hand-written rather than a schema because it runs on every request before the 200 and must stay cheap;
// the worker does the full parse. Unknown fields and missing optional fields are never looked at.
import { fieldWithRefusedCharacter, hasRefusedCharacter, REFUSED_CHARACTERS_IN_WORDS } from './names.ts';
import { numberLike } from './numeric-strings.ts';
import { CALLBACK_TYPES_OF, ID_FIELD_OF, isCallbackTypeOf, type Service } from '../platform/services.ts';

export type MinimalCheckResult =
  | { ok: true; type: number; appKey: string; id: string }
  | { ok: false; code: 'invalid_body'; message: string };

function nonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value.trim() !== '';
}

function fail(message: string): MinimalCheckResult {
  return { ok: false, code: 'invalid_body', message };
}

export function minimalCheck(service: Service, body: unknown): MinimalCheckResult {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return fail('The body must be a JSON object.');
  }
  const fields = body as Record<string, unknown>;

  const allowed = CALLBACK_TYPES_OF[service];
  if (fields.type === undefined || fields.type === null) {
    return fail(`Field "type" is missing; ${service} callbacks use ${allowed.join(', ')}.`);
  }
  const type = numberLike(fields.type);
  if (!isCallbackTypeOf(service, type)) {
    return fail(`Field "type" must be one of ${allowed.join(', ')} for ${service} callbacks.`);
  }

  if (!nonEmptyString(fields.appKey)) {
    return fail(
      fields.appKey === undefined ? 'Field "appKey" is missing.' : 'Field "appKey" must be a non-empty string.',
    );
  }

  const name = ID_FIELD_OF[service];
  const id = fields[name];
  if (!nonEmptyString(id)) {
    return fail(id === undefined ? `Field "${name}" is missing.` : `Field "${name}" must be a non-empty string.`);
  }

  const refused = fieldWithRefusedCharacter(service, fields);
  if (refused) return fail(`Field "${refused}" ${REFUSED_CHARACTERS_IN_WORDS}.`);

  return { ok: true, type, appKey: fields.appKey, id };
}

/**
 * The appKey and task id a body names, whatever else is wrong with it: a callback that fails the full parse
 * is still filed under its task, so that `callbacks tasks get` can point at it. A name holding a refused
 * character names nothing.
 */
export function namedTask(service: Service, body: unknown): { appKey: string | null; id: string | null } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { appKey: null, id: null };
  const fields = body as Record<string, unknown>;
  const name = (value: unknown) => (nonEmptyString(value) && !hasRefusedCharacter(value) ? value : null);
  return { appKey: name(fields.appKey), id: name(fields[ID_FIELD_OF[service]]) };
}
