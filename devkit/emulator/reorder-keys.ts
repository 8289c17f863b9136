import type { Random } from './random.ts';

/**
 * A deep copy of a JSON value with the keys of every object in another order: the same event to a
 * receiver, a different string on the wire, as a re-delivery by another sender may be.
 */
export function reorderKeys<T>(value: T, random: Random): T {
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (v === null || typeof v !== 'object') return v;
    const keys = random.shuffle(Object.keys(v));
    // fromEntries defines own properties, so even a "__proto__" key stays a plain key.
    return Object.fromEntries(keys.map((k) => [k, walk((v as Record<string, unknown>)[k])]));
  };
  return walk(value) as T;
}
