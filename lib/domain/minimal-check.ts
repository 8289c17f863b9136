// The only validation on the ingest path: enough to route, sign-check and log a callback, nothing more.
// Hand-written rather than a schema because it runs on every request before the 200 and must stay cheap;
// the worker does the full parse. Unknown fields and missing optional fields are never looked at.
import type { Service } from '../queue-message.ts';

export type MinimalCheckResult =
  | { ok: true; type: number; appKey: string; id: string }
  | { ok: false; code: 'invalid_body'; message: string };

/** Event types each service sends (the screenshot service does not use 2). */
export const validTypes: Readonly<Record<Service, readonly number[]>> = {
  recording: [1, 2, 3, 4],
  screenshot: [1, 3, 4],
};

/** The field that names a task, per service. */
export const idField: Readonly<Record<Service, 'recordId' | 'imageId'>> = {
  recording: 'recordId',
  screenshot: 'imageId',
};

// The same numeric strings the worker's full parse accepts ("4", " 4 ", "4.0").
const numericString = /^\s*-?\d+(\.\d+)?\s*$/;

/** A number, or a string holding one (the platform sends some numbers as strings). */
function asNumber(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  if (typeof value === 'string' && numericString.test(value)) return Number(value.trim());
  return undefined;
}

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

  const allowed = validTypes[service];
  if (fields.type === undefined || fields.type === null) {
    return fail(`Field "type" is missing; ${service} callbacks use ${allowed.join(', ')}.`);
  }
  const type = asNumber(fields.type);
  if (type === undefined || !allowed.includes(type)) {
    return fail(`Field "type" must be one of ${allowed.join(', ')} for ${service} callbacks.`);
  }

  if (!nonEmptyString(fields.appKey)) {
    return fail(
      fields.appKey === undefined ? 'Field "appKey" is missing.' : 'Field "appKey" must be a non-empty string.',
    );
  }

  const name = idField[service];
  const id = fields[name];
  if (!nonEmptyString(id)) {
    return fail(id === undefined ? `Field "${name}" is missing.` : `Field "${name}" must be a non-empty string.`);
  }

  return { ok: true, type, appKey: fields.appKey, id };
}

/**
 * The appKey and task id a body names, whatever else is wrong with it: a callback that fails the full parse
 * is still filed under its task, so that `callbacks tasks get` can point at it.
 */
export function namedTask(service: Service, body: unknown): { appKey: string | null; id: string | null } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { appKey: null, id: null };
  const fields = body as Record<string, unknown>;
  const id = fields[idField[service]];
  return {
    appKey: nonEmptyString(fields.appKey) ? fields.appKey : null,
    id: nonEmptyString(id) ? id : null,
  };
}
