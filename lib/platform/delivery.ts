// How the platform delivers files to a storage that is failing: docs/platform-callbacks.md §6, delivery
// rule 2, and §8.

/** A file whose upload failed is tried again every 10 s... */
export const UPLOAD_RETRY_MS = 10_000;
/** ...for at most 24 hours after its first failure; then the platform deletes it. */
export const FILE_HOLD_MS = 24 * 60 * 60 * 1000;
