/**
 * Token use records are throttled: one write per token per interval per process, a failed write is tried
 * again at the next use, and distinct tokens are written apart.
 */
import { expect, it } from 'vitest';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { TOKEN_USE_EVERY_MS, TokenUseRecorder } from '../../src/serving/token-use.ts';

const TOKEN_A = 'aaaaaaaaaaaaaaaaaaaaaa';
const TOKEN_B = 'bbbbbbbbbbbbbbbbbbbbbb';

function recorder(fail = false) {
  let now = 1_000_000;
  const writes: Array<[string, string, number]> = [];
  const warnings: unknown[] = [];
  const ctx = { now: () => now, logger: { warn: (...args: unknown[]) => warnings.push(args) } } as unknown as Pick<
    ServiceContext,
    'now' | 'logger'
  >;
  const sink = {
    recordTokenUse: async (id: string, token: string, at: number) => {
      writes.push([id, token, at]);
      if (fail) throw new Error('redis down');
    },
  };
  return { uses: new TokenUseRecorder(ctx, sink), writes, warnings, advance: (ms: number) => (now += ms) };
}

it('writes each token at most once an hour', () => {
  const { uses, writes, advance } = recorder();
  uses.record('id', TOKEN_A);
  advance(TOKEN_USE_EVERY_MS - 1);
  uses.record('id', TOKEN_A);
  uses.record('id', TOKEN_B);
  expect(writes).toEqual([
    ['id', TOKEN_A, 1_000_000],
    ['id', TOKEN_B, 1_000_000 + TOKEN_USE_EVERY_MS - 1],
  ]);
  advance(1);
  uses.record('id', TOKEN_A);
  expect(writes).toHaveLength(3);
  expect(writes[2]).toEqual(['id', TOKEN_A, 1_000_000 + TOKEN_USE_EVERY_MS]);
});

it('tries a failed write again at the next use, and never logs the token', async () => {
  const { uses, writes, warnings } = recorder(true);
  uses.record('id', TOKEN_A);
  await new Promise((resolve) => setImmediate(resolve));
  expect(warnings).toHaveLength(1);
  expect(JSON.stringify(warnings)).not.toContain(TOKEN_A);
  uses.record('id', TOKEN_A);
  expect(writes).toHaveLength(2);
});
