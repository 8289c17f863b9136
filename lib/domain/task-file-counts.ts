// A task's files by upload state, as the task JSON (`counts`) and a task event (`task.files`) give them
// (docs/contract.md §4, counts): made from a task's summary, whose counts are its header's.

export interface TaskFileCounts {
  total: number;
  pending: number;
  uploaded: number;
  failed: number;
  /** The failed files that are lost: a part of `failed`. */
  lost: number;
}

/** The file counts of a summary (TaskSummary), or of a header's counts named as a summary names them. */
export function taskFileCounts(s: {
  fileCount: number;
  pendingFiles: number;
  failedFiles: number;
  lostFiles: number;
}): TaskFileCounts {
  return {
    total: s.fileCount,
    pending: s.pendingFiles,
    uploaded: s.fileCount - s.pendingFiles - s.failedFiles,
    failed: s.failedFiles,
    lost: s.lostFiles,
  };
}
