/** Which weeks of the semester an entry runs: the whole semester or one half of it. */
export type Span = 'full' | 'first' | 'second';

/** Week type on the wire: 0 every week, 1 odd weeks, 2 even weeks. */
export type WeekType = 0 | 1 | 2;

/** Where and when a class sits in the weekly grid. */
export interface Placement {
  day: number;
  slot: number;
  weekType: WeekType;
  span: Span;
}

const DAYS = 6;
const SLOTS = 7;

// One cell of the grid holds four bits: (odd week, even week) × (first half, second half).
function mask(weekType: WeekType, span: Span): number {
  const parities = weekType === 0 ? [0, 1] : [weekType - 1];
  const halves = span === 'full' ? [0, 1] : span === 'first' ? [0] : [1];
  let bits = 0;
  for (const parity of parities) for (const half of halves) bits |= 1 << (parity * 2 + half);
  return bits;
}

/**
 * A weekly occupancy grid per owner (a group or a teacher), used by the generator to avoid clashes: two classes
 * of one owner may share a day and slot only on different week parities or in different halves of the semester.
 */
export class Occupancy {
  private readonly grids = new Map<string, Uint8Array>();

  /** True when `owner` has nothing at `placement`. */
  isFree(owner: string, placement: Placement): boolean {
    const grid = this.grids.get(owner);
    if (!grid) return true;
    const cell = (placement.day - 1) * SLOTS + (placement.slot - 1);
    return ((grid[cell] ?? 0) & mask(placement.weekType, placement.span)) === 0;
  }

  /** Marks `placement` as taken for `owner`. */
  occupy(owner: string, placement: Placement): void {
    let grid = this.grids.get(owner);
    if (!grid) {
      grid = new Uint8Array(DAYS * SLOTS);
      this.grids.set(owner, grid);
    }
    const cell = (placement.day - 1) * SLOTS + (placement.slot - 1);
    grid[cell] = (grid[cell] ?? 0) | mask(placement.weekType, placement.span);
  }
}

/** Every (day, slot) of the week: Monday–Saturday, slots 1–7. */
export function weekCells(): { day: number; slot: number }[] {
  const cells: { day: number; slot: number }[] = [];
  for (let day = 1; day <= DAYS; day++) for (let slot = 1; slot <= SLOTS; slot++) cells.push({ day, slot });
  return cells;
}
