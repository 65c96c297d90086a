/**
 * The feed options of push targets in the admin API: `options` in the registration bodies of both kinds (checked
 * as a feed query, strictly typed, and against the timetable's values), shown by `GET`, changed by `PATCH`.
 * The app talks to the fake Google; CalDAV registrations here are refused before any server is asked.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BEARER } from '../admin/admin-app.ts';
import { type GoogleApp, startGoogleApp } from '../http/google-helpers.ts';
import { storeTimetable } from '../http/helpers.ts';

let g: GoogleApp;

beforeAll(async () => {
  g = await startGoogleApp();
  // Subgroups 1 and 2, kinds «практика» and «лекция».
  for (const source of ['group:4242', 'group:4243', 'group:4244']) await storeTimetable(g.ctx, source);
});
afterAll(async () => {
  await g?.close();
});

const OPTIONS = { subgroup: 2, exclude: ['лекция'], alarm: 15, title: '{subject} {room}' };

function send(method: 'POST' | 'PATCH' | 'GET', url: string, payload?: unknown) {
  return g.app.inject({
    method,
    url,
    headers: BEARER,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
}

function registerGoogle(options: unknown, source = 'group:4242') {
  const { refreshToken } = g.fake.addUser();
  return send('POST', '/admin/google-targets', { source, refreshToken, ...(options === undefined ? {} : { options }) });
}

/** Bad `options` and the words that must lead the answer (the field first). */
const REFUSED: readonly [unknown, RegExp][] = [
  [{ subgroup: '2' }, /^options\.subgroup: must be a whole number$/],
  [{ subgroup: 1.5 }, /^options\.subgroup: must be a whole number$/],
  [{ subgroup: 0 }, /^options\.subgroup: must be a whole number from 1 to 99, got "0"$/],
  [{ subgroup: 7 }, /^options\.subgroup: this timetable has no subgroup 7; its subgroups are 1, 2$/],
  [{ alarm: '15' }, /^options\.alarm: must be a whole number$/],
  [{ alarm: 100_000 }, /^options\.alarm: must be a whole number from 0 to 10080/],
  [{ exclude: ['лекция', 3] }, /^options\.exclude: must be a string or an array of strings$/],
  [{ exclude: ['семинар'] }, /^options\.exclude: /],
  [{ title: 5 }, /^options\.title: must be a string$/],
  [{ title: '{nope}' }, /^options\.title: unknown placeholder "\{nope\}"/],
  [{ colour: 'red' }, /^options: unknown field "colour"; the fields are subgroup, exclude, alarm, title$/],
  [[2], /^options: must be an object/],
  ['subgroup=2', /^options: must be an object/],
];

describe('options in POST /admin/<kind>-targets', () => {
  it('refuses bad options of a Google registration with 400 INVALID_BODY naming the field, before Google is asked', async () => {
    const before = g.fake.counts().total;
    for (const [options, words] of REFUSED) {
      const answer = await registerGoogle(options);
      expect(answer.statusCode, JSON.stringify(options)).toBe(400);
      expect(answer.json().code).toBe('INVALID_BODY');
      expect(answer.json().error, JSON.stringify(options)).toMatch(words);
    }
    // Two bad fields at once: both named.
    const both = await registerGoogle({ subgroup: 'x', title: 5 });
    expect(both.json().error).toBe('options.subgroup: must be a whole number; options.title: must be a string');
    const russian = await g.app.inject({
      method: 'POST',
      url: '/admin/google-targets',
      headers: { ...BEARER, 'accept-language': 'ru' },
      payload: { source: 'group:4242', refreshToken: 'x', options: { subgroup: 7 } },
    });
    expect(russian.json().error).toMatch(/^options\.subgroup: в этом расписании нет подгруппы 7; его подгруппы: 1, 2$/);
    expect(g.fake.counts().total).toBe(before);
  });

  it('refuses bad options of a CalDAV registration the same way, before any server is asked', async () => {
    for (const [options, words] of REFUSED) {
      const answer = await send('POST', '/admin/caldav-targets', {
        source: 'group:4242',
        url: 'https://caldav.example',
        username: 'student',
        password: 'app-password',
        options,
      });
      expect(answer.statusCode, JSON.stringify(options)).toBe(400);
      expect(answer.json()).toMatchObject({ code: 'INVALID_BODY', error: expect.stringMatching(words) });
    }
  });

  it('stores valid options and shows them in GET and in the list; a target without them shows null', async () => {
    const withOptions = await registerGoogle(OPTIONS, 'group:4243');
    expect(withOptions.statusCode).toBe(201);
    const { id } = withOptions.json() as { id: string };
    // A Russian placeholder is stored by its English name, as a feed URL stores it.
    const russianTitle = await registerGoogle({ title: '{предмет}', exclude: 'Лекция' }, 'group:4243');
    const without = await registerGoogle(null, 'group:4243');
    const plain = await registerGoogle(undefined, 'group:4243');

    expect((await g.ctx.google.targets.get(id))?.options).toEqual({
      subgroup: 2,
      excludeKinds: ['лекция'],
      alarmMinutes: 15,
      titleTemplate: '{subject} {room}',
    });
    const one = await send('GET', `/admin/google-targets/${id}`);
    expect(one.json().options).toEqual(OPTIONS);
    const view = async (answer: { json(): { id: string } }) =>
      (await send('GET', `/admin/google-targets/${answer.json().id}`)).json().options;
    expect(await view(russianTitle)).toEqual({ exclude: ['лекция'], title: '{subject}' });
    expect(await view(without)).toBeNull();
    expect(await view(plain)).toBeNull();
    const list = (await send('GET', '/admin/google-targets?limit=500')).json() as {
      targets: { id: string; options: unknown }[];
    };
    expect(list.targets.find((target) => target.id === id)?.options).toEqual(OPTIONS);
  });
});

