/**
 * The growth verdict of the scale benchmark: each cost measured at every size is compared between the
 * smallest and the largest size. A cost that grows linearly with the sources has a constant cost per source;
 * one whose cost per source rises by more than the tolerance (25 %) between the two grows faster than
 * linearly and is flagged. Costs that should not depend on the size at all (a feed's latency under the same
 * request rate) are compared as they are.
 */

/** How a cost is expected to grow with the sources. */
export type Growth =
  /** In proportion to the sources: compared per source. */
  | 'linear'
  /** Not at all: compared as measured. */
  | 'flat';

/** One cost measured at every size. */
export interface GrowthSeries {
  name: string;
  growth: Growth;
  /** The unit of the compared figure, e.g. `KB/source`, `ms`. */
  unit: string;
  /** One point per size; `value` is the cost at that size (total, not per source). */
  points: readonly { sources: number; value: number }[];
  /**
   * A compared figure below this at the largest size is too small to matter whatever its growth (a Redis
   * key kind of a few bytes per source, whose encoding changes at small sizes): reported, not flagged.
   */
  negligibleBelow?: number;
}

/** The verdict on one cost. */
export interface GrowthFinding {
  name: string;
  /** The compared figure (per source for linear costs) at the smallest and the largest size. */
  smallest: number;
  largest: number;
  unit: string;
  /** largest ÷ smallest: 1 is linear (or flat), above 1 + tolerance super-linear. */
  ratio: number;
  status: 'ok' | 'super-linear' | 'negligible' | 'not judged';
}

/** Per-source costs may rise this much from the smallest to the largest size before they are flagged. */
export const DEFAULT_TOLERANCE = 0.25;

/** Judges every series; a series with fewer than two sizes, or a non-finite or non-positive figure, is not judged. */
export function growthVerdict(series: readonly GrowthSeries[], tolerance = DEFAULT_TOLERANCE): GrowthFinding[] {
  return series.map((one) => {
    const sorted = [...one.points].sort((a, b) => a.sources - b.sources);
    const compared = (point: { sources: number; value: number } | undefined) =>
      point === undefined ? Number.NaN : one.growth === 'linear' ? point.value / point.sources : point.value;
    const smallest = compared(sorted[0]);
    const largest = compared(sorted[sorted.length - 1]);
    const ratio = largest / smallest;
    const judged = sorted.length >= 2 && Number.isFinite(ratio) && smallest > 0 && largest > 0;
    return {
      name: one.name,
      smallest,
      largest,
      unit: one.unit,
      ratio,
      status: !judged
        ? 'not judged'
        : ratio <= 1 + tolerance
          ? 'ok'
          : largest < (one.negligibleBelow ?? 0)
            ? 'negligible'
            : 'super-linear',
    };
  });
}

/** One line of the verdict, e.g. `OK   Redis memory: 21.3 → 22.0 KB/source (1.03×)`. */
export function findingLine(finding: GrowthFinding): string {
  const label = { 'super-linear': 'FLAG', ok: 'OK  ', negligible: 'TINY', 'not judged': 'N/A ' }[finding.status];
  const figure = (value: number) => (Math.abs(value) >= 100 ? value.toFixed(0) : value.toPrecision(3));
  return `${label} ${finding.name}: ${figure(finding.smallest)} → ${figure(finding.largest)} ${finding.unit} (${finding.ratio.toFixed(2)}×)`;
}
