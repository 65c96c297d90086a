/**
 * Bounds of subscriber variants: options a timetable cannot honour answer 400 naming what it has,
 * titles are capped, only a few different variants are rendered at once, and a variant has a byte cap.
 */
import ICAL from 'ical.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_SUMMARY_LENGTH } from '../../src/timetable/event-text.ts';
import { entry } from '../timetable/fixtures.ts';
import { startTestApp, storeTimetable, type TestApp } from './helpers.ts';

let t: TestApp;

beforeAll(async () => {
  t = await startTestApp({ feeds: { variants: { maxRenders: 1 } } });
  await storeTimetable(t.ctx, 'group:600');
});
afterAll(() => t.close());

const get = (url: string) => t.app.inject({ method: 'GET', url });
const title = (template: string) => `/feeds/groups/600.ics?title=${encodeURIComponent(template)}`;

function summaries(ics: string): string[] {
  const component = new ICAL.Component(ICAL.parse(ics));
  return component.getAllSubcomponents('vevent').map((event) => String(event.getFirstPropertyValue('summary')));
}

describe('options the timetable cannot honour', () => {
  it('refuses an unknown placeholder, naming the placeholders there are', async () => {
    const response = await get(title('{subject} {bogus}'));
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({
      error:
        'query parameter title: unknown placeholder "{bogus}"; the placeholders are {subject}, {kind}, {room}, {building}, {teacher}, {groups}, {note}',
      code: 'INVALID_QUERY',
    });
  });

  it('refuses a title with more than 8 placeholders', async () => {
    const response = await get(title('{teacher}'.repeat(9)));
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toBe('query parameter title uses 9 placeholders; at most 8 are allowed');
    expect((await get(title('{teacher}'.repeat(8)))).statusCode).toBe(200);
  });

  it('refuses a subgroup the timetable does not have, naming those it has', async () => {
    const response = await get('/feeds/groups/600.ics?subgroup=3');
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({
      error: 'query parameter subgroup: this timetable has no subgroup 3; its subgroups are 1, 2',
      code: 'INVALID_QUERY',
    });
    expect((await get('/feeds/groups/600.ics?subgroup=2')).statusCode).toBe(200);
  });

  it('says so when a timetable has no subgroups at all', async () => {
    await storeTimetable(t.ctx, 'group:601', [entry({ id: 1, subjectName: 'Физика', kind: 'лекция', note: '' })]);
    const response = await get('/feeds/groups/601.ics?subgroup=1');
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toBe(
      'query parameter subgroup: this timetable has no subgroup 1; it has no subgroups',
    );
  });

  it('refuses an exclude kind none of its classes has, naming the kinds', async () => {
    const response = await get(`/feeds/groups/600.ics?exclude=${encodeURIComponent('лекция,семинар')}`);
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({
      error:
        'query parameter exclude: "семинар" is not a kind of class in this timetable; its kinds are лекция, практика',
      code: 'INVALID_QUERY',
    });
  });
});

describe('subscribed URLs stay valid', () => {
  const exam = entry({ id: 9, subjectName: 'Алгебра', kind: 'экзамен', note: '', finishDate: '2025-09-29' });

  it('accepts a subgroup or kind the timetable had, through exams and holidays, and still refuses typos', async () => {
    await storeTimetable(t.ctx, 'group:610');
    await storeTimetable(t.ctx, 'group:610', [exam], { stamp: Date.UTC(2025, 8, 21) });
    const during = await get(`/feeds/groups/610.ics?subgroup=2&exclude=${encodeURIComponent('ЛЕКЦИЯ')}`);
    expect(during.statusCode).toBe(200);
    expect([...new Set(summaries(during.body))]).toEqual(['Алгебра (экзамен)']);
    expect((await get('/feeds/groups/610.ics?subgroup=3')).json()).toEqual({
      error: 'query parameter subgroup: this timetable has no subgroup 3; its subgroups are 1, 2',
      code: 'INVALID_QUERY',
    });
    expect((await get(`/feeds/groups/610.ics?exclude=${encodeURIComponent('семинар')}`)).json()).toEqual({
      error:
        'query parameter exclude: "семинар" is not a kind of class in this timetable; its kinds are лекция, практика, экзамен',
      code: 'INVALID_QUERY',
    });
    await storeTimetable(t.ctx, 'group:610', [], { stamp: Date.UTC(2025, 8, 22) });
    const empty = await get(`/feeds/groups/610.ics?subgroup=1&exclude=${encodeURIComponent('практика,экзамен')}`);
    expect(empty.statusCode).toBe(200);
  });

  it('reads the current timetable of a source stored before its values were kept', async () => {
    await storeTimetable(t.ctx, 'group:611');
    await t.ctx.redis.del(t.ctx.keys.optionValues('group:611'));
    expect((await get('/feeds/groups/611.ics?subgroup=2')).statusCode).toBe(200);
    expect((await get('/feeds/groups/611.ics?subgroup=3')).statusCode).toBe(400);
  });

  it('forgets the values with the source', async () => {
    await storeTimetable(t.ctx, 'group:612');
    expect(await t.ctx.snapshots.optionValues('group:612')).toEqual({
      subgroups: [1, 2],
      kinds: ['лекция', 'практика'],
    });
    await t.ctx.registry.remove('group:612');
    expect(await t.ctx.redis.exists(t.ctx.keys.optionValues('group:612'))).toBe(0);
  });
});

