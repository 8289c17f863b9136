// A stored callback as `callbacks tasks events --json` prints it and the read API serves it: the body
// parsed back into JSON (kept as the string it was when it is not JSON).
import type { Recovery, StoredEvent } from './task-store.ts';

export interface EventView {
  key: string;
  type: number;
  timestamp: number;
  receivedAt: number;
  verdict: StoredEvent['verdict'];
  requestId: string | null;
  expiresAt: number | null;
  /** Only on a callback applied out of the quarantine (`callbacks quarantine apply`). */
  recovered?: Recovery;
  body: unknown;
}

export function eventView(e: StoredEvent): EventView {
  let body: unknown = e.raw;
  try {
    body = JSON.parse(e.raw);
  } catch {
    // Kept as the string it was.
  }
  return {
    key: e.key,
    type: e.type,
    timestamp: e.timestamp,
    receivedAt: e.receivedAt,
    verdict: e.verdict,
    requestId: e.requestId,
    expiresAt: e.expiresAt,
    ...(e.recovered ? { recovered: e.recovered } : {}),
    body,
  };
}
