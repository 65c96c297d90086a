/**
 * The sign-in failure budget of an address grows with the distinct people whose credentials the university
 * accepted from it, not with distinct credential strings: one student sending many tokens of his own (or the
 * same person's over and over) keeps the base, many students behind one NAT widen it. Counting an accepted
 * owner that fails (Redis refusing the write) never turns a successful check into an error. The limits run on
 * the real Redis; the check is the route's own step, here answering as the university would.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientLimits } from '../../src/http/client-limits.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { CredentialRejectedError } from '../../src/subscriptions/errors.ts';
import { testContext } from '../support/service.ts';

let ctx: ServiceContext;
let closeContext: () => Promise<void>;

beforeAll(async () => {
  const opened = await testContext({
    FAILED_SIGN_UPS_PER_CLIENT: '3/15m',
    FAILED_SIGN_UPS_PER_ACCEPTED: '2',
    SIGN_UPS_PER_CLIENT: '200/10m',
    SIGN_UPS_TOTAL: '400/1m',
    FAILED_SIGN_UPS_TOTAL: '400/15m',
  });
  ctx = opened.context;
  closeContext = opened.close;
});
afterAll(async () => {
  await closeContext();
});

/** A check the university accepts, of university user `user` (a subscription of theirs, as a sign-up answers). */
const accepted = (user: number | null) => async () => ({ subscription: { upstreamUserId: user } });
/** A check the university refuses. */
const rejected = async (): Promise<never> => {
  throw new CredentialRejectedError();
};

/** How many refused credentials `ip` may send before a new one is refused unsent. */
async function failuresAllowed(limits: ClientLimits, ip: string): Promise<number> {
  let sent = 0;
  for (let i = 0; i < 40; i++) {
    let asked = false;
    const answer = await limits
      .credentialCheck(ip, `wrong-${ip}-${i}`, async () => {
        asked = true;
        return rejected();
      })
      .catch((error: unknown) => error);
    if (!asked) {
      expect((answer as Error).name).toBe('ClientLimitError');
      return sent;
    }
    sent += 1;
  }
  return sent;
}

describe('the failure budget of an address', () => {
  it('does not grow with many tokens of one person, and grows with many people', async () => {
    const limits = new ClientLimits(ctx);
    // One student sends ten tokens of his own (or minted for him): one owner, the base budget of 3.
    const lone = '198.51.100.41';
    for (let i = 0; i < 10; i++) await limits.credentialCheck(lone, `own-token-${i}`, accepted(4242));
    expect(await ctx.knownCredentials.acceptedCount(lone, ctx.config.acceptedCredentialsWindowMs)).toBe(1);
    expect(await failuresAllowed(limits, lone)).toBe(3);

    // Behind a NAT, four students sign in (each possibly twice): three beyond the first, 3 + 3 × 2 = 9.
    const nat = '198.51.100.42';
    for (const user of [1, 2, 3, 4, 1, 2]) await limits.credentialCheck(nat, `token-of-${user}`, accepted(user));
    expect(await ctx.knownCredentials.acceptedCount(nat, ctx.config.acceptedCredentialsWindowMs)).toBe(4);
    expect(await failuresAllowed(limits, nat)).toBe(9);
  });

  it('counts each credential of a profile without a user id as its own owner', async () => {
    const limits = new ClientLimits(ctx);
    const ip = '198.51.100.43';
    for (const credential of ['a-credential', 'b-credential', 'a-credential'])
      await limits.credentialCheck(ip, credential, accepted(null));
    expect(await ctx.knownCredentials.acceptedCount(ip, ctx.config.acceptedCredentialsWindowMs)).toBe(2);
  });

  it('answers a successful check even when counting its owner fails, and logs it', async () => {
    const warnings: unknown[] = [];
    const logger = { ...ctx.logger, warn: (...args: unknown[]) => warnings.push(args) } as ServiceContext['logger'];
    const limits = new ClientLimits({ ...ctx, logger });
    const ip = '198.51.100.44';
    // Redis refuses the count's write (the key is of another type by the time the check answers).
    const result = await limits.credentialCheck(ip, 'works', async () => {
      await ctx.redis.set(ctx.keys.acceptedFrom(ip), 'not a sorted set');
      return { subscription: { upstreamUserId: 77 } };
    });
    expect(result).toEqual({ subscription: { upstreamUserId: 77 } });
    expect(warnings).toHaveLength(1);
    expect(JSON.stringify(warnings[0])).toContain('could not count an accepted credential');
  });
});
