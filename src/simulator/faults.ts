import { z } from 'zod';
import { createRandom, type Random } from './random.ts';

/** The six API operations, named as in the upstream client and in fault rules. */
export const ENDPOINTS = ['groupSchedule', 'employeeSchedule', 'employeeSearch', 'me', 'mySchedule', 'myPlan'] as const;

/** One of {@link ENDPOINTS}. */
export type EndpointName = (typeof ENDPOINTS)[number];

/** Body of `POST /_sim/faults`. Unknown fields are rejected so that a typo cannot silently do nothing. */
export const faultSchema = z.strictObject({
  endpoint: z.enum([...ENDPOINTS, '*']).default('*'),
  kind: z.enum(['latency', 'status', 'rate-limit', 'timeout', 'malformed-json', 'unsuccessful', 'truncated', 'reset']),
  probability: z.number().min(0).max(1).default(1),
  times: z.number().int().min(1).optional(),
  latencyMs: z.number().int().min(0).max(600_000).optional(),
  status: z.number().int().min(200).max(599).optional(),
  retryAfterSeconds: z.number().int().min(0).optional(),
  error: z.string().optional(),
});

/** A parsed fault rule as posted. */
export type FaultSpec = z.infer<typeof faultSchema>;

/** A stored rule: its id and how many more requests it may fire on. */
export interface FaultRule extends FaultSpec {
  id: string;
  remaining: number;
}

/** What the faults decided for one request: extra delay, then at most one failure. */
export interface FaultDecision {
  delayMs: number;
  failure: FaultRule | undefined;
}

/**
 * Fault rules in insertion order. Every matching `latency` rule adds its delay; then the first matching other
 * rule decides the response. `probability` is drawn from a seeded stream, so a run is repeatable; `times`
 * counts the requests a rule actually fired on, and a spent rule is dropped.
 */
export class FaultInjector {
  private rules: FaultRule[] = [];
  private random: Random;
  private readonly seed: number | string;
  private counter = 0;

  constructor(seed: number | string) {
    this.seed = seed;
    this.random = createRandom(seed, 'faults');
  }

  /** Adds a rule and returns its id; `latency` needs `latencyMs`. */
  add(spec: FaultSpec): string {
    this.counter += 1;
    const id = `fault-${this.counter}`;
    this.rules.push({ ...spec, id, remaining: spec.times ?? Number.POSITIVE_INFINITY });
    return id;
  }

  /** The active rules. */
  list(): FaultRule[] {
    return this.rules.map((rule) => ({ ...rule }));
  }

  /** Removes one rule; false when there was none with that id. */
  remove(id: string): boolean {
    const before = this.rules.length;
    this.rules = this.rules.filter((rule) => rule.id !== id);
    return this.rules.length < before;
  }

  /** Removes every rule and restarts the probability stream. */
  clear(): void {
    this.rules = [];
    this.random = createRandom(this.seed, 'faults');
  }

  /** Decides the faults for one request to `endpoint`, spending the rules that fire. */
  decide(endpoint: EndpointName): FaultDecision {
    let delayMs = 0;
    let failure: FaultRule | undefined;
    for (const rule of this.rules) {
      if (rule.endpoint !== '*' && rule.endpoint !== endpoint) continue;
      if (rule.kind === 'latency') {
        if (this.fires(rule)) delayMs += rule.latencyMs ?? 0;
      } else if (!failure && this.fires(rule)) {
        failure = rule;
      }
    }
    this.rules = this.rules.filter((rule) => rule.remaining > 0);
    return { delayMs, failure };
  }

  private fires(rule: FaultRule): boolean {
    if (rule.remaining <= 0) return false;
    if (rule.probability < 1 && !this.random.chance(rule.probability)) return false;
    rule.remaining -= 1;
    return true;
  }
}

/** Validates a fault body; returns the rule or a message naming the bad field. */
export function parseFault(body: unknown): { spec: FaultSpec } | { error: string } {
  const parsed = faultSchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const keys = issue && 'keys' in issue && Array.isArray(issue.keys) ? issue.keys.join(', ') : '';
    const field = issue?.path.join('.') || keys || 'body';
    return { error: `Invalid fault rule: ${field}: ${issue?.message ?? 'invalid'}` };
  }
  if (parsed.data.kind === 'latency' && parsed.data.latencyMs === undefined) {
    return { error: 'Invalid fault rule: latencyMs: required for kind "latency"' };
  }
  return { spec: parsed.data };
}
