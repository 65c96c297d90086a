/** A seeded pseudo-random source: same seed, same sequence. The simulator never touches Math.random. */
export interface Random {
  /** Uniform float in [0, 1). */
  next(): number;
  /** Uniform integer in [min, max], both inclusive. */
  int(min: number, max: number): number;
  /** True with probability `p`. */
  chance(p: number): boolean;
  /** One element of a non-empty list. */
  pick<T>(items: readonly T[]): T;
  /** A new array with the elements in random order (Fisher–Yates). */
  shuffle<T>(items: readonly T[]): T[];
}

/** Hashes a string or number seed (plus optional salts) to a 32-bit integer (cyrb53, folded to 32 bits). */
export function hashSeed(seed: number | string, ...salts: readonly (number | string)[]): number {
  const text = [String(seed), ...salts.map(String)].join('\u0000');
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (h1 ^ h2) >>> 0;
}

/** Creates a mulberry32 generator seeded from `seed` and the salts (a salt names an independent stream). */
export function createRandom(seed: number | string, ...salts: readonly (number | string)[]): Random {
  let state = hashSeed(seed, ...salts);
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (min: number, max: number): number => min + Math.floor(next() * (max - min + 1));
  return {
    next,
    int,
    chance: (p) => next() < p,
    pick: <T>(items: readonly T[]): T => {
      const item = items[Math.floor(next() * items.length)];
      if (item === undefined) throw new Error('pick() from an empty list');
      return item;
    },
    shuffle: <T>(items: readonly T[]): T[] => {
      const out = [...items];
      for (let i = out.length - 1; i > 0; i--) {
        const j = int(0, i);
        const a = out[i] as T;
        out[i] = out[j] as T;
        out[j] = a;
      }
      return out;
    },
  };
}

/** Deterministic hex string of `length` characters derived from a seed and salts (for tokens). */
export function seededHex(length: number, seed: number | string, ...salts: readonly (number | string)[]): string {
  const random = createRandom(seed, ...salts);
  let out = '';
  while (out.length < length) out += random.int(0, 0xffff).toString(16).padStart(4, '0');
  return out.slice(0, length);
}
