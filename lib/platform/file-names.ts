// How the platform names the files it records (docs/platform-callbacks.md §2.7) and captures (§2.11).
// Informational: a receiver keys files by the names it is sent and never parses them; the generators of
// callbacks use these so that what they send looks like what the platform sends.
import { knownMode } from './modes.ts';

export interface RecordingFileNameParts {
  sessionId: string;
  roomId: string;
  /** Unused in the mix modes, whose files are the room's. */
  userId: string;
  /** Unused unless the mode is a single mode: the tag of the recorded stream. */
  streamTag: string;
  mode: number;
  /** When the file starts, epoch milliseconds. */
  timestamp: number;
  /** The file's format, without a dot: mp4, flv, aac, mp3. */
  format: string;
}

export function recordingFileName(p: RecordingFileNameParts): string {
  switch (knownMode(p.mode).kind) {
    case 'mix':
      return `${p.sessionId}_${p.roomId}_${p.timestamp}.${p.format}`;
    case 'single-user-mix':
      return `${p.sessionId}_${p.roomId}_${p.userId}_${p.timestamp}.${p.format}`;
    case 'single':
      return `${p.sessionId}_${p.roomId}_${p.userId}_${p.streamTag}_${p.timestamp}.${p.format}`;
  }
}

export interface ScreenshotFileNameParts {
  sessionId: string;
  roomId: string;
  userId: string;
  /** The id of the user's published video stream. */
  streamId: string;
  /** When the image was taken, epoch milliseconds. */
  timestamp: number;
}

export function screenshotFileName(p: ScreenshotFileNameParts): string {
  return `${p.sessionId}_${p.roomId}_${p.userId}_${p.streamId}_${p.timestamp}.jpg`;
}
