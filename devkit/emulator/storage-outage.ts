// A storage outage of a whole run, laid over its tasks' planned uploads (`callbacks emulate --storage-outage`).
import { UPLOAD_RETRY_MS } from '../../lib/platform/delivery.ts';
import {
  type PlannedEvent,
  RECORDING_UPLOAD_FAILURE,
  REPORTED_GIVE_UP_RETRIES,
  screenshotUploadFailure,
  type TaskPlan,
} from './plans.ts';

/** A storage outage of the whole run (platform time from the run's start): every upload within it fails. */
export interface StorageOutage {
  startMs: number;
  lengthMs: number;
}

/**
 * The uploads of a task (started at `plan.offset` in the run) that fall within a storage outage of the whole run: a
 * successful upload whose attempt is within it fails instead, every 10 s as the platform retries, until the outage
 * ends, then succeeds (a file given up or already failing is left as planned). As for a give-up, the first
 * REPORTED_GIVE_UP_RETRIES failures and the last one are reported, not the 240 of a 40-minute outage. Event times
 * stay distinct.
 */
export function applyStorageOutage(plan: TaskPlan, outage: StorageOutage): void {
  const start = outage.startMs - plan.offset;
  const end = start + outage.lengthMs;
  const taken = new Set(plan.events.map((ev) => ev.rel));
  const free = (t: number) => {
    let at = t;
    while (taken.has(at)) at += 1;
    taken.add(at);
    return at;
  };
  const failure = plan.service === 'recording' ? RECORDING_UPLOAD_FAILURE : screenshotUploadFailure();
  const out: PlannedEvent[] = [];
  for (const ev of plan.events) {
    if (ev.type !== 4 || !ev.ok || ev.rel < start || ev.rel >= end) {
      out.push(ev);
      continue;
    }
    taken.delete(ev.rel);
    const retries = Math.ceil((end - ev.rel) / UPLOAD_RETRY_MS);
    for (let k = 0; k < retries; k++) {
      if (k >= REPORTED_GIVE_UP_RETRIES && k < retries - 1) continue;
      out.push({ ...ev, ...failure, rel: free(ev.rel + k * UPLOAD_RETRY_MS), ok: false });
    }
    out.push({ ...ev, rel: free(ev.rel + retries * UPLOAD_RETRY_MS), ok: true });
  }
  plan.events = out.sort((a, b) => a.rel - b.rel);
}
