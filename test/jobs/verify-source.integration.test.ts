import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { toHttpError } from '../../src/http/errors.ts';
import { SourceNotFoundError, SourceNotReadyError } from '../../src/jobs/errors.ts';
import { REFRESH_PRIORITY } from '../../src/jobs/queues.ts';
import { requireFetched } from '../../src/jobs/verify-source.ts';
import type { ServiceContext } from '../../src/runtime/context.ts';
import { storeTimetable } from '../http/helpers.ts';
import { testContext } from '../support/service.ts';

describe('requireFetched', () => {
  let ctx: ServiceContext;
  let close: () => Promise<void>;

  beforeEach(async () => {
    ({ context: ctx, close } = await testContext());
  });
  afterEach(() => close());

  it('passes a source fetched once, without queueing anything', async () => {
    await storeTimetable(ctx, 'group:4242', []);
    await requireFetched(ctx, 'group:4242', 100);
    expect(await ctx.queues.refresh.count()).toBe(0);
  });

  it('refuses an id the university said it does not know, without asking again', async () => {
    await ctx.registry.rememberMissing('employee:99', 'Сотрудник не найден');
    const refused = await requireFetched(ctx, 'employee:99', 100).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(SourceNotFoundError);
    expect(toHttpError(refused)).toMatchObject({
      statusCode: 404,
      message: 'employee 99 is not known to the university: Сотрудник не найден',
    });
    expect(await ctx.queues.refresh.count()).toBe(0);
  });

  it('queues a first fetch ahead of background refreshes and answers 503 with Retry-After when it takes too long', async () => {
    const started = performance.now();
    const refused = await requireFetched(ctx, 'group:7', 300).catch((error: unknown) => error);
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    expect(refused).toBeInstanceOf(SourceNotReadyError);
    const answer = toHttpError(refused);
    expect(answer?.statusCode).toBe(503);
    expect(answer?.headers).toEqual({ 'retry-after': '10' });
    expect(answer?.message).toMatch(/group 7 has not been fetched from the university yet/);
    const [job] = await ctx.queues.refresh.getJobs(['prioritized']);
    expect(job?.data).toMatchObject({ source: 'group:7', reason: 'demand' });
    expect(job?.priority).toBe(REFRESH_PRIORITY.demand);
    expect(await ctx.registry.get('group:7')).toBeUndefined();
  });
});
