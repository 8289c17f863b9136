// The recording modes (docs/platform-callbacks.md §2.2): what each records, and which of the three file-name
// patterns its files follow (§2.7). In a mix mode the callbacks carry an empty userId (§2.1).

/** Which file-name pattern a mode's files follow; every kind but `mix` is one user's recording. */
export type ModeKind = 'single' | 'mix' | 'single-user-mix';

export interface RecordingMode {
  mode: number;
  /** The name `callbacks tasks get` prints beside the number (`modeName` in the task's JSON). */
  name: string;
  kind: ModeKind;
  audio: boolean;
  video: boolean;
}

export const RECORDING_MODES: readonly RecordingMode[] = [
  { mode: 0, name: 'single-audio-video', kind: 'single', audio: true, video: true },
  { mode: 1, name: 'single-video', kind: 'single', audio: false, video: true },
  { mode: 2, name: 'single-audio', kind: 'single', audio: true, video: false },
  { mode: 3, name: 'mix-audio-video', kind: 'mix', audio: true, video: true },
  { mode: 4, name: 'mix-video', kind: 'mix', audio: false, video: true },
  { mode: 5, name: 'mix-audio', kind: 'mix', audio: true, video: false },
  { mode: 6, name: 'single-user-mix-audio-video', kind: 'single-user-mix', audio: true, video: true },
];

/** The mode with this number; undefined for a number the platform does not document. */
function recordingMode(mode: number): RecordingMode | undefined {
  return RECORDING_MODES.find((m) => m.mode === mode);
}

/** The mode's name, or null when there is no mode or it is not documented. */
export function modeName(mode: number | null): string | null {
  return mode === null ? null : (recordingMode(mode)?.name ?? null);
}

/** A documented mode, or an error naming the number (for generators, which only produce documented ones). */
export function knownMode(mode: number): RecordingMode {
  const found = recordingMode(mode);
  if (!found) throw new Error(`recording mode ${mode} is not one of 0..6`);
  return found;
}