describe('bounded work', () => {
  it('caps an expanded title at MAX_SUMMARY_LENGTH characters, however long the upstream field', async () => {
    const long = 'Преподаватель'.repeat(2_000);
    await storeTimetable(t.ctx, 'group:602', [
      entry({
        id: 1,
        subjectName: 'Физика',
        kind: 'лекция',
        teacher: { id: 1, lastName: long, firstName: '', middleName: '' },
      }),
    ]);
    const response = await get(`/feeds/groups/602.ics?title=${encodeURIComponent('{teacher}'.repeat(8))}`);
    expect(response.statusCode).toBe(200);
    const [summary] = summaries(response.body);
    expect(summary).toHaveLength(MAX_SUMMARY_LENGTH);
    expect(summary?.endsWith('…')).toBe(true);
    // The default feed already carries the long name in every DESCRIPTION; eight copies in SUMMARY add little.
    const plain = await get('/feeds/groups/602.ics');
    expect(response.body.length).toBeLessThan(plain.body.length * 1.2);
  });

  it('renders one new variant at a time here, answering 503 with Retry-After to a second one meanwhile', async () => {
    const [first, second] = await Promise.all([get(title('{subject} A')), get(title('{subject} B'))]);
    const statuses = [first.statusCode, second.statusCode].sort();
    expect(statuses).toEqual([200, 503]);
    const refused = first.statusCode === 503 ? first : second;
    expect(refused.headers['retry-after']).toBe('2');
    expect(refused.json().error).toMatch(/^too many feed variants are being prepared/);
    // The same variant asked twice at once is one render, not a refusal.
    const same = await Promise.all([get(title('{subject} C')), get(title('{subject} C'))]);
    expect(same.map((response) => response.statusCode)).toEqual([200, 200]);
  });
});

describe('the byte cap of a variant', () => {
  /** Below the plain feed of the test timetable, so that any title that lengthens it goes over. */
  const CAP = 2048;
  let small: TestApp;

  beforeAll(async () => {
    small = await startTestApp({ feeds: { maxVariantBytes: CAP } });
    await storeTimetable(small.ctx, 'group:620');
  });
  afterAll(() => small.close());

  it('refuses a variant over the cap, naming its size and the cap, and still serves the plain feed', async () => {
    const plain = await small.app.inject({ method: 'GET', url: '/feeds/groups/620.ics' });
    expect(plain.statusCode).toBe(200);
    expect(plain.headers['content-type']).toMatch(/^text\/calendar/);
    // The cap bounds variants only: the stored feed is served whatever its size.
    expect(plain.rawPayload.length).toBeGreaterThan(CAP);

    const long = encodeURIComponent(`${'{subject} '.repeat(4)}{teacher}`);
    const refused = await small.app.inject({ method: 'GET', url: `/feeds/groups/620.ics?title=${long}` });
    expect(refused.statusCode).toBe(400);
    expect(refused.headers['content-type']).toMatch(/^application\/json/);
    const { error } = refused.json() as { error: string };
    const [, size] =
      /^these options make the feed (\d+) bytes, more than its limit of 2048: use a shorter title$/.exec(error) ?? [];
    expect(Number(size)).toBeGreaterThan(plain.rawPayload.length);

    expect((await small.app.inject({ method: 'GET', url: '/feeds/groups/620.ics' })).statusCode).toBe(200);
  });
});
