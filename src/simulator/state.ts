import type { Logger } from '../logger.ts';
import type { Dialect } from './dialect.ts';
import { FaultInjector } from './faults.ts';
import { generateDataset } from './generate.ts';
import { RequestStats } from './stats.ts';
import { SimulatorStore } from './store.ts';
import { formatFor, type WireFormat } from './wire.ts';

/** Simulator settings after defaults were applied. */
export interface ResolvedOptions {
  seed: number | string;
  port: number;
  host: string;
  referenceDate: Date;
  groups: number;
  employees: number;
  users: number;
  /** Date format and numbers of the `standard` dialect. */
  base: Omit<WireFormat, 'dialect'>;
  /** The dialect at start and after a reset. */
  dialect: Dialect;
  authHeader: string;
  authScheme: string;
  logger: Logger;
}

/** The simulator's mutable world: data, dialect, fault rules and counters; `reset()` rebuilds it from the seed. */
export class SimulatorState {
  readonly options: ResolvedOptions;
  readonly faults: FaultInjector;
  readonly stats = new RequestStats();
  store: SimulatorStore;

  constructor(options: ResolvedOptions) {
    this.options = options;
    this.faults = new FaultInjector(options.seed);
    this.store = buildStore(options);
  }

  /** The dialect answers are written in now. */
  get dialect(): Dialect {
    return this.store.format.dialect;
  }

  /** Switches the dialect of every answer from now on (the data stays as it is). */
  setDialect(dialect: Dialect): void {
    this.store.setFormat(formatFor(dialect, this.options.base));
  }

  /** Regenerates the data from the seed, restores the dialect it started with, clears fault rules and counters. */
  reset(): void {
    this.store = buildStore(this.options);
    this.faults.clear();
    this.stats.reset();
  }
}

function buildStore(options: ResolvedOptions): SimulatorStore {
  const { seed, referenceDate, groups, employees, users } = options;
  const started = performance.now();
  const store = new SimulatorStore(
    generateDataset({ seed, referenceDate, groups, employees, users }),
    seed,
    formatFor(options.dialect, options.base),
  );
  options.logger.debug(
    { ms: Math.round(performance.now() - started), groups, employees, users },
    'simulator data generated',
  );
  return store;
}
