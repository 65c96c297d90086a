/**
 * The sizes of the university scale benchmark: how many sources of each kind a step has, in the proportions
 * of a whole university (1,500 groups, 3,500 teachers and 15,000 personal subscriptions in 20,000 sources),
 * and the `--sizes` list that picks the steps.
 */

/** The sources of one step, by kind. */
export interface Population {
  sources: number;
  groups: number;
  teachers: number;
  personal: number;
}

/** The whole university the proportions come from. */
export const UNIVERSITY: Population = { sources: 20_000, groups: 1_500, teachers: 3_500, personal: 15_000 };

/** The steps of a default run, sources each. */
export const DEFAULT_SIZES: readonly number[] = [2_000, 5_000, 10_000, 20_000];

/** The steps of `--quick`, small enough for a busy development machine. */
export const QUICK_SIZES: readonly number[] = [500, 1_000];

/**
 * `sources` split in the university's proportions: groups and teachers rounded, personal subscriptions the
 * rest, so that the kinds always add up to `sources`.
 */
export function population(sources: number): Population {
  if (!Number.isSafeInteger(sources) || sources < 20)
    throw new RangeError(`a step needs a whole number of at least 20 sources, not ${sources}`);
  const groups = Math.max(1, Math.round((sources * UNIVERSITY.groups) / UNIVERSITY.sources));
  const teachers = Math.max(1, Math.round((sources * UNIVERSITY.teachers) / UNIVERSITY.sources));
  return { sources, groups, teachers, personal: sources - groups - teachers };
}

/** Parses `--sizes 2000,5000` (thousands separators `_` allowed): distinct sizes, smallest first. */
export function parseSizes(text: string): number[] {
  const sizes = text.split(',').map((part) => Number(part.trim().replaceAll('_', '')));
  for (const size of sizes) population(size);
  if (sizes.length === 0) throw new RangeError('--sizes needs at least one size');
  return [...new Set(sizes)].sort((a, b) => a - b);
}
