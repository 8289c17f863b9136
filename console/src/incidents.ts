// The storage incidents open now (docs/verification.md, "Storage incidents"), as the read API gives them with a
// listing and with a task: one line each, with its storage, files affected and the switch-by countdown (the moment a
// new storage configuration must be made by to save the first file).
import type { StorageIncident } from '../../lib/domain/storage-incidents.ts';
import { h } from './dom.ts';
import { count, duration, utc } from './format.ts';

export type { StorageIncident };

/** The banner of the open incidents; null when none is open. */
export function incidentsBanner(incidents: readonly StorageIncident[] | undefined, now: number): HTMLElement | null {
  if (!incidents || incidents.length === 0) return null;
  const items = incidents.map((i) => {
    const left = i.switchBy - now;
    const by = left > 0 ? `switch storage within ${duration(left)} (by ${utc(i.switchBy)})` : 'switch-by time passed';
    const probe = i.probe ? `; probe: ${i.probe.result}` : '';
    return h(
      'li',
      {},
      h('span', { class: 'mono' }, i.storage),
      ` (${i.appKey}): uploads failing since ${utc(i.firstFailure.at)}, ${count(i.filesAffected)} file${
        i.filesAffected === 1 ? '' : 's'
      } affected; ${by}${probe}`,
    );
  });
  return h(
    'section',
    { class: 'incidents', role: 'alert', 'aria-labelledby': 'incidents-h' },
    h('h2', { id: 'incidents-h' }, 'Storage incidents'),
    h('ul', {}, ...items),
  );
}
