// valibot schemas for the seven callback kinds (recording 1/2/3/4, screenshot 1/3/4).
// Lenient where the platform is inconsistent: numbers may arrive as numeric strings, "" means absent for
// userId, audioSample and videoResoulation, and unknown fields are kept (loose objects). Strict where a
// callback could not be applied otherwise: `type` valid for the service, `appKey`, the task id, a
// timestamp, a code, and the file name of the events that carry a file.
import * as v from 'valibot';
import { clip } from '../text.ts';
import { numericString } from './numeric-strings.ts';
import type { Service } from '../platform/services.ts';

/** A JSON number, or a string holding one ("30"): both occur in the platform's own samples. */
const NumberLike = v.union(
  [
    v.pipe(v.number(), v.finite()),
    v.pipe(
      v.string(),
      v.regex(numericString),
      v.transform((s) => Number(s.trim())),
    ),
  ],
  'must be a number or a numeric string',
);

const NonEmptyString = v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'));

/** "" is the platform's way of saying "absent" for a few fields. */
const emptyAsNull = <S extends v.GenericSchema>(schema: S) =>
  v.optional(
    v.union([
      v.pipe(
        v.literal(''),
        v.transform(() => null),
      ),
      v.null(),
      schema,
    ]),
    null,
  );

const optionalString = v.optional(v.nullable(v.string('must be a string')), null);

/** An object of the body: valibot's object schemas take an array too, which no callback field is. */
const jsonObject = <E extends v.ObjectEntries>(entries: E) =>
  v.pipe(
    v.custom<unknown>((value) => !Array.isArray(value), 'expected Object, got Array'),
    v.looseObject(entries),
  );

/** Config values are kept as received, except numeric strings, which become numbers (docs/contract.md §4). */
const Config = v.pipe(
  jsonObject({}),
  v.transform((config) => {
    const out: Record<string, unknown> = {};
    for (const [k, value] of Object.entries(config)) {
      out[k] = typeof value === 'string' && numericString.test(value) ? Number(value.trim()) : value;
    }
    return out;
  }),
);

/**
 * Epoch milliseconds. Whole and non-negative, because task state orders events by a rank string built
 * from it (`rankOf`): a fractional or negative timestamp would order differently there than numerically.
 */
const Timestamp = v.pipe(
  NumberLike,
  v.safeInteger('must be whole milliseconds'),
  v.minValue(0, 'must not be negative'),
);

const commonFields = {
  timestamp: Timestamp,
  appKey: NonEmptyString,
  roomId: optionalString,
  sessionId: optionalString,
  extra: optionalString,
  code: NumberLike,
  errorMessage: optionalString,
};

const recordingCommon = {
  ...commonFields,
  recordId: NonEmptyString,
  userId: emptyAsNull(v.string()),
  mode: v.optional(v.nullable(v.pipe(NumberLike, v.integer(), v.minValue(0), v.maxValue(6))), null),
};

const screenshotCommon = {
  ...commonFields,
  imageId: NonEmptyString,
};

const typeIs = (n: number) =>
  v.pipe(
    NumberLike,
    v.check((t) => t === n, `must be ${n}`),
  );

const RecordingStartOutput = v.optional(
  jsonObject({
    fileName: optionalString,
    audioSample: emptyAsNull(NumberLike),
    videoResoulation: emptyAsNull(v.string()),
  }),
  {},
);

const FileOutput = jsonObject({
  fileName: NonEmptyString,
  fileSize: v.optional(v.nullable(NumberLike), null),
});

const RecordingUploadOutput = jsonObject({
  fileName: NonEmptyString,
  fileUrl: emptyAsNull(v.string()),
});

const ScreenshotUploadOutput = jsonObject({
  fileName: NonEmptyString,
  fileUrl: emptyAsNull(v.string()),
  fileState: v.optional(
    v.nullable(v.union([v.string(), v.pipe(v.number(), v.transform(String))], 'must be a string')),
    null,
  ),
  fileMsg: optionalString,
});

export const RecordingStart = v.looseObject({
  ...recordingCommon,
  type: typeIs(1),
  config: v.optional(Config, {}),
  output: RecordingStartOutput,
});
const RecordingSlice = v.looseObject({ ...recordingCommon, type: typeIs(2), output: FileOutput });
const RecordingEnd = v.looseObject({ ...recordingCommon, type: typeIs(3), output: FileOutput });
const RecordingUpload = v.looseObject({ ...recordingCommon, type: typeIs(4), output: RecordingUploadOutput });

const ScreenshotStart = v.looseObject({ ...screenshotCommon, type: typeIs(1), config: v.optional(Config, {}) });
const ScreenshotEnd = v.looseObject({ ...screenshotCommon, type: typeIs(3), config: v.optional(Config, {}) });
const ScreenshotUpload = v.looseObject({
  ...screenshotCommon,
  type: typeIs(4),
  tag: optionalString,
  output: ScreenshotUploadOutput,
});

export const schemasByService: Record<Service, Record<number, v.GenericSchema>> = {
  recording: { 1: RecordingStart, 2: RecordingSlice, 3: RecordingEnd, 4: RecordingUpload },
  screenshot: { 1: ScreenshotStart, 3: ScreenshotEnd, 4: ScreenshotUpload },
};

/** Keeps a quoted value short: these messages go to logs and the quarantine, not the whole body. */
export const quoteValue = (text: string, max = 60): string => clip(text, max, { showLength: true });

/** Readable, field-named messages for a failed parse: `output.fileName: must not be empty`. */
export function describeIssues(issues: readonly v.BaseIssue<unknown>[]): string[] {
  return issues.map((issue) => {
    const path = v.getDotPath(issue);
    const message = !issue.message.startsWith('Invalid')
      ? issue.message
      : issue.received === 'undefined'
        ? 'is missing'
        : issue.expected
          ? `expected ${issue.expected}, got ${quoteValue(issue.received)}`
          : issue.message;
    return `${path ?? '(body)'}: ${quoteValue(message, 200)}`;
  });
}
