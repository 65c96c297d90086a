import { describe, expect, it } from 'vitest';
import type { FaultKind } from '../../testkit/fake-google/index.ts';
import { client, eventBody, failure, fake, googleError, refresh, userWithCalendar } from './helpers.ts';

describe('fake Google: per-user quota', () => {
  it('admits 600 requests per user in 60 s, refuses the 601st with 403 userRateLimitExceeded, other users unaffected', async () => {
    let now = Date.UTC(2025, 9, 1);
    const google = await fake({ now: () => now });
    const { api, calendarId } = await userWithCalendar(google);
    for (let batch = 0; batch < 599; batch += 50) {
      const size = Math.min(50, 599 - batch);
      await Promise.all(Array.from({ length: size }, () => api.calendars.get({ calendarId })));
    }
    const refused = await failure(api.calendars.get({ calendarId }));
    expect(refused).toMatchObject({ status: 403, body: googleError(403, 'userRateLimitExceeded') });
    expect(refused.body).toMatchObject({
      error: { errors: [{ domain: 'usageLimits', message: 'User Rate Limit Exceeded' }] },
    });
    await userWithCalendar(google); // another user still gets through
    expect(google.counts()).toMatchObject({
      quotaErrors: 1,
      byMethod: { 'calendars.get': 599, 'calendars.insert': 2 },
      errors: { '403 userRateLimitExceeded': 1 },
    });
    now += 60_000;
    await api.calendars.get({ calendarId });
  });

  it('uses a sliding window: requests leave it 60 s after they were made', async () => {
    let now = 0;
    const google = await fake({ now: () => now, userQuotaPerMinute: 4 });
    const { api, calendarId } = await userWithCalendar(google); // t=0: 1
    now = 30_000;
    for (let i = 0; i < 3; i++) await api.calendars.get({ calendarId }); // t=30 s: 4
    expect((await failure(api.calendars.get({ calendarId }))).status).toBe(403);
    now = 60_001; // the request of t=0 has left the window, the three of t=30 s have not
    await api.calendars.get({ calendarId });
    expect((await failure(api.calendars.get({ calendarId }))).status).toBe(403);
    now = 90_001;
    await Promise.all([1, 2, 3].map(() => api.calendars.get({ calendarId })));
    expect(google.counts().quotaErrors).toBe(2);
  });
});

const KINDS: [FaultKind, number, string][] = [
  ['429', 429, 'rateLimitExceeded'],
  ['403-rate', 403, 'rateLimitExceeded'],
  ['403-user-rate', 403, 'userRateLimitExceeded'],
  ['403-quota', 403, 'quotaExceeded'],
  ['500', 500, 'backendError'],
  ['503', 503, 'backendError'],
  ['400', 400, 'invalid'],
  ['403-forbidden', 403, 'forbidden'],
  ['403-required-access', 403, 'requiredAccessLevel'],
  ['403-non-organizer', 403, 'forbiddenForNonOrganizer'],
];

