// Storage incidents (docs/verification.md, "Storage incidents"): the verifier keeps each storage's failed uploads
// as their `file.upload_failed` events come, and its successes while failures are open (`file.uploaded`); on its
// schedule (every 5 minutes deployed, as the sweeper) it sweeps every storage with failures: an incident is opened
// once its failures span the setting's `incidentAfter` (0: at once), probed while it lasts where the setting
// allows, and resolved once uploads to the storage succeed again or every file is uploaded or lost. Each opening
// and resolution is one conditional write that only the first sweep wins, written before its event goes out; a
// sweep that crashed after the write publishes it at the next one (same id).
import type { IncidentStore, StorageTracker } from '../aws/dynamo/storage/storage-incidents.ts';
import type { StoragePublisher } from '../domain/event-publisher.ts';
import {
  type IncidentFacts,
  incidentFacts,
  incidentIdOf,
  incidentStep,
  type ProbeResult,
  type StorageEvent,
  type StorageIncident,
  storageEvent,
  switchByOf,
} from '../domain/storage-incidents.ts';
import type { Logger } from '../log.ts';
import { errorSentence } from '../text.ts';

export interface IncidentDeps {
  incidents: IncidentStore;
  storage: { incidentAfterOf(appKey: string): number; probe(appKey: string): Promise<ProbeResult | null> };
  /** Where the storage events go; absent, none are published. */
  storageEvents?: StoragePublisher;
  log: Logger;
}

export interface IncidentSweepSummary {
  storages: number;
  open: number;
  opened: number;
  resolved: number;
  failed: number;
}

/** One sweep of every storage with failures, at `now` (receiver's clock). */
export async function sweepIncidents(now: number, deps: IncidentDeps): Promise<IncidentSweepSummary> {
  const summary: IncidentSweepSummary = { storages: 0, open: 0, opened: 0, resolved: 0, failed: 0 };
  for (const t of await deps.incidents.trackers()) {
    if (t.windowStart === null || t.latestFailure === null) continue;
    summary.storages += 1;
    try {
      const outcome = await sweepStorage(t, now, deps);
      if (outcome.opened) summary.opened += 1;
      if (outcome.resolved) summary.resolved += 1;
      else if (outcome.open) summary.open += 1;
    } catch (err) {
      summary.failed += 1;
      deps.log.error('storage_sweep_failed', { appKey: t.appKey, storage: t.storage, error: errorSentence(err) });
    }
  }
  return summary;
}

/** What one storage's sweep did to its incident. */
interface StorageSweepOutcome {
  open: boolean;
  opened: boolean;
  resolved: boolean;
}

/** One storage's sweep as its failures and successes say now: the facts of its failures and the incident's step. */
interface StorageSweep {
  t: StorageTracker;
  now: number;
  deps: IncidentDeps;
  facts: IncidentFacts;
  step: ReturnType<typeof incidentStep>;
  /** The tracker as this sweep saw it, its latest success counting the files' own uploads. */
  seen: StorageTracker;
}

async function sweepStorage(t: StorageTracker, now: number, deps: IncidentDeps): Promise<StorageSweepOutcome> {
  const none = { open: false, opened: false, resolved: false };
  const s = await stepOf(t, now, deps);
  if (!s) return none;
  if (s.step.clear) {
    await deps.incidents.close(s.seen, null);
    return none;
  }
  if (!s.step.open) return none;

  const id = t.incidentId ?? incidentIdOf(t.storage, t.windowStart!);
  const opening = t.incidentId === null;
  if (opening && !(await deps.incidents.open(t, id, now))) return none;
  const incident = await keepIncident(s, id);
  return { open: true, opened: opening, resolved: await publishIncident(s, incident) };
}

