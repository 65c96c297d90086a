import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type DesiredEvent, fieldsHash } from '../../src/push/desired-events.ts';
import {
  CANCELLED,
  carryRefusals,
  DELETE_REFUSED,
  diffPush,
  FOREIGN,
  type PushDiff,
  parseRefused,
  refusedMarker,
} from '../../src/push/push-diff.ts';

const FIELDS = {
  summary: 's',
  location: '',
  description: '',
  start: { dateTime: '2025-10-01T09:00:00', timeZone: 'UTC' },
  end: { dateTime: '2025-10-01T10:00:00', timeZone: 'UTC' },
};
const event = (id: string, hash: string): DesiredEvent => ({ id, hash, fields: FIELDS });
/** The planning clock (epoch ms). */
const NOW = 1_760_000_000_000;

/** Few ids and hashes, so that desired and indexed events overlap often. */
const idArb = fc.constantFrom<string>('a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7', 'a8', 'a9');
const hashArb = fc.constantFrom<string>('h1', 'h2', 'h3');
const desiredArb = fc
  .uniqueArray(fc.tuple(idArb, hashArb), { selector: ([id]) => id, maxLength: 10 })
  .map((pairs) => pairs.map(([id, hash]) => event(id, hash)));
/** A refusal of a version or of a delete, due before, at or after {@link NOW}. */
const refusalArb = fc
  .tuple(fc.oneof(hashArb, fc.constant(DELETE_REFUSED)), fc.constantFrom(NOW - 1, NOW, NOW + 1))
  .map(([hash, retryAt]) => refusedMarker(hash, retryAt));
/** Indexed ids: live with a digest, deleted (kept by Google as cancelled), or refused by Google. */
const indexArb = fc
  .uniqueArray(fc.tuple(idArb, fc.oneof(hashArb, fc.constant(CANCELLED), refusalArb)), {
    selector: ([id]) => id,
    maxLength: 10,
  })
  .map((pairs) => new Map(pairs));

/** Whether the index holds a refusal of this very version of the event that is not due yet. */
const waiting = (index: ReadonlyMap<string, string>, item: DesiredEvent) => {
  const refusal = parseRefused(index.get(item.id) ?? '');
  return refusal !== undefined && refusal.hash === item.hash && refusal.retryAt > NOW;
};

/** Whether the index holds a refused delete of `id` that is not due yet. */
const deleteWaiting = (index: ReadonlyMap<string, string>, id: string) => {
  const refusal = parseRefused(index.get(id) ?? '');
  return refusal !== undefined && refusal.hash === DELETE_REFUSED && refusal.retryAt > NOW;
};

/** Indexed ids not desired whose refused delete is not due yet. */
const deletesWaiting = (desired: readonly DesiredEvent[], index: ReadonlyMap<string, string>) => {
  const wanted = new Set(desired.map((item) => item.id));
  return [...index.keys()].filter((id) => !wanted.has(id) && deleteWaiting(index, id));
};

/** What the index holds after every operation of the plan succeeded. */
function apply(index: ReadonlyMap<string, string>, plan: PushDiff): Map<string, string> {
  const next = new Map(index);
  for (const item of [...plan.insert, ...plan.revive, ...plan.patch]) next.set(item.id, item.hash);
  for (const id of plan.remove) next.set(id, CANCELLED);
  return next;
}

/** The live part of an index (neither deleted nor refused). */
const live = (index: ReadonlyMap<string, string>) =>
  [...index].filter(([, hash]) => hash !== CANCELLED && parseRefused(hash) === undefined);

