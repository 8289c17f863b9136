// What callbacks report as their outcome: code 200 with a success text, or a failure
// (docs/platform-callbacks.md §7). The platform documents no failure codes but the screenshot upload
// states, so these catalogues hold the values of its sample bodies (test/fixtures/) and a few plausible
// others, for the generators of callbacks. The receiver's rules only ever ask whether a code is 200 and a
// fileState is FILE_STATE_OK.
import type { Service } from './services.ts';

export interface Outcome {
  code: number;
  message: string;
}

/** Code 200 means normal, errorMessage is then a success text (docs/platform-callbacks.md §7, rule 1). */
export const SUCCESS: Outcome = { code: 200, message: 'success' };

/** The fileState of a screenshot upload that succeeded (docs/platform-callbacks.md §2.10; §7, rule 2). */
export const FILE_STATE_OK = '10000';

export interface FileStateFailure {
  /** output.fileState: the callback's code is this number (docs/platform-callbacks.md §7, rule 2). */
  state: string;
  /** output.fileMsg, also the callback's errorMessage. */
  message: string;
}

/** A task that could not start, as each service words it. An end that follows repeats it. */
export const START_FAILURES: Readonly<Record<Service, readonly Outcome[]>> = {
  recording: [
    { code: 500, message: 'recording failed to start: internal error' },
    { code: 403, message: 'recording service is not enabled for this application' },
  ],
  screenshot: [
    { code: 500, message: 'screenshot failed to start: internal error' },
    { code: 403, message: 'screenshot service is not enabled for this application' },
  ],
};

/** Failures a start or an end of either service may report. */
export const TASK_FAILURES: readonly Outcome[] = [
  { code: 400, message: 'invalid parameters' },
  { code: 500, message: 'internal error' },
  { code: 1004, message: 'room not found' },
];

/** A recording upload that failed (docs/platform-callbacks.md §7, rule 3). The first is the sample body's. */
export const RECORDING_UPLOAD_FAILURES: readonly Outcome[] = [
  { code: 500, message: 'upload to storage failed' },
  { code: 503, message: 'storage unavailable' },
  { code: 403, message: 'storage access denied' },
];

/** A screenshot upload that failed. The first is the platform's sample body's. */
export const SCREENSHOT_UPLOAD_FAILURES: readonly FileStateFailure[] = [
  { state: '10002', message: 'storage unreachable' },
  { state: '10001', message: 'storage auth failed' },
  { state: '10003', message: 'bucket not found' },
];

/**
 * A screenshot upload's code: 200 when its fileState is FILE_STATE_OK, else the fileState
 * (docs/platform-callbacks.md §7, rule 2).
 */
export function fileStateCode(state: string): number {
  return state === FILE_STATE_OK ? SUCCESS.code : Number(state);
}
