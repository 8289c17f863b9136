// The replay rule's words (docs/signatures-and-quarantine.md, "Replays"): of the bodies sent under one signature,
// the first the ingest receives is applied; the ingest claims the signature before it enqueues a callback, and says
// in the message what it found.

/** Why a callback is `replayed_signature`, in the words its quarantine entry keeps. */
export const REPLAYED_SIGNATURE_DETAIL = 'this signature came before with a different body';

/**
 * The ingest's replay claim of a signed callback, made before it is enqueued: `stored`, the delivery of this body
 * is stored under the claim (it holds it, or the same body again holds it); `replayed`, another body holds it, and
 * this one is set aside as `replayed_signature`.
 */
export type ReplayClaim = 'stored' | 'replayed';
export const REPLAY_CLAIMS: readonly ReplayClaim[] = ['stored', 'replayed'];