describe('PATCH /admin/<kind>-targets/:id', () => {
  it('changes the options, with a push waiting, and answers the target; {} is the whole timetable', async () => {
    const { id } = (await registerGoogle(undefined, 'group:4244')).json() as { id: string };

    const changed = await send('PATCH', `/admin/google-targets/${id}`, { options: { subgroup: 1, alarm: 0 } });
    expect(changed.statusCode).toBe(200);
    expect(changed.headers['cache-control']).toBe('no-store');
    expect(changed.json()).toMatchObject({
      id,
      options: { subgroup: 1, alarm: 0 },
      pendingChanges: expect.any(Object),
    });
    expect((await g.ctx.google.targets.get(id))?.options).toEqual({ subgroup: 1, alarmMinutes: 0 });
    // No worker runs here: the push that applies them waits in the queue (one per target: the connection's).
    expect(changed.json().pendingPush).toMatchObject({ state: expect.any(String) });

    const whole = await send('PATCH', `/admin/google-targets/${id}`, { options: {} });
    expect(whole.json().options).toEqual({});
    expect((await send('GET', `/admin/google-targets/${id}`)).json().options).toEqual({});
  });

  it('refuses bad options, a body without them, null, an unknown or malformed id', async () => {
    const { id } = (await registerGoogle(undefined, 'group:4244')).json() as { id: string };
    const url = `/admin/google-targets/${id}`;
    const subgroup = await send('PATCH', url, { options: { subgroup: 3 } });
    expect(subgroup.json()).toEqual({
      code: 'INVALID_BODY',
      error: 'options.subgroup: this timetable has no subgroup 3; its subgroups are 1, 2',
    });
    expect((await send('PATCH', url, {})).json()).toMatchObject({
      code: 'INVALID_BODY',
      error: 'options: is required: {} follows the whole timetable',
    });
    expect((await send('PATCH', url, { options: null })).json().error).toMatch(/^options: must be an object/);
    expect((await send('PATCH', url, { options: {}, extra: 1 })).json().code).toBe('INVALID_BODY');
    expect((await g.ctx.google.targets.get(id))?.options).toBeUndefined();

    for (const kind of ['google', 'caldav']) {
      const unknown = await send('PATCH', `/admin/${kind}-targets/${'C'.repeat(22)}`, { options: {} });
      expect(unknown.statusCode, kind).toBe(404);
      expect((await send('PATCH', `/admin/${kind}-targets/nope`, { options: {} })).statusCode, kind).toBe(400);
    }
    const anonymous = await g.app.inject({ method: 'PATCH', url, payload: { options: {} } });
    expect(anonymous.statusCode).toBe(401);
  });
});