describe('diffPush', () => {
  it('applying the plan to the index yields exactly the desired events live, except refused ones still waiting', () => {
    fc.assert(
      fc.property(desiredArb, indexArb, (desired, index) => {
        const after = apply(index, diffPush(desired, index, NOW));
        expect(live(after).sort()).toEqual(
          desired
            .filter((item) => !waiting(index, item))
            .map((item) => [item.id, item.hash])
            .sort(),
        );
        // A waiting refusal stays in the index as it was, a refused delete of an event no longer desired too.
        for (const item of desired.filter((candidate) => waiting(index, candidate)))
          expect(after.get(item.id)).toBe(index.get(item.id));
        for (const id of deletesWaiting(desired, index)) expect(after.get(id)).toBe(index.get(id));
        // Everything else no longer desired ends deleted (or left alone, when it is someone else's).
        const wanted = new Set(desired.map((item) => item.id));
        for (const [id, value] of after)
          if (!wanted.has(id) && !deleteWaiting(index, id)) expect([CANCELLED, FOREIGN]).toContain(value);
      }),
      { numRuns: 1000 },
    );
  });

  it('plans nothing more than needed: each desired event once, only changed ones written', () => {
    fc.assert(
      fc.property(desiredArb, indexArb, (desired, index) => {
        const plan = diffPush(desired, index, NOW);
        const waitingDeletes = deletesWaiting(desired, index).length;
        expect(plan.insert.length + plan.revive.length + plan.patch.length + plan.unchanged + plan.refused).toBe(
          desired.length + waitingDeletes,
        );
        // Inserted: unknown, or refused in another version or long enough ago (the insert finds out what Google holds).
        for (const item of plan.insert)
          expect(
            !index.has(item.id) || (parseRefused(index.get(item.id) ?? '') !== undefined && !waiting(index, item)),
          ).toBe(true);
        // An id Google keeps as deleted is revived (one write), never inserted (a 409) or patched.
        for (const item of plan.revive) expect(index.get(item.id)).toBe(CANCELLED);
        for (const item of plan.patch) expect(index.get(item.id)).not.toBe(item.hash);
        for (const item of plan.patch)
          expect(
            index.has(item.id) &&
              index.get(item.id) !== CANCELLED &&
              parseRefused(index.get(item.id) ?? '') === undefined,
          ).toBe(true);
        const wanted = new Set(desired.map((item) => item.id));
        for (const id of plan.remove)
          expect(index.has(id) && index.get(id) !== CANCELLED && !wanted.has(id) && !deleteWaiting(index, id)).toBe(
            true,
          );
        expect(plan.unchanged).toBe(desired.filter((item) => index.get(item.id) === item.hash).length);
        expect(plan.refused).toBe(desired.filter((item) => waiting(index, item)).length + waitingDeletes);
      }),
      { numRuns: 1000 },
    );
  });

  it('an unchanged calendar needs no operation at all', () => {
    fc.assert(
      fc.property(desiredArb, (desired) => {
        const plan = diffPush(desired, new Map(desired.map((item) => [item.id, item.hash])), NOW);
        expect(plan).toEqual({
          insert: [],
          revive: [],
          patch: [],
          remove: [],
          unchanged: desired.length,
          conflicts: 0,
          refused: 0,
        });
      }),
    );
  });

  it('never writes to an id taken by someone else, nor deletes it', () => {
    const plan = diffPush(
      [event('a1', 'h1')],
      new Map([
        ['a1', FOREIGN],
        ['a2', FOREIGN],
      ]),
      NOW,
    );
    expect(plan).toEqual({ insert: [], revive: [], patch: [], remove: [], unchanged: 0, conflicts: 1, refused: 0 });
  });

  it('a desired id listed twice is planned once, the first one winning', () => {
    const plan = diffPush([event('a1', 'h1'), event('a1', 'h2')], new Map(), NOW);
    expect(plan.insert).toEqual([event('a1', 'h1')]);
  });
});

