/**
 * The timetable pages over HTTP (fastify inject, stores written directly): the page of a stored timetable,
 * options applied and refused, the preview endpoint, unknown and never fetched timetables, the limit of new
 * timetables, stale data, and the personal page's session.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PERSONAL_COOKIE } from '../../src/http/personal-session.ts';
import { startTestApp, storeTimetable, type TestApp } from '../http/helpers.ts';
import { entry } from '../timetable/fixtures.ts';

const NOW = Date.UTC(2025, 8, 10, 9, 0); // Wednesday 10 September 2025, in an even week.
let test: TestApp;
let publicUrl: string;

beforeAll(async () => {
  test = await startTestApp({ now: () => NOW, env: { FIRST_REQUESTS_PER_CLIENT: '2/1m' } });
  publicUrl = test.ctx.config.publicUrl;
  await storeTimetable(test.ctx, 'group:42', undefined, { stamp: Date.UTC(2025, 8, 5, 7, 0), name: 'ИВТ-21' });
});

afterAll(async () => test?.close());

/** The answer, with its body's character references decoded (the templates escape `=` in URLs too). */
async function get(url: string, headers: Record<string, string> = {}) {
  const response = await test.app.inject({ method: 'GET', url, headers });
  return Object.assign(response, { body: decoded(response.body) });
}

/** The text beside an options field that says why its value was refused; empty when there is none. */
function fieldError(body: string, field: string): string | undefined {
  const match = new RegExp(
    `<p class="field-error" id="opt-${field}-error" data-field-error="${field}"(?: hidden)?>([^<]*)</p>`,
  ).exec(body);
  return match?.[1];
}

