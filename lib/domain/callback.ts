// The full parse the worker uses: one of the seven schemas and the rule on names, then a normalised
// `Callback` that the state rules read. The raw body is kept untouched beside it.
import * as v from 'valibot';
import { FILE_STATE_OK } from '../platform/failures.ts';
import { fieldWithRefusedCharacter, REFUSED_CHARACTERS_IN_WORDS } from './names.ts';
import { integerString, numberLike } from './numeric-strings.ts';
import { type CallbackType, CALLBACK_TYPES_OF, isCallbackTypeOf, type Service } from '../platform/services.ts';
import { quoteValue, schemasByService, describeIssues } from './schemas.ts';
import { eventKey } from './canonical.ts';

export interface UploadOutcome {
  fileName: string;
  ok: boolean;
  code: number;
  message: string | null;
  url: string | null;
}

export interface Callback {
  service: Service;
  type: CallbackType;
  /** recordId or imageId. */
  id: string;
  timestamp: number;
  appKey: string;
  roomId: string | null;
  sessionId: string | null;
  userId: string | null;
  mode: number | null;
  extra: string | null;
  /** The status code; for a screenshot upload, the one its fileState implies (docs/platform-callbacks.md §7.2). */
  code: number;
  /** errorMessage; for a screenshot upload, fileMsg when present. */
  message: string | null;
  /** Start (and screenshot end) configuration, numeric strings turned into numbers. */
  config: Record<string, unknown> | null;
  /** The recording start's cached file name: kept in the task, not as a file. */
  startFileName: string | null;
  /** A file reported by a slice (2) or end (3) callback. */
  file: { fileName: string; size: number | null } | null;
  /** The outcome of an upload callback (4). */
  upload: UploadOutcome | null;
  /** Event identity: equal for bodies equal as JSON. */
  key: string;
  /** The body as received (parsed JSON), unknown fields included. */
  body: Record<string, unknown>;
}

export type ParseResult = { ok: true; callback: Callback } | { ok: false; errors: string[] };

/** Parses a callback body (a JSON string or an already parsed value) for the given service. */
export function parseCallback(service: Service, input: string | unknown): ParseResult {
  let body: unknown = input;
  if (typeof input === 'string') {
    try {
      body = JSON.parse(input);
    } catch {
      return { ok: false, errors: ['(body): not valid JSON'] };
    }
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    return { ok: false, errors: ['(body): must be a JSON object'] };
  }
  const raw = body as Record<string, unknown>;
  const type = numberLike(raw.type);
  if (!isCallbackTypeOf(service, type)) {
    return {
      ok: false,
      errors: [
        `type: must be one of ${CALLBACK_TYPES_OF[service].join(', ')} for ${service} callbacks, ` +
          `got ${quoteValue(JSON.stringify(raw.type) ?? 'nothing')}`,
      ],
    };
  }
  const schema = schemasByService[service][type]!;
  const parsed = v.safeParse(schema, raw);
  // The ingest's rule on names, whatever the type (docs/contract.md §1): what it refuses never parses.
  const refused = fieldWithRefusedCharacter(service, raw);
  if (!parsed.success || refused) {
    const issues = parsed.success ? [] : describeIssues(parsed.issues);
    return { ok: false, errors: refused ? [`${refused}: ${REFUSED_CHARACTERS_IN_WORDS}`, ...issues] : issues };
  }
  return { ok: true, callback: normalise(service, type, parsed.output as Record<string, any>, raw) };
}

function normalise(
  service: Service,
  type: CallbackType,
  b: Record<string, any>,
  raw: Record<string, unknown>,
): Callback {
  const recording = service === 'recording';
  const cb: Callback = {
    service,
    type,
    id: recording ? b.recordId : b.imageId,
    timestamp: b.timestamp,
    appKey: b.appKey,
    roomId: b.roomId,
    sessionId: b.sessionId,
    userId: recording ? b.userId : null,
    mode: recording ? b.mode : null,
    extra: b.extra,
    code: b.code,
    message: b.errorMessage,
    config: null,
    startFileName: null,
    file: null,
    upload: null,
    key: eventKey(raw),
    body: raw,
  };
  if (type === 1 || (type === 3 && !recording)) cb.config = b.config ?? {};
  if (type === 1 && recording) cb.startFileName = b.output?.fileName || null;
  if ((type === 2 || type === 3) && recording) {
    cb.file = { fileName: b.output.fileName, size: b.output.fileSize ?? null };
  }
  if (type === 4) {
    if (recording) cb.upload = recordingUpload(b);
    else {
      cb.upload = screenshotUpload(b);
      // The fileState decides, also for the callback's own code: lastError then agrees with the file's
      // outcome even when a body's code contradicts its fileState.
      cb.code = cb.upload.code;
      cb.message = cb.upload.message;
    }
  }
  return cb;
}

/** A recording upload's outcome: its code says. */
function recordingUpload(b: Record<string, any>): UploadOutcome {
  const out = b.output;
  return {
    fileName: out.fileName,
    ok: b.code === 200,
    code: b.code,
    message: b.errorMessage,
    url: out.fileUrl,
  };
}

/**
 * A screenshot upload's outcome: fileState "10000" is success; otherwise the code is the fileState as a number
 * (docs/platform-callbacks.md §7). Without a fileState, the callback's own code decides.
 */
function screenshotUpload(b: Record<string, any>): UploadOutcome {
  const out = b.output;
  const state: string | null = out.fileState;
  const ok = state !== null ? state.trim() === FILE_STATE_OK : b.code === 200;
  const stateCode = state !== null && integerString.test(state) ? Number(state) : b.code;
  return {
    fileName: out.fileName,
    ok,
    code: ok ? 200 : stateCode,
    message: out.fileMsg ?? b.errorMessage,
    url: out.fileUrl,
  };
}
