/** The `/start` source check with its stores and limits faked: what each case costs the chat. */
import { describe, expect, it } from 'vitest';
import { RateLimitedError } from '../../src/lib/errors.ts';
import { type SourceCheckDeps, sourceChecker } from '../../src/notify/telegram/source-check.ts';

/** Deps of a source never fetched; `pending` says whether a fetch of it is queued already. */
function deps(pending: boolean, ownLeft: number): SourceCheckDeps & { asked: string[] } {
  const asked: string[] = [];
  let left = ownLeft;
  return {
    asked,
    registry: { missingReason: async () => undefined, isActive: async () => false },
    feeds: { exists: async () => false },
    directory: { has: async () => true },
    knownEmployees: { has: async () => true },
    admit: async (client) => {
      asked.push(`admit ${client}`);
    },
    admitWait: async (client) => {
      asked.push(`wait ${client}`);
      if (left <= 0) throw new RateLimitedError(30_000);
      left -= 1;
    },
    refreshPending: async () => pending,
    fetch: async (source) => {
      asked.push(`fetch ${source}`);
    },
  };
}

describe('sourceChecker', () => {
  it('counts a wait for a fetch queued already against the chat, and refuses it beyond its allowance', async () => {
    const faked = deps(true, 1);
    const check = sourceChecker(faked, 20);
    expect(await check('group:4242', '77')).toEqual({ kind: 'not-ready' });
    expect(await check('group:4242', '77')).toEqual({ kind: 'limited', retryAfterMs: 30_000 });
    expect(faked.asked).toEqual(['wait tg:77', 'wait tg:77']);
  });

  it('admits and queues a first fetch of a source nobody asked for', async () => {
    const faked = deps(false, 0);
    expect(await sourceChecker(faked, 20)('group:4242', '77')).toEqual({ kind: 'not-ready' });
    expect(faked.asked).toEqual(['admit tg:77', 'fetch group:4242']);
  });
});
