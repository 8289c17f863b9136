// The callback bodies the platform sends (docs/platform-callbacks.md §2), built field by field in the
// order its sample bodies (test/fixtures/) have: a body is sent as serialised, so its key order is part of
// what is sent. Values are taken as given, so that a generator can also send what the platform sometimes
// does (numeric strings, "" for an absent value); these builders only fix the shape.
import type { Service } from './services.ts';
import { type FileStateFailure, FILE_STATE_OK, fileStateCode, type Outcome, SUCCESS } from './failures.ts';

export type Body = Record<string, unknown>;

/** The fields every callback of one recording task repeats (docs/platform-callbacks.md §2.1). */
export interface RecordingTask {
  appKey: string;
  recordId: string;
  roomId: string;
  sessionId: string;
  /** "" in the mix modes. */
  userId: string;
  mode: number;
  extra: string;
}

/** The fields every callback of one screenshot task repeats (docs/platform-callbacks.md §2.8). */
export interface ScreenshotTask {
  appKey: string;
  sessionId: string;
  roomId: string;
  imageId: string;
  extra: string;
}

/** Where an uploaded file is found in the (example) third-party storage. */
function storageUrl(service: Service, fileName: string): string {
  return `https://storage.example.com/${service === 'recording' ? 'recordings' : 'shots'}/${fileName}`;
}

function recordingHead(task: RecordingTask, type: 1 | 2 | 3 | 4, timestamp: number, outcome: Outcome): Body {
  const { appKey, recordId, roomId, sessionId, userId, mode, extra } = task;
  return {
    timestamp,
    type,
    appKey,
    recordId,
    roomId,
    sessionId,
    userId,
    mode,
    extra,
    code: outcome.code,
    errorMessage: outcome.message,
  };
}

/** Recording start (docs/platform-callbacks.md §2.3): the configuration and the first file's name. */
export function recordingStart(
  task: RecordingTask,
  timestamp: number,
  outcome: Outcome,
  config: Body,
  output: { fileName: string; audioSample: unknown; videoResoulation: unknown },
): Body {
  return { ...recordingHead(task, 1, timestamp, outcome), config, output };
}

/** A slice (2) or the end (3) of a recording, each closing one file (docs/platform-callbacks.md §2.4, §2.5). */
export function recordingFileClosed(
  task: RecordingTask,
  type: 2 | 3,
  timestamp: number,
  outcome: Outcome,
  output: { fileName: string; fileSize: unknown },
): Body {
  return { ...recordingHead(task, type, timestamp, outcome), output };
}

/** A recording file's upload attempt (docs/platform-callbacks.md §2.6): a URL when it succeeded, "" when it failed. */
export function recordingUpload(task: RecordingTask, timestamp: number, outcome: Outcome, fileName: string): Body {
  const fileUrl = outcome.code === SUCCESS.code ? storageUrl('recording', fileName) : '';
  return { ...recordingHead(task, 4, timestamp, outcome), output: { fileName, fileUrl } };
}

function screenshotHead(task: ScreenshotTask, type: 1 | 3 | 4, timestamp: number, outcome: Outcome): Body {
  const { appKey, sessionId, roomId, imageId, extra } = task;
  return {
    timestamp,
    type,
    appKey,
    sessionId,
    roomId,
    imageId,
    extra,
    code: outcome.code,
    errorMessage: outcome.message,
  };
}

/** Screenshot start (1) or end (3), both with the task's configuration (docs/platform-callbacks.md §2.9). */
export function screenshotStartOrEnd(
  task: ScreenshotTask,
  type: 1 | 3,
  timestamp: number,
  outcome: Outcome,
  config: Body,
): Body {
  return { ...screenshotHead(task, type, timestamp, outcome), config };
}

/**
 * An image's upload attempt (docs/platform-callbacks.md §2.10): a success when `failure` is null. The code
 * follows the fileState and the errorMessage is the fileMsg (§7, rule 2).
 */
export function screenshotUpload(
  task: ScreenshotTask,
  timestamp: number,
  fileName: string,
  failure: FileStateFailure | null,
): Body {
  const { state, message } = failure ?? { state: FILE_STATE_OK, message: SUCCESS.message };
  const fileUrl = failure ? '' : storageUrl('screenshot', fileName);
  return {
    ...screenshotHead(task, 4, timestamp, { code: fileStateCode(state), message }),
    tag: '',
    output: { fileName, fileUrl, fileState: state, fileMsg: message },
  };
}