describe('fake Google: faults', () => {
  it.each(KINDS)('%s answers %i %s in Google’s error shape', async (kind, status, reason) => {
    const google = await fake();
    const { api, calendarId } = await userWithCalendar(google);
    google.inject({ kind, times: 1 });
    const answer = await failure(api.events.insert({ calendarId, requestBody: eventBody('abcde') }));
    expect(answer).toMatchObject({ status, body: googleError(status, reason) });
    if (kind === '429') expect(answer.headers?.get('retry-after')).toBe('1');
    await api.events.insert({ calendarId, requestBody: eventBody('abcde') }); // spent: the next one passes
    expect(google.counts()).toMatchObject({
      faulted: 1,
      byMethod: { 'events.insert': 1 },
      errors: { [`${status} ${reason}`]: 1 },
    });
  });

  it('applies rules only to the named methods, and the seeded probability repeats', async () => {
    const pattern = async (): Promise<boolean[]> => {
      const google = await fake({ seed: 7 });
      const { api, calendarId } = await userWithCalendar(google);
      google.inject({ kind: '500', probability: 0.5, methods: ['events.get'] });
      const outcomes: boolean[] = [];
      for (let i = 0; i < 20; i++) {
        await api.events.insert({ calendarId, requestBody: eventBody(`abcde${i}`) });
        outcomes.push(
          await api.events.get({ calendarId, eventId: `abcde${i}` }).then(
            () => true,
            () => false,
          ),
        );
      }
      expect(google.counts().faulted).toBe(outcomes.filter((ok) => !ok).length);
      return outcomes;
    };
    const first = await pattern();
    expect(first).toContain(true);
    expect(first).toContain(false);
    expect(await pattern()).toEqual(first);
  });

  it("applies rules with event ids only to requests about those events (an insert's body, or the path)", async () => {
    const google = await fake();
    const { api, calendarId } = await userWithCalendar(google);
    google.inject({ kind: '400', eventIds: ['abcde1'] });
    await api.events.insert({ calendarId, requestBody: eventBody('abcde0') });
    expect((await failure(api.events.insert({ calendarId, requestBody: eventBody('abcde1') }))).status).toBe(400);
    expect((await failure(api.events.delete({ calendarId, eventId: 'abcde1' }))).status).toBe(400);
    await api.events.delete({ calendarId, eventId: 'abcde0' });
    await api.events.list({ calendarId });
    expect(google.counts()).toMatchObject({
      faulted: 2,
      byMethod: { 'calendars.insert': 1, 'events.insert': 1, 'events.delete': 1, 'events.list': 1 },
    });
  });

  it('reset drops the connection; latency delays answers; clearFaults ends both; close() does not wait', async () => {
    const google = await fake();
    const { api, calendarId } = await userWithCalendar(google);
    google.inject({ kind: 'reset', times: 1 });
    const reset = await failure(api.calendars.get({ calendarId }));
    expect(reset.status).toBeUndefined();
    google.latency(2_000);
    const slow = client(google, google.addUser().refreshToken, { timeout: 100 });
    expect((await failure(slow.calendars.insert({ requestBody: { summary: 'x' } }))).status).toBeUndefined();
    google.clearFaults();
    // Well under the latency that was cleared, with room for a loaded machine.
    const started = Date.now();
    await api.calendars.get({ calendarId });
    expect(Date.now() - started).toBeLessThan(1_000);
    google.latency(60_000);
    const held = api.calendars.get({ calendarId }).catch(() => 'dropped');
    await new Promise((resolve) => setTimeout(resolve, 50));
    await google.close();
    expect(await held).toBe('dropped');
  });

  it('faults the token endpoint only when asked to (google-auth-library retries token requests itself)', async () => {
    const google = await fake();
    const { refreshToken } = google.addUser();
    google.inject({ kind: '503', times: 1 });
    await refresh(google, refreshToken);
    google.inject({ kind: '503', methods: ['token'] });
    expect(await failure(refresh(google, refreshToken))).toMatchObject({
      status: 503,
      body: { error: 'internal_failure' },
    });
    const { tokenRequests, faulted, tokenErrors } = google.counts();
    expect(faulted).toBe(tokenRequests - 1);
    expect(faulted).toBeGreaterThan(1);
    expect(tokenErrors).toEqual({ '503 internal_failure': faulted });
  });

  it('counts what the library’s own retries send (why the adapter turns them off)', async () => {
    const google = await fake();
    const { refreshToken, calendarId } = await userWithCalendar(google);
    google.resetCounts();
    google.inject({ kind: '503', times: 1 });
    await client(google, refreshToken, { retry: true }).calendars.get({ calendarId });
    expect(google.counts()).toMatchObject({ total: 2, faulted: 1, byMethod: { 'calendars.get': 1 } });
  });
});