describe('refused events', () => {
  const refused = (hash: string, retryAt = NOW + 1) => refusedMarker(hash, retryAt);

  it('the very version Google refused waits, written by no operation, until it is due', () => {
    const plan = diffPush([event('a1', 'h1')], new Map([['a1', refused('h1')]]), NOW);
    expect(plan).toEqual({ insert: [], revive: [], patch: [], remove: [], unchanged: 0, conflicts: 0, refused: 1 });
  });

  it('another version is inserted at once (the insert finds out what Google holds)', () => {
    expect(diffPush([event('a1', 'h2')], new Map([['a1', refused('h1')]]), NOW)).toMatchObject({
      insert: [event('a1', 'h2')],
      patch: [],
      refused: 0,
    });
  });

  it('the same version is inserted again once it is due', () => {
    expect(diffPush([event('a1', 'h1')], new Map([['a1', refused('h1', NOW)]]), NOW)).toMatchObject({
      insert: [event('a1', 'h1')],
      refused: 0,
    });
    expect(diffPush([event('a1', 'h1')], new Map([['a1', refused('h1', NOW - 1)]]), NOW)).toMatchObject({
      insert: [event('a1', 'h1')],
      refused: 0,
    });
  });

  it('a refused event no longer desired is removed (a refused patch left the old version in Google)', () => {
    expect(
      diffPush(
        [],
        new Map([
          ['a1', refused('h1')],
          ['a2', refused('h2', NOW - 1)],
        ]),
        NOW,
      ),
    ).toMatchObject({ remove: ['a1', 'a2'], refused: 0 });
  });

  it('a refused delete waits like a refused write, and is removed again once it is due', () => {
    expect(diffPush([], new Map([['a1', refused(DELETE_REFUSED)]]), NOW)).toEqual({
      insert: [],
      revive: [],
      patch: [],
      remove: [],
      unchanged: 0,
      conflicts: 0,
      refused: 1,
    });
    expect(diffPush([], new Map([['a1', refused(DELETE_REFUSED, NOW)]]), NOW)).toMatchObject({
      remove: ['a1'],
      refused: 0,
    });
  });

  it('a class whose delete was refused comes back with an insert (which finds our event live), due or not', () => {
    expect(diffPush([event('a1', 'h1')], new Map([['a1', refused(DELETE_REFUSED)]]), NOW)).toMatchObject({
      insert: [event('a1', 'h1')],
      remove: [],
      refused: 0,
    });
    expect(diffPush([event('a1', 'h1')], new Map([['a1', refused(DELETE_REFUSED, NOW)]]), NOW)).toMatchObject({
      insert: [event('a1', 'h1')],
      remove: [],
      refused: 0,
    });
  });

  it('markers read back as written; an unreadable time reads as due', () => {
    expect(parseRefused(refusedMarker('h1', NOW))).toEqual({ hash: 'h1', retryAt: NOW });
    expect(parseRefused('!refused:h1:soon')).toEqual({ hash: 'h1', retryAt: 0 });
    expect(parseRefused('h1')).toBeUndefined();
    expect(parseRefused(CANCELLED)).toBeUndefined();
  });

  it("digests are base64url, so a digest never holds the marker's separator and always reads back whole", () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.string(), (summary, location, description) => {
        const hash = fieldsHash({ ...FIELDS, summary, location, description });
        expect(hash).toMatch(/^[\w-]{22}$/);
        expect(parseRefused(refusedMarker(hash, NOW))).toEqual({ hash, retryAt: NOW });
      }),
      { numRuns: 300 },
    );
  });
});

describe('carryRefusals', () => {
  it('keeps refusals not due yet whose version Google does not hold, and drops the others', () => {
    const previous = new Map([
      ['a1', refusedMarker('h1', NOW + 1)], // never written: kept
      ['a2', refusedMarker('h2', NOW + 1)], // Google holds another version: kept
      ['a3', refusedMarker('h3', NOW + 1)], // Google holds this very version after all: the listing wins
      ['a4', refusedMarker('h4', NOW)], // due: dropped
      ['a5', 'h5'],
    ]);
    const remote = new Map([
      ['a2', 'h0'],
      ['a3', 'h3'],
      ['a5', CANCELLED],
    ]);
    expect(carryRefusals(previous, remote, NOW)).toEqual(
      new Map([
        ['a2', refusedMarker('h2', NOW + 1)],
        ['a3', 'h3'],
        ['a5', CANCELLED],
        ['a1', refusedMarker('h1', NOW + 1)],
      ]),
    );
  });

  it('keeps refused deletes not due yet while Google holds the event live, and drops the others', () => {
    const previous = new Map([
      ['d1', refusedMarker(DELETE_REFUSED, NOW + 1)], // live in Google: kept, so the delete is not asked again at once
      ['d2', refusedMarker(DELETE_REFUSED, NOW + 1)], // live without a digest: kept
      ['d3', refusedMarker(DELETE_REFUSED, NOW + 1)], // deleted meanwhile: the listing wins
      ['d4', refusedMarker(DELETE_REFUSED, NOW + 1)], // not listed at all: nothing to delete
      ['d5', refusedMarker(DELETE_REFUSED, NOW)], // due: dropped
    ]);
    const remote = new Map([
      ['d1', 'h1'],
      ['d2', ''],
      ['d3', CANCELLED],
      ['d5', 'h5'],
    ]);
    expect(carryRefusals(previous, remote, NOW)).toEqual(
      new Map([
        ['d1', refusedMarker(DELETE_REFUSED, NOW + 1)],
        ['d2', refusedMarker(DELETE_REFUSED, NOW + 1)],
        ['d3', CANCELLED],
        ['d5', 'h5'],
      ]),
    );
  });
});
