import type { Logger } from '../logger.ts';
import { FaultInjector } from './faults.ts';
import { generateDataset } from './generate.ts';
import { RequestStats } from './stats.ts';
import { SimulatorStore } from './store.ts';
import type { WireFormat } from './wire.ts';

/** Simulator settings after defaults were applied. */
export interface ResolvedOptions {
  seed: number | string;
  port: number;
  host: string;
  referenceDate: Date;
  groups: number;
  employees: number;
  users: number;
  format: WireFormat;
  authHeader: string;
  authScheme: string;
  logger: Logger;
}

/** The simulator's mutable world: data, fault rules and counters; `reset()` rebuilds it from the seed. */
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

  /** Regenerates the data from the seed and clears fault rules and counters. */
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
    options.format,
  );
  options.logger.debug(
    { ms: Math.round(performance.now() - started), groups, employees, users },
    'simulator data generated',
  );
  return store;
}
