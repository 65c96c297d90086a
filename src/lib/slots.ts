/**
 * A fixed number of places for work that runs at once, and a short, bounded line of callers waiting for one.
 * Places are handed over in arrival order. A caller that finds the line full, or whose signal aborts while it
 * waits, is refused with {@link NoSlotError}: holding more callers only makes them wait longer to be refused.
 */
import { NoSlotError } from './errors.ts';

/** `size` places and a line of at most `lineLength` waiters. */
export class Slots {
  private readonly size: number;
  private readonly lineLength: number;
  private taken = 0;
  private readonly line: (() => void)[] = [];

  constructor(size: number, lineLength: number) {
    if (!(size >= 1)) throw new RangeError(`a pool needs at least one place, got ${size}`);
    this.size = size;
    this.lineLength = lineLength;
  }

  /** Places in use. */
  get busy(): number {
    return this.taken;
  }

  /** Callers waiting for a place. */
  get waiting(): number {
    return this.line.length;
  }

  /** Resolves once the caller holds a place (give it back with {@link release}); rejects as the class says. */
  async acquire(signal: AbortSignal): Promise<void> {
    if (signal.aborted) throw new NoSlotError(this.taken, 'gave up');
    if (this.taken < this.size) {
      this.taken += 1;
      return;
    }
    if (this.line.length >= this.lineLength) throw new NoSlotError(this.taken, 'line full');
    await new Promise<void>((resolve, reject) => {
      const handOver = () => {
        signal.removeEventListener('abort', giveUp);
        resolve();
      };
      const giveUp = () => {
        this.line.splice(this.line.indexOf(handOver), 1);
        reject(new NoSlotError(this.taken, 'gave up'));
      };
      signal.addEventListener('abort', giveUp, { once: true });
      this.line.push(handOver);
    });
  }

  /** Gives a place back: to the first waiter in line, or free. */
  release(): void {
    const next = this.line.shift();
    if (next) next();
    else this.taken -= 1;
  }
}
