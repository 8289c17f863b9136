// A small seeded pseudo-random generator for the sender emulator: the same seed must give the same run,
// byte for byte, so that a failing run can be replayed. mulberry32 (Tommy Ettinger's 32-bit generator)
// is used because it is tiny, fast (tens of millions of draws per second, which keeps generating ten
// thousand callbacks far below a second), well studied, and good enough for test data. It is not
// cryptographic and does not need to be: nonces only have to be distinct within a run. fast-check's
// generators are made for shrinking property tests, not for driving a plain reproducible simulation.

export interface Random {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [min, max], both included. */
  int(min: number, max: number): number;
  /** true with probability p. */
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
  /** A string of `length` characters from `alphabet`. */
  string(length: number, alphabet?: string): string;
  /** Shuffles in place (Fisher-Yates) and returns the same array. */
  shuffle<T>(items: T[]): T[];
}

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** Turns any seed (a number or a string) into 32 bits: FNV-1a over its text. */
function seedToUint32(seed: number | string): number {
  const text = String(seed);
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export function createRandom(seed: number | string): Random {
  let state = seedToUint32(seed);
  const next = (): number => {
    state = (state + 0x6d2b79f5) | 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (min: number, max: number): number => min + Math.floor(next() * (max - min + 1));
  return {
    next,
    int,
    chance: (p) => p > 0 && next() < p,
    pick<T>(items: readonly T[]): T {
      if (items.length === 0) throw new Error('pick from an empty list');
      return items[int(0, items.length - 1)]!;
    },
    string(length, alphabet = ALPHANUMERIC) {
      let out = '';
      for (let i = 0; i < length; i++) out += alphabet[int(0, alphabet.length - 1)];
      return out;
    },
    shuffle<T>(items: T[]): T[] {
      for (let i = items.length - 1; i > 0; i--) {
        const j = int(0, i);
        const tmp = items[i]!;
        items[i] = items[j]!;
        items[j] = tmp;
      }
      return items;
    },
  };
}

/** A chance drawn only when its probability is given: runs without it keep the draws (and plans) they had. */
export const chanceIfGiven = (rng: Random, p: number | undefined): boolean => (p ?? 0) > 0 && rng.chance(p!);