/** The facts of the storage's failures and the incident's step; null while the window's first failure is kept. */
async function stepOf(t: StorageTracker, now: number, deps: IncidentDeps): Promise<StorageSweep | null> {
  const failures = await deps.incidents.failuresSince(t.appKey, t.storage, t.windowStart!);
  const facts = incidentFacts(failures);
  // The window's first failure is being kept (its item written after the window's start): the next sweep has it.
  if (!facts) return null;
  const recovered = t.latestSuccess !== null && t.latestSuccess > t.latestFailure!;
  const settled =
    recovered || now >= facts.latestPurgeAt
      ? { settled: !recovered, latestUpload: null }
      : await deps.incidents.allSettled(t.appKey, failures, now);
  // The files' own uploads are successes too: the worker stores them before the verifier is told of them. A failure
  // that comes after the incident resolved on them, but happened before them, then belongs to it (`close`).
  const latestSuccess = Math.max(t.latestSuccess ?? 0, settled.latestUpload ?? 0) || null;
  const step = incidentStep({
    now,
    open: t.incidentId !== null,
    windowStart: t.windowStart!,
    latestFailure: t.latestFailure!,
    latestSuccess,
    allSettled: settled.settled,
    after: deps.storage.incidentAfterOf(t.appKey),
  });
  return { t, now, deps, facts, step, seen: { ...t, latestSuccess } };
}

/** The open incident as it stands now, with the storage's latest probe, saved. */
async function keepIncident({ t, now, deps, facts }: StorageSweep, id: string): Promise<StorageIncident> {
  const probe = (await probeOf(t, deps)) ?? t.probe;
  const incident: StorageIncident = {
    id,
    appKey: t.appKey,
    storage: t.storage,
    firstFailure: facts.firstFailure,
    filesAffected: facts.filesAffected,
    earliestPurgeAt: facts.earliestPurgeAt,
    switchBy: switchByOf(facts.earliestPurgeAt),
    openedAt: t.openedAt ?? now,
    resolvedAt: null,
    resolution: null,
    probe,
  };
  await deps.incidents.save(incident);
  return incident;
}

/**
 * Publishes the incident's opening, unless it went out before, and its resolution once due (written first, and
 * closing the incident once published): whether it is resolved.
 */
async function publishIncident(s: StorageSweep, incident: StorageIncident): Promise<boolean> {
  const { t, now, deps, step } = s;
  const events: StorageEvent[] = [];
  if (!t.openedPublished) {
    events.push(storageEvent('storage.incident_opened', incident, incident.openedAt));
    deps.log.warn('storage_incident_opened', incidentFields(incident));
  }
  // A resolution begun by a sweep that stopped before its event went out is finished as it was begun.
  const resolution = t.resolvedAt !== null ? { at: t.resolvedAt, why: t.resolution! } : null;
  const resolving = resolution ?? (step.resolve ? { at: now, why: step.resolve } : null);
  if (resolving && resolution === null && !(await deps.incidents.resolving(t, incident.id, now, step.resolve!))) {
    await publish(events, deps);
    return false;
  }
  if (resolving) {
    const resolved = { ...incident, resolvedAt: resolving.at, resolution: resolving.why };
    await deps.incidents.save(resolved);
    events.push(storageEvent('storage.incident_resolved', resolved, resolving.at));
    deps.log.info('storage_incident_resolved', incidentFields(resolved));
  }
  await publish(events, deps);
  if (!t.openedPublished) await deps.incidents.openedPublished(t, incident.id);
  if (resolving) await deps.incidents.close(s.seen, incident.id);
  return resolving !== null;
}

/** A probe of the storage, where its setting allows one; kept on the storage for `storage status`. */
async function probeOf(t: StorageTracker, deps: IncidentDeps): Promise<ProbeResult | null> {
  const probe = await deps.storage.probe(t.appKey);
  if (!probe) return null;
  await deps.incidents.probed(t, probe);
  deps.log.info('storage_probed', { appKey: t.appKey, storage: t.storage, ...probe });
  return probe;
}

async function publish(events: readonly StorageEvent[], deps: IncidentDeps): Promise<void> {
  if (events.length > 0 && deps.storageEvents) await deps.storageEvents.publish(events);
}

const incidentFields = (i: StorageIncident) => ({
  appKey: i.appKey,
  storage: i.storage,
  incidentId: i.id,
  firstFailureAt: i.firstFailure.at,
  filesAffected: i.filesAffected,
  earliestPurgeAt: i.earliestPurgeAt,
  switchBy: i.switchBy,
  ...(i.resolution ? { resolution: i.resolution } : {}),
  ...(i.probe ? { probe: i.probe.result } : {}),
});