function decoded(html: string): string {
  const named: Record<string, string> = { amp: '&', quot: '"', lt: '<', gt: '>', apos: "'" };
  return html.replace(/&(?:#(\d+)|(\w+));/g, (whole, code: string | undefined, name: string | undefined) =>
    code !== undefined ? String.fromCharCode(Number(code)) : (named[name as string] ?? whole),
  );
}

describe('a group page', () => {
  it('shows the name, both weeks with their parity, and every way to subscribe', async () => {
    const response = await get('/timetables/groups/42');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toContain('text/html');
    expect(response.headers['content-security-policy']).toContain("script-src 'self'");
    const body = response.body;
    expect(body).toContain('<h1>ИВТ-21</h1>');
    expect(body).toMatch(/Эта неделя.*8–14 сентября.*чётная неделя/);
    expect(body).toMatch(/Следующая неделя.*15–21 сентября.*нечётная неделя/);
    expect(body).toContain('Понедельник, 15 сентября');
    expect(body).toContain('Алгебра');
    expect(body).toContain('Геометрия');
    const feed = `${publicUrl}/feeds/groups/42.ics`;
    expect(body).toContain(`value="${feed}"`);
    expect(body).toContain(`href="${feed.replace(/^http:/, 'webcal:')}"`);
    expect(body).toContain(
      `https://calendar.google.com/calendar/r?cid=${encodeURIComponent(feed.replace(/^http:/, 'webcal:'))}`,
    );
    expect(body).toMatch(/<div class="qr-code" data-qr><svg[^>]*>/);
    expect(body).toContain('data-copy="#feed-url"');
    // Only the subgroups and kinds this timetable has are offered.
    expect(body).toContain('<option value="1"');
    expect(body).toContain('<option value="2"');
    expect(body).not.toContain('<option value="3"');
    expect(body).toContain('value="лекция"');
    expect(body).toContain('value="практика"');
  });

  it('puts the way into a calendar first, with the steps for the reader’s device first, QR only off phones', async () => {
    const agents = {
      iphone:
        'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1',
      android:
        'Mozilla/5.0 (Linux; arm_64; Android 12; SM-G991B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/122.0.6261.128 YaBrowser/24.4.3.91.00 SA/3 Mobile Safari/537.36',
      windows:
        'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 Edg/126.0.2592.68',
    };
    const calendars = (body: string) => [
      ...body.matchAll(/<details class="calendar-way" data-calendar="(\w+)"( open)?>/g),
    ];
    const iphone = (await get('/timetables/groups/42', { 'user-agent': agents.iphone })).body;
    // The action comes before the classes, right under the heading; on a phone it starts closed.
    const action = iphone.indexOf('data-calendar-action');
    expect(action).toBeGreaterThan(iphone.indexOf('<h1>'));
    expect(action).toBeLessThan(iphone.indexOf('class="weeks"'));
    expect(iphone).toMatch(
      /<details class="calendar-menu" data-calendar-menu>\s*<summary[^>]*data-calendar-action>Добавить в календарь</,
    );
    expect(calendars(iphone).map((match) => [match[1], match[2] === ' open'])).toEqual([
      ['apple', true],
      ['yandex', false],
      ['google', false],
      ['outlook', false],
      ['thunderbird', false],
      ['android', false],
    ]);
    expect(iphone).toContain('Настройки → Приложения → Календарь');
    expect(iphone).not.toContain('data-qr');
    expect(iphone).not.toContain('Наведите камеру телефона');
    expect(iphone).toContain('data-copy="#feed-url"');

    const android = (await get('/timetables/groups/42', { 'user-agent': agents.android })).body;
    expect(calendars(android)[0]?.slice(1)).toEqual(['android', ' open']);
    expect(android).toContain('Приложение Google Календарь на телефоне не умеет добавлять календарь по адресу.');
    expect(android).not.toContain('data-qr');

    const windows = (await get('/timetables/groups/42', { 'user-agent': agents.windows })).body;
    expect(windows).toMatch(/<details class="calendar-menu" data-calendar-menu open>/);
    expect(calendars(windows)[0]?.slice(1)).toEqual(['google', ' open']);
    expect(windows).toMatch(/<div class="qr-code" data-qr><svg/);
    expect(windows).toContain('Наведите камеру телефона');
    // Each calendar says how often it re-reads the feed; push is not offered where it is not set up.
    for (const words of ['раз в 12–24 часа', 'раз в несколько часов', 'несколько раз в сутки', 'каждые 30 минут'])
      expect(windows).toContain(words);
    expect(windows).not.toContain('data-link="push"');
    const english = (await get('/timetables/groups/42?lang=en', { 'user-agent': agents.iphone })).body;
    expect(english).toContain('data-calendar-action>Add to calendar<');
    expect(english).toContain('iPhone, iPad and Mac (Apple Calendar)');
  });

  it('starts this week at today and marks today', async () => {
    // Wednesday 10 September: group 42's classes are all on Mondays, so this week has none left; next week is whole.
    const monday = (await get('/timetables/groups/42')).body;
    expect(monday).not.toContain('Понедельник, 8 сентября');
    expect(monday).toContain('На этой неделе занятий больше нет.');
    expect(monday).toContain('Понедельник, 15 сентября');
    await storeTimetable(
      test.ctx,
      'group:45',
      [
        entry({ id: 1, subjectName: 'Алгебра', weekday: 2 }),
        entry({ id: 2, subjectName: 'Геометрия', weekday: 3 }),
        entry({ id: 3, subjectName: 'История', weekday: 5 }),
      ],
      { stamp: Date.UTC(2025, 8, 5, 7, 0) },
    );
    const body = (await get('/timetables/groups/45')).body;
    expect(body).not.toContain('Вторник, 9 сентября');
    expect(body).toContain('Вторник, 16 сентября');
    expect(body.match(/aria-current="date"/g)).toHaveLength(1);
    expect(body).toMatch(
      /<div class="day today" aria-current="date"><h4>Среда, 10 сентября <span[^>]*>Сегодня<\/span>/,
    );
    expect(body).toContain('Пятница, 12 сентября');
  });

  it('applies options sent by the form without script, empty fields included', async () => {
    const response = await get(
      `/timetables/groups/42?subgroup=1&exclude=${encodeURIComponent('лекция')}&alarm=15&title=${encodeURIComponent('{subject} ({kind})')}`,
    );
    expect(response.statusCode).toBe(200);
    expect(response.body).toContain(
      `${publicUrl}/feeds/groups/42.ics?subgroup=1&exclude=%D0%BB%D0%B5%D0%BA%D1%86%D0%B8%D1%8F&alarm=15"`,
    );
    expect(response.body).toContain('Алгебра');
    expect(response.body).not.toMatch(/<strong class="subject">Геометрия/);
    expect(response.body).not.toMatch(/<strong class="subject">История/);
    expect(response.body).toContain('за 15 минут до начала');
    const empty = await get('/timetables/groups/42?subgroup=&alarm=&title=');
    expect(empty.statusCode).toBe(200);
    expect(empty.body).toContain(`value="${publicUrl}/feeds/groups/42.ics"`);
  });

  it('refuses options the timetable does not have with the form and the reason (400)', async () => {
    const response = await get('/timetables/groups/42?subgroup=7');
    expect(response.statusCode).toBe(400);
    expect(fieldError(response.body, 'subgroup')).toBe(
      'В этом расписании нет подгруппы 7. Выберите одну из: 1, 2 — или «Все подгруппы».',
    );
    expect(response.body).toMatch(/<option value="7" selected>7<\/option>/);
    expect(response.body).toContain('<h1>ИВТ-21</h1>');
    const english = await get('/timetables/groups/42?subgroup=7&lang=en');
    expect(fieldError(english.body, 'subgroup')).toBe(
      'This timetable has no subgroup 7. Choose one of 1, 2, or "All subgroups".',
    );
  });

  it('says a bad option in the page language beside its field, and keeps every value typed', async () => {
    const query = `title=${encodeURIComponent('{predmet}')}&alarm=30&subgroup=2&exclude=${encodeURIComponent('лекция')}`;
    const response = await get(`/timetables/groups/42?${query}`);
    expect(response.statusCode).toBe(400);
    const body = response.body;
    expect(fieldError(body, 'title')).toBe(
      'Неизвестная подстановка {predmet}. Можно использовать: {предмет} {вид} {аудитория} {корпус} {преподаватель} {группы} {примечание}.',
    );
    expect(body).not.toContain('query parameter');
    expect(body).not.toContain('placeholder');
    // The bad title stays in its input, marked invalid and described by the reason; the good values stay chosen.
    expect(body).toMatch(
      /<input type="text" id="opt-title" name="title" maxlength="200" value="\{predmet\}" [^>]*aria-describedby="opt-title-hint opt-title-error" aria-invalid="true"/,
    );
    expect(body).toContain('<option value="30" selected>');
    expect(body).toContain('<option value="2" selected>');
    expect(body).toMatch(/name="exclude" value="лекция" checked/);
    expect(body).toMatch(/<p class="notice error" role="alert" data-options-error[^>]*>Настройки не применены/);
    // No other field is blamed, and nothing refused reaches the links.
    for (const field of ['subgroup', 'alarm', 'exclude']) expect(fieldError(body, field)).toBe('');
    expect(body).toContain(`value="${publicUrl}/feeds/groups/42.ics"`);

    const english = await get(`/timetables/groups/42?${query}&lang=en`);
    expect(fieldError(english.body, 'title')).toBe(
      'Unknown placeholder {predmet}. You can use: {subject} {kind} {room} {building} {teacher} {groups} {note}.',
    );
    expect(english.body).toContain('You can use: {subject} {kind} {room}');

    // Every bad field at once, each beside its own.
    const two = await get(`/timetables/groups/42?alarm=soon&exclude=${encodeURIComponent('семинар')}`);
    expect(two.statusCode).toBe(400);
    expect(fieldError(two.body, 'alarm')).toBe(
      'Напоминание — число минут от 0 до 10080 (неделя), а не «soon»: выберите его из списка.',
    );
    expect(fieldError(two.body, 'exclude')).toBe(
      '«семинар» — не вид занятий этого расписания. Есть такие: лекция, практика.',
    );
    expect(two.body).toContain('<option value="soon" selected>soon</option>');
    expect(two.body).toMatch(/name="exclude" value="семинар" checked aria-invalid="true"/);
  });

  it('refuses an unclosed placeholder beside the title, keeps it typed, and opens at it; the feed answers 400', async () => {
    const response = await get(`/timetables/groups/42?title=${encodeURIComponent('{предмет')}&alarm=15`);
    expect(response.statusCode).toBe(400);
    expect(fieldError(response.body, 'title')).toBe(
      'Подстановка «{предмет» не закрыта: допишите «}», чтобы получилось {предмет}.',
    );
    expect(response.body).not.toContain('Настройки сохранены');
    // The title stays as typed, marked, and takes the focus; the form's submit comes back to the form.
    expect(response.body).toMatch(
      /<input type="text" id="opt-title" name="title" maxlength="200" value="\{предмет" [^>]*aria-invalid="true" autofocus/,
    );
    expect(response.body).toContain(
      '<form class="card options" id="options" method="get" action="/timetables/groups/42"',
    );
    expect(response.body.match(/ autofocus/g)).toHaveLength(1);
    expect(response.body).toContain(`value="${publicUrl}/feeds/groups/42.ics"`);
    const stray = await get(`/timetables/groups/42?title=${encodeURIComponent('{предмет}}')}&lang=en`);
    expect(fieldError(stray.body, 'title')).toBe(
      'The title has a stray "}": braces go only around a placeholder, such as {subject}. Remove it, or use round brackets instead.',
    );
    // Without a refusal nothing takes the focus.
    expect((await get('/timetables/groups/42?alarm=15')).body).not.toContain('autofocus');
    // The first refused field in the form's order takes it when there are several.
    const two = await get(`/timetables/groups/42?alarm=soon&title=${encodeURIComponent('{вид')}`);
    expect(two.body).toMatch(/<select id="opt-alarm" name="alarm"[^>]* autofocus>/);
    expect(two.body.match(/ autofocus/g)).toHaveLength(1);

    const feed = await test.app.inject({
      method: 'GET',
      url: `/feeds/groups/42.ics?title=${encodeURIComponent('{предмет')}`,
    });
    expect(feed.statusCode).toBe(400);
    expect(feed.body).toContain('query parameter title: placeholder \\"{предмет\\" is not closed');
  });

  it('takes the Russian placeholders as the English ones: the same title, links and feed', async () => {
    const russian = await get(`/timetables/groups/42?title=${encodeURIComponent('{вид}: {Предмет}, {аудитория}')}`);
    const english = await get(`/timetables/groups/42?title=${encodeURIComponent('{kind}: {subject}, {room}')}`);
    expect(russian.statusCode).toBe(200);
    const link = (body: string) => /id="feed-url"[^>]*value="([^"]+)"|value="([^"]+)"[^>]*id="feed-url"/.exec(body);
    const feedOf = (body: string) => {
      const match = link(body);
      return match?.[1] ?? match?.[2];
    };
    expect(feedOf(russian.body)).toBe(feedOf(english.body));
    expect(feedOf(russian.body)).toContain('title=%7Bkind%7D%3A+%7Bsubject%7D%2C+%7Broom%7D');
    // The form keeps the spelling typed; the hint of the Russian page names the Russian placeholders.
    expect(russian.body).toContain('value="{вид}: {Предмет}, {аудитория}"');
    expect(russian.body).toContain(
      'Можно использовать: {предмет} {вид} {аудитория} {корпус} {преподаватель} {группы} {примечание}',
    );
    const preview = async (title: string) =>
      (await get(`/timetables/groups/42/preview?title=${encodeURIComponent(title)}`)).json();
    expect(await preview('{предмет} — {преподаватель}')).toEqual(await preview('{subject} — {teacher}'));
    // A feed asked with either spelling is the same variant: the same bytes and the same ETag.
    const feed = async (title: string) =>
      test.app.inject({ method: 'GET', url: `/feeds/groups/42.ics?title=${encodeURIComponent(title)}` });
    const [ru, en] = [await feed('{предмет} [{группы}]'), await feed('{subject} [{groups}]')];
    expect(ru.statusCode).toBe(200);
    expect(ru.body).toBe(en.body);
    expect(ru.headers.etag).toBe(en.headers.etag);
    expect(ru.body).toMatch(/SUMMARY:Алгебра \[/);
    // The Russian default is the default: no option at all.
    const byDefault = await get(`/timetables/groups/42?title=${encodeURIComponent('{предмет} ({вид})')}`);
    expect(byDefault.body).toContain(`value="${publicUrl}/feeds/groups/42.ics"`);
    expect(byDefault.body).toContain('data-default="{предмет} ({вид})"');
  });

  it('answers the preview endpoint with links, QR code and one event, and 400 for bad options', async () => {
    const plain = await get('/timetables/groups/42/preview');
    expect(plain.statusCode).toBe(200);
    const first = plain.json();
    expect(first.feedUrl).toBe(`${publicUrl}/feeds/groups/42.ics`);
    expect(first.qrSvg).toMatch(/^<svg/);
    const withOptions = (
      await get(`/timetables/groups/42/preview?subgroup=2&alarm=30&title=${encodeURIComponent('{kind}: {subject}')}`)
    ).json();
    expect(withOptions.feedUrl).toContain('?subgroup=2&alarm=30&title=');
    expect(withOptions.webcal).toBe(withOptions.feedUrl.replace(/^http:/, 'webcal:'));
    expect(withOptions.qrSvg).not.toBe(first.qrSvg);
    expect(withOptions.preview).toEqual({
      title: 'практика: Геометрия',
      location: 'Главный корпус, 305',
      description: expect.stringContaining('Преподаватель: Иванов Иван Иванович'),
      alarm: 'за 30 минут до начала',
    });
    const bad = await get('/timetables/groups/42/preview?exclude=semin', { 'accept-language': 'en' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toContain('is not a kind of class in this timetable');
    // The page's language (Russian unless the request names another), its code, and the field to mark.
    const placeholder = await get(
      `/timetables/groups/42/preview?alarm=30&title=${encodeURIComponent('{predmet}')}&subgroup=9`,
    );
    expect(placeholder.statusCode).toBe(400);
    const answer = placeholder.json();
    expect(answer).toEqual({
      error: expect.stringMatching(/^Неизвестная подстановка \{predmet\}\. Можно использовать: \{предмет\} \{вид\}/),
      code: 'INVALID_QUERY',
      field: 'title',
      fields: {
        title: answer.error,
        subgroup: 'В этом расписании нет подгруппы 9. Выберите одну из: 1, 2 — или «Все подгруппы».',
      },
    });
    const english = await get(`/timetables/groups/42/preview?title=${encodeURIComponent('{predmet}')}&lang=en`);
    expect(english.json()).toMatchObject({ code: 'INVALID_QUERY', field: 'title', error: /^Unknown placeholder/ });
    expect((await get('/timetables/groups/0/preview')).statusCode).toBe(404);
  });

  it("titles a teacher's classes with their groups, by default and in the preview, without the teacher", async () => {
    const groups = [entry({ id: 1, subjectName: 'Физика', kind: 'лекция', groups: ['09-351', '09-352'] })];
    await storeTimetable(test.ctx, 'employee:7', groups, { stamp: Date.UTC(2025, 8, 5, 7, 0), name: 'Иванов И. И.' });
    const page = await get('/timetables/employees/7');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('data-default="{предмет} ({вид}) — {группы}"');
    expect(page.body).toContain('Физика (лекция) — 09-351, 09-352');
    const preview = (await get('/timetables/employees/7/preview')).json();
    expect(preview.preview.title).toBe('Физика (лекция) — 09-351, 09-352');
    expect(preview.preview.description).not.toContain('Преподаватель');
    // A group's default is an option of its own on a teacher's page: it stays in the feed URL.
    const plain = (
      await get(`/timetables/employees/7/preview?title=${encodeURIComponent('{subject} ({kind})')}`)
    ).json();
    expect(plain.feedUrl).toBe(`${publicUrl}/feeds/employees/7.ics?title=%7Bsubject%7D+%28%7Bkind%7D%29`);
    expect(plain.preview.title).toBe('Физика (лекция)');
    const teacherDefault = encodeURIComponent('{subject} ({kind}) — {groups}');
    expect((await get(`/timetables/employees/7/preview?title=${teacherDefault}`)).json().feedUrl).toBe(
      `${publicUrl}/feeds/employees/7.ics`,
    );
    // A group's page keeps its own default.
    expect((await get('/timetables/groups/42')).body).toContain('data-default="{предмет} ({вид})"');
  });

  it('notes the time of the data when the university stopped answering', async () => {
    await storeTimetable(test.ctx, 'group:43', undefined, { stamp: Date.UTC(2025, 8, 5, 7, 0) });
    expect((await get('/timetables/groups/43')).body).not.toContain('data-stale');
    await test.ctx.registry.activate('group:43', NOW);
    await test.ctx.registry.markStale('group:43', NOW - 3_600_000);
    const body = (await get('/timetables/groups/43')).body;
    // The snapshot's fetch time in the service's zone (Moscow, UTC+3).
    expect(body).toMatch(/data-stale>[^<]*данные на 5 сентября 2025 г\.,? (в )?10:00/);
  });

  it('says how many recent moves it cannot mark when a change record lists fewer than it counts', async () => {
    await storeTimetable(test.ctx, 'group:44', undefined, { stamp: Date.UTC(2025, 8, 5, 7, 0) });
    expect((await get('/timetables/groups/44')).body).not.toContain('data-unmarked-moves');
    const brief = { uid: 'u1', date: '2025-09-09', begin: '10:10', end: '11:40', summary: 'Алгебра', location: '305' };
    const moved = { before: brief, after: { ...brief, date: '2025-09-16' } };
    const record = (at: number, count: number) => ({
      at,
      counts: { added: 0, removed: 0, moved: count, changed: 0 },
      added: [],
      removed: [],
      moved: [moved],
      changed: [],
    });
    // A record older than two weeks is not counted; the recent ones list one move of 40 and of 3.
    for (const change of [record(NOW - 20 * 86_400_000, 9), record(NOW - 86_400_000, 40), record(NOW, 3)])
      await test.ctx.snapshots.appendChange(test.ctx.redis.multi(), 'group:44', change).exec();
    expect((await get('/timetables/groups/44')).body).toMatch(
      /data-unmarked-moves>Переносов за две недели, не отмеченных здесь \(журнал изменений сокращён\): 41\./,
    );
    expect((await get('/timetables/groups/44?lang=en')).body).toContain(
      'not marked here (the change log was shortened): 41.',
    );
  });

  it('answers English when asked', async () => {
    const body = (await get('/timetables/groups/42?lang=en')).body;
    expect(body).toContain('This week');
    expect(body).toContain('even week');
    expect(body).toContain('Copy');
  });
});

describe('timetables that are not there', () => {
  it('answers a friendly 404 page with the search box for ids that cannot be one', async () => {
    for (const url of [
      '/timetables/groups/abc',
      '/timetables/groups/0',
      '/timetables/employees/-5',
      '/timetables/employees/1.5',
    ]) {
      const response = await get(url);
      expect(response.statusCode, url).toBe(404);
      expect(response.headers['content-type']).toContain('text/html');
      expect(response.body).toContain('Расписание не найдено');
      expect(response.body).toMatch(/<form class="search" method="get" action="\/"/);
      expect(response.body).toContain('name="q"');
    }
  });

  it('answers 404 for a group the university said it does not know, without fetching', async () => {
    await test.ctx.registry.rememberMissing('group:4040', 'no such group');
    const response = await get('/timetables/groups/4040');
    expect(response.statusCode).toBe(404);
    expect(response.body).toContain('В университете нет группы с таким номером.');
    const teacher = await get('/timetables/employees/4040');
    expect(teacher.statusCode).toBe(503); // Never fetched: queued, and no worker answers in this test.
  });

  it('fetches a never fetched timetable, says it is loading, and limits new timetables per client', async () => {
    const headers = { 'x-forwarded-for': '' };
    const loading = await test.app.inject({
      method: 'GET',
      url: '/timetables/groups/5001',
      remoteAddress: '10.1.0.1',
      headers,
    });
    expect(loading.statusCode).toBe(503);
    expect(loading.headers['retry-after']).toBeDefined();
    expect(loading.body).toContain('Расписание загружается');
    expect(loading.body).toContain('data-reload-after=');
    expect(await test.ctx.queues.refresh.getJobCountByTypes('waiting', 'prioritized', 'delayed')).toBeGreaterThan(0);
    await test.app.inject({ method: 'GET', url: '/timetables/groups/5002', remoteAddress: '10.1.0.1' });
    const limited = await test.app.inject({ method: 'GET', url: '/timetables/groups/5003', remoteAddress: '10.1.0.1' });
    expect(limited.statusCode).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.body).toContain('Слишком много запросов');
    // A stored timetable costs nothing.
    expect(
      (await test.app.inject({ method: 'GET', url: '/timetables/groups/42', remoteAddress: '10.1.0.1' })).statusCode,
    ).toBe(200);
  });
});

describe('first visits of a never fetched timetable', () => {
  const visit = (url: string, ip = '10.2.0.1') => test.app.inject({ method: 'GET', url, remoteAddress: ip });
  const queued = async (source: string) =>
    (await test.ctx.queues.refresh.getJobs(['waiting', 'prioritized', 'delayed', 'active'])).filter(
      (job) => job.data.source === source,
    );

  it('cost one new timetable and one fetch however many join it, reloads of the loading page included', async () => {
    // The client may start two new timetables a minute: five visits at once and a reload start one.
    const first = await Promise.all(Array.from({ length: 5 }, () => visit('/timetables/groups/5100')));
    expect(first.map((response) => response.statusCode)).toEqual([503, 503, 503, 503, 503]);
    expect(await queued('group:5100')).toHaveLength(1);
    // The loading page reloads after the wait ended: the fetch is still queued, so joining it is free again.
    expect((await visit('/timetables/groups/5100')).statusCode).toBe(503);
    expect(await queued('group:5100')).toHaveLength(1);
    // The feed route joins the same fetch, also for free.
    expect((await visit('/feeds/groups/5100.ics')).statusCode).toBe(503);
    expect((await visit('/timetables/groups/5101')).statusCode).toBe(503);
    expect((await visit('/timetables/groups/5102')).statusCode).toBe(429);
  });
});

describe('the personal page', () => {
  it('sends a browser without a session to the home page, saying so when its sign-in ended elsewhere', async () => {
    for (const cookie of [undefined, `${PERSONAL_COOKIE}=nonsense`]) {
      const response = await get('/timetables/personal', cookie === undefined ? {} : { cookie });
      expect(response.statusCode).toBe(303);
      expect(response.headers.location).toBe('/');
    }
    // A sign-in cookie that no longer signs in (signed out from another device, or expired): told at home.
    for (const cookie of [
      `${PERSONAL_COOKIE}=${'a'.repeat(22)}.${'b'.repeat(43)}`,
      `tts-session=${'a'.repeat(22)}.${'c'.repeat(43)}`,
    ]) {
      const response = await get('/timetables/personal', { cookie });
      expect(response.statusCode).toBe(303);
      expect(response.headers.location).toBe('/?done=signed-out-elsewhere');
      const home = await get('/?done=signed-out-elsewhere');
      expect(home.body).toContain(
        'Вход в этом браузере завершён с другого устройства (или истёк за давностью) — войдите снова ниже.',
      );
      expect(home.body.indexOf('Вход в этом браузере завершён')).toBeLessThan(home.body.indexOf('<h1>'));
    }
  });

  it('shows the signed-in timetable with its secret feed URL, privately', async () => {
    const issued = await test.ctx.subscriptions.create({
      credential: 'student-credential',
      name: 'Петров Пётр',
      upstreamUserId: 777,
      now: NOW,
    });
    const { subscription, token } = issued;
    const cookie = `${PERSONAL_COOKIE}=${subscription.id}.${token}`;
    const before = await get('/timetables/personal', { cookie });
    expect(before.statusCode).toBe(200);
    expect(before.headers['cache-control']).toBe('private, no-store');
    expect(before.body).toContain('Петров Пётр');
    expect(before.body).toContain('data-loading');
    expect(before.body).toContain(`${publicUrl}/feeds/personal/${token}.ics`);
    expect(before.body).toContain('<meta name="robots" content="noindex">');

    await storeTimetable(test.ctx, subscription.source, undefined, { name: 'Моё расписание (ИВТ-21)' });
    const after = await get('/timetables/personal?subgroup=2', { cookie });
    expect(after.statusCode).toBe(200);
    expect(after.body).toContain('<h1>Моё расписание (ИВТ-21)</h1>');
    expect(after.body).toContain(`${publicUrl}/feeds/personal/${token}.ics?subgroup=2`);
    expect(after.body).toMatch(/<strong class="subject">Геометрия/);
    const preview = await get('/timetables/personal/preview?alarm=10', { cookie });
    expect(preview.statusCode).toBe(200);
    expect(preview.headers['cache-control']).toBe('private, no-store');
    expect(preview.json().feedUrl).toBe(`${publicUrl}/feeds/personal/${token}.ics?alarm=10`);
    expect((await get('/timetables/personal/preview')).statusCode).toBe(401);
  });
});

describe('Google push on a server without it', () => {
  it('answers a browser a Russian page leading to the subscription by link, and an API client the code', async () => {
    const page = await get('/google/connect?source=group:42&subgroup=2&alarm=15', {
      accept: 'text/html,application/xhtml+xml,*/*;q=0.8',
    });
    expect(page.statusCode).toBe(503);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.body).toContain('<h1>Отправка в Google Календарь на этом сервере не включена</h1>');
    expect(page.body).toContain(
      '<a class="button" href="/timetables/groups/42?subgroup=2&alarm=15#calendar-action" data-subscribe-link autofocus>Добавить в календарь по ссылке</a>',
    );
    expect(page.body).not.toMatch(/GOOGLE_CLIENT|GOOGLE_NOT_CONFIGURED/);
    // A link naming no timetable leads home.
    const bare = await get('/google/connect', { accept: 'text/html' });
    expect(bare.statusCode).toBe(503);
    expect(bare.body).toContain('<a class="button secondary" href="/">На главную</a>');
    const api = await get('/google/connect?source=group:42', { accept: 'application/json' });
    expect(api.statusCode).toBe(503);
    expect(api.json()).toMatchObject({ code: 'GOOGLE_NOT_CONFIGURED' });
  });
});
