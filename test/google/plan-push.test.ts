import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { DesiredEvent, RemoteEvent } from '../../src/google/calendar-target.ts';
import { markerFor } from '../../src/google/desired-events.ts';
import { CANCELLED, FOREIGN, indexFromRemote, planPush, type PushPlan } from '../../src/google/plan-push.ts';

const FIELDS = { summary: 's', location: '', description: '', start: { dateTime: '2025-10-01T09:00:00', timeZone: 'UTC' }, end: { dateTime: '2025-10-01T10:00:00', timeZone: 'UTC' } };
const event = (id: string, hash: string): DesiredEvent => ({ id, hash, fields: FIELDS });

/** Few ids and hashes, so that desired and indexed events overlap often. */
const idArb = fc.constantFrom<string>('a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7', 'a8', 'a9');
const hashArb = fc.constantFrom<string>('h1', 'h2', 'h3');
const desiredArb = fc.uniqueArray(fc.tuple(idArb, hashArb), { selector: ([id]) => id, maxLength: 10 }).map((pairs) => pairs.map(([id, hash]) => event(id, hash)));
/** Indexed ids: live with a digest, or deleted (kept by Google as cancelled). */
const indexArb = fc.uniqueArray(fc.tuple(idArb, fc.oneof(hashArb, fc.constant(CANCELLED))), { selector: ([id]) => id, maxLength: 10 }).map((pairs) => new Map(pairs));

/** What the index holds after every operation of the plan succeeded. */
function apply(index: ReadonlyMap<string, string>, plan: PushPlan): Map<string, string> {
  const next = new Map(index);
  for (const item of [...plan.insert, ...plan.revive, ...plan.patch]) next.set(item.id, item.hash);
  for (const id of plan.remove) next.set(id, CANCELLED);
  return next;
}

/** The live part of an index. */
const live = (index: ReadonlyMap<string, string>) => [...index].filter(([, hash]) => hash !== CANCELLED);

describe('planPush', () => {
  it('applying the plan to the index yields exactly the desired events live', () => {
    fc.assert(fc.property(desiredArb, indexArb, (desired, index) => {
      const after = apply(index, planPush(desired, index));
      expect(live(after).sort()).toEqual(desired.map((item) => [item.id, item.hash]).sort());
    }), { numRuns: 1000 });
  });

  it('plans nothing more than needed: each desired event once, only changed ones written', () => {
    fc.assert(fc.property(desiredArb, indexArb, (desired, index) => {
      const plan = planPush(desired, index);
      expect(plan.insert.length + plan.revive.length + plan.patch.length + plan.unchanged).toBe(desired.length);
      for (const item of plan.insert) expect(index.has(item.id)).toBe(false);
      // An id Google keeps as deleted is revived (one write), never inserted (a 409) or patched.
      for (const item of plan.revive) expect(index.get(item.id)).toBe(CANCELLED);
      for (const item of plan.patch) expect(index.get(item.id)).not.toBe(item.hash);
      for (const item of plan.patch) expect(index.has(item.id) && index.get(item.id) !== CANCELLED).toBe(true);
      const wanted = new Set(desired.map((item) => item.id));
      for (const id of plan.remove) expect(index.has(id) && index.get(id) !== CANCELLED && !wanted.has(id)).toBe(true);
      expect(plan.unchanged).toBe(desired.filter((item) => index.get(item.id) === item.hash).length);
    }), { numRuns: 1000 });
  });

  it('an unchanged calendar needs no operation at all', () => {
    fc.assert(fc.property(desiredArb, (desired) => {
      const plan = planPush(desired, new Map(desired.map((item) => [item.id, item.hash])));
      expect(plan).toEqual({ insert: [], revive: [], patch: [], remove: [], unchanged: desired.length, conflicts: 0 });
    }));
  });

  it('never writes to an id taken by someone else, nor deletes it', () => {
    const plan = planPush([event('a1', 'h1')], new Map([['a1', FOREIGN], ['a2', FOREIGN]]));
    expect(plan).toEqual({ insert: [], revive: [], patch: [], remove: [], unchanged: 0, conflicts: 1 });
  });

  it('a desired id listed twice is planned once, the first one winning', () => {
    const plan = planPush([event('a1', 'h1'), event('a1', 'h2')], new Map());
    expect(plan.insert).toEqual([event('a1', 'h1')]);
  });
});

describe('indexFromRemote', () => {
  const marker = markerFor('group:1');
  it('keeps our live events (an empty digest when one lacks it) and our deleted ones as cancelled, and drops foreign ones', () => {
    const remote: RemoteEvent[] = [
      { id: 'a1', cancelled: false, markerValue: 'group:1', hash: 'h1' },
      { id: 'a2', cancelled: false, markerValue: 'group:1' },
      { id: 'a3', cancelled: true, markerValue: 'group:1', hash: 'h3' },
      { id: 'a4', cancelled: false, markerValue: 'group:2', hash: 'h4' },
      { id: 'a5', cancelled: false, hash: 'h5' },
    ];
    expect([...indexFromRemote(remote, marker)]).toEqual([['a1', 'h1'], ['a2', ''], ['a3', CANCELLED]]);
  });

  it('an event of ours without a digest is patched by the next plan', () => {
    const index = indexFromRemote([{ id: 'a2', cancelled: false, markerValue: 'group:1' }], marker);
    expect(planPush([event('a2', 'h2')], index).patch.map((item) => item.id)).toEqual(['a2']);
  });
});
