/**
 * Every JSON error answer, over a broad set of bad requests to every route group, is exactly
 * `{ "error", "code" }` with a code of the catalog and the catalog's status, worded in the language the request
 * names (English when it names none). Asked on a real loopback socket, so that fastify's and Node's own
 * refusals are among them.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CODES, type ErrorCode, isErrorCode } from '../../src/http/error-codes.ts';
import { TEST_ADMIN_TOKEN } from '../support/service.ts';
import { startTestApp, type TestApp } from './helpers.ts';

const METRICS_TOKEN = 'c7e1f09a4b3d62e85a17f0c94d2b6e38';
const ADMIN = { authorization: `Bearer ${TEST_ADMIN_TOKEN}` };
const JSON_TYPE = { 'content-type': 'application/json' };
/** Well-formed ids (22 characters) that nothing has. */
const NO_SUCH_ID = 'AAAAAAAAAAAAAAAAAAAAAA';

let t: TestApp;
let base: string;

beforeAll(async () => {
  t = await startTestApp({ env: { METRICS_TOKEN } });
  // A route that fails as a bug would: the fallback 500 must answer in the same shape.
  t.app.get('/test/failing', async () => {
    throw new TypeError('a bug');
  });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as { port: number }).port}`;
});
afterAll(() => t.close());

interface Case {
  what: string;
  path: string;
  init?: RequestInit;
  /** The code it must answer with. */
  code: ErrorCode;
}

/** One or more bad requests to each route group, and the code each must answer. */
const CASES: readonly Case[] = [
  // Fastify's and the app's own refusals.
  { what: 'an unknown route', path: '/nothing/here', code: 'ROUTE_NOT_FOUND' },
  { what: 'a broken percent-escape', path: '/feeds/personal/%E0%A4%A.ics', code: 'MALFORMED_URL' },
  { what: 'an over-long id', path: `/feeds/personal/${'a'.repeat(400)}.ics`, code: 'URL_TOO_LONG' },
  {
    what: 'a bad JSON body',
    path: '/api/subscriptions',
    init: { method: 'POST', headers: JSON_TYPE, body: '{"credential":' },
    code: 'INVALID_BODY',
  },
  {
    what: 'an empty JSON body',
    path: '/api/subscriptions',
    init: { method: 'POST', headers: JSON_TYPE, body: '' },
    code: 'INVALID_BODY',
  },
  {
    what: 'a body of a type the route does not read',
    path: '/api/subscriptions',
    init: { method: 'POST', headers: { 'content-type': 'text/csv' }, body: 'a,b' },
    code: 'UNSUPPORTED_MEDIA_TYPE',
  },
  {
    what: 'a body over the limit',
    path: '/api/subscriptions',
    init: { method: 'POST', headers: JSON_TYPE, body: JSON.stringify({ credential: 'x'.repeat(20_000) }) },
    code: 'BODY_TOO_LARGE',
  },
  { what: 'a failing route', path: '/test/failing', code: 'INTERNAL_ERROR' },
  // Operations.
  { what: 'metrics without the token', path: '/metrics', code: 'METRICS_UNAUTHORIZED' },
  // Feeds.
  { what: 'a feed id that is no number', path: '/feeds/groups/abc.ics', code: 'INVALID_ID' },
  { what: 'a bad subgroup', path: '/feeds/groups/4005.ics?subgroup=x', code: 'INVALID_QUERY' },
  { what: 'a repeated option', path: '/feeds/employees/17.ics?alarm=1&alarm=2', code: 'INVALID_QUERY' },
  { what: 'an unknown personal feed', path: `/feeds/personal/${'x'.repeat(43)}.ics`, code: 'FEED_NOT_FOUND' },
  // Teacher search.
  { what: 'a search too short', path: '/api/employees?q=a', code: 'INVALID_QUERY' },
  // Subscriptions.
  {
    what: 'a sign-up without a credential',
    path: '/api/subscriptions',
    init: { method: 'POST', headers: JSON_TYPE, body: '{}' },
    code: 'INVALID_BODY',
  },
  { what: 'a malformed subscription id', path: '/api/subscriptions/nope', code: 'INVALID_ID' },
  { what: 'a subscription without its token', path: `/api/subscriptions/${NO_SUCH_ID}`, code: 'OWNER_UNAUTHORIZED' },
  {
    what: 'an unknown subscription',
    path: `/api/subscriptions/${NO_SUCH_ID}`,
    init: { headers: { authorization: 'Bearer some-token' } },
    code: 'SUBSCRIPTION_NOT_FOUND',
  },
  // Google.
  { what: 'a connect while Google is not configured', path: '/google/connect', code: 'GOOGLE_NOT_CONFIGURED' },
  {
    what: 'a callback with a malformed state',
    path: '/google/callback?code=a&state=short',
    code: 'GOOGLE_CALLBACK_INVALID',
  },
  { what: 'a malformed target id', path: '/google/targets/nope', code: 'INVALID_ID' },
  {
    what: 'a target without its token',
    path: `/google/targets/${NO_SUCH_ID}`,
    init: { method: 'DELETE' },
    code: 'OWNER_UNAUTHORIZED',
  },
  // Admin.
  { what: 'admin without a token', path: '/admin/sources', code: 'ADMIN_UNAUTHORIZED' },
  {
    what: 'admin with a wrong token',
    path: '/admin/sources',
    init: { headers: { authorization: 'Bearer wrong' } },
    code: 'ADMIN_UNAUTHORIZED',
  },
  { what: 'an unknown admin route', path: '/admin/nothing', init: { headers: ADMIN }, code: 'ROUTE_NOT_FOUND' },
  { what: 'a bad page', path: '/admin/sources?limit=0', init: { headers: ADMIN }, code: 'INVALID_QUERY' },
  { what: 'a bad source', path: '/admin/sources/nonsense/changes', init: { headers: ADMIN }, code: 'INVALID_SOURCE' },
  {
    what: 'an unknown source',
    path: '/admin/sources/group:4005/changes',
    init: { headers: ADMIN },
    code: 'SOURCE_NOT_FOUND',
  },
  {
    what: 'a resync of nothing',
    path: '/admin/resync',
    init: { method: 'POST', headers: { ...ADMIN, ...JSON_TYPE }, body: '{}' },
    code: 'INVALID_BODY',
  },
  {
    what: 'a resync of an unknown subscription',
    path: '/admin/resync',
    init: { method: 'POST', headers: { ...ADMIN, ...JSON_TYPE }, body: `{"subscription":"${NO_SUCH_ID}"}` },
    code: 'SUBSCRIPTION_NOT_FOUND',
  },
  {
    what: 'a resync of a malformed subscription id',
    path: '/admin/resync',
    init: { method: 'POST', headers: { ...ADMIN, ...JSON_TYPE }, body: '{"subscription":"nobody","extra":1}' },
    code: 'INVALID_BODY',
  },
  { what: 'a malformed job id', path: '/admin/jobs/no%20job', init: { headers: ADMIN }, code: 'INVALID_ID' },
  { what: 'an unknown job', path: '/admin/jobs/nobody-1', init: { headers: ADMIN }, code: 'JOB_NOT_FOUND' },
  {
    what: 'an unknown Google target',
    path: `/admin/google-targets/${NO_SUCH_ID}`,
    init: { headers: ADMIN },
    code: 'TARGET_NOT_FOUND',
  },
  {
    what: 'a directory with a bad line',
    path: '/admin/directory',
    init: { method: 'POST', headers: { ...ADMIN, 'content-type': 'text/csv' }, body: 'id,name\n1' },
    code: 'INVALID_BODY',
  },
  // Assets and pages.
  { what: 'an unknown asset', path: '/assets/nothing.css', code: 'ASSET_NOT_FOUND' },
  {
    what: 'a form from another site',
    path: '/timetables/personal',
    init: {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://elsewhere.example' },
      body: 'credential=x',
    },
    code: 'CROSS_ORIGIN_FORM',
  },
  { what: 'a personal preview without signing in', path: '/timetables/personal/preview', code: 'SIGN_IN_REQUIRED' },
  {
    what: 'a preview of a timetable never fetched',
    path: '/timetables/groups/999999/preview',
    code: 'TIMETABLE_NOT_LOADED',
  },
  { what: 'a preview of no group', path: '/timetables/groups/abc/preview', code: 'SOURCE_NOT_FOUND' },
];

/** The answer to `request` with extra headers, as status and parsed JSON body. */
async function ask(request: Case, headers: Record<string, string> = {}, path = request.path) {
  const response = await fetch(`${base}${path}`, {
    ...request.init,
    headers: { ...(request.init?.headers as Record<string, string>), ...headers },
  });
  expect(response.headers.get('content-type'), request.what).toBe('application/json; charset=utf-8');
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** The status a code answers with: its own, but fastify's refusals and the fallback pass another on. */
function expectStatus(status: number, code: ErrorCode, what: string): void {
  if (code === 'BAD_REQUEST') expect(status, what).toBeGreaterThanOrEqual(400);
  else if (code === 'INTERNAL_ERROR') expect(status, what).toBeGreaterThanOrEqual(500);
  else expect(status, what).toBe(ERROR_CODES[code].status);
}

/** Writes raw bytes on a fresh connection; the status and JSON body of what comes back. */
function rawAnswer(head: Buffer | string): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(new URL(base).port), '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      const [head = '', body = ''] = Buffer.concat(chunks).toString('utf8').split('\r\n\r\n', 2);
      const status = Number(head.split(' ')[1]);
      if (Number.isNaN(status)) reject(new Error(`no answer: ${head}`));
      else resolve({ status, body: JSON.parse(body) as Record<string, unknown> });
    });
    socket.write(head);
  });
}

describe('every JSON error answer', () => {
  it('is exactly {error, code}, the code in the catalog with its status', async () => {
    for (const request of CASES) {
      const { status, body } = await ask(request);
      expect(Object.keys(body), request.what).toEqual(['error', 'code']);
      expect(body.error, request.what).toEqual(expect.any(String));
      expect(isErrorCode(body.code), `${request.what}: ${String(body.code)}`).toBe(true);
      expect(body.code, `${request.what}: ${String(body.error)}`).toBe(request.code);
      expectStatus(status, request.code, request.what);
    }
    const raw = [
      { head: 'NOT HTTP AT ALL\r\n\r\n', code: 'MALFORMED_REQUEST' },
      {
        head: Buffer.from('GET /feeds/groups/1.ics?exclude=лекция HTTP/1.1\r\nHost: x\r\n\r\n'),
        code: 'MALFORMED_URL',
      },
      { head: `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'x'.repeat(20_000)}\r\n\r\n`, code: 'HEADERS_TOO_LARGE' },
    ] as const;
    for (const { head, code } of raw) {
      const { status, body } = await rawAnswer(head);
      expect(Object.keys(body), code).toEqual(['error', 'code']);
      expect(body.code).toBe(code);
      expect(status, code).toBe(ERROR_CODES[code].status);
    }
  });

  it('is worded in the language the request names, and in English when it names none', async () => {
    const cyrillic = /[а-яё]/i;
    for (const request of CASES) {
      const english = await ask(request);
      const russian = await ask(request, { 'accept-language': 'ru-RU,ru;q=0.9,en;q=0.8' });
      expect(russian.body.code, request.what).toBe(english.body.code);
      expect(russian.status, request.what).toBe(english.status);
      expect(english.body.error, request.what).not.toMatch(cyrillic);
      expect(russian.body.error, `${request.what}: ${String(russian.body.error)}`).toMatch(cyrillic);
      // Preferred English over Russian: English.
      const preferred = await ask(request, { 'accept-language': 'en-GB,ru;q=0.5' });
      expect(preferred.body.error, request.what).toBe(english.body.error);
    }
  });

  it('takes ?lang= first, then the lang cookie of the pages, then Accept-Language', async () => {
    const request = { what: 'an unknown personal feed', path: `/feeds/personal/${'x'.repeat(43)}.ics` } as Case;
    const english = 'no such personal feed: the link is wrong, or its subscription was deleted';
    const russian = 'такой личной ленты нет: ссылка неверна, или её подписка удалена';
    expect((await ask(request)).body.error).toBe(english);
    expect((await ask(request, {}, `${request.path}?lang=ru`)).body.error).toBe(russian);
    expect((await ask(request, { 'accept-language': 'ru' }, `${request.path}?lang=en`)).body.error).toBe(english);
    expect((await ask(request, { cookie: 'lang=ru', 'accept-language': 'en' })).body.error).toBe(russian);
    expect((await ask(request, { cookie: 'lang=en', 'accept-language': 'ru' })).body.error).toBe(english);
    // A language the service does not speak is no choice: English, not the pages' Russian.
    expect((await ask(request, { 'accept-language': 'de-DE' })).body.error).toBe(english);
  });

  it('keeps the values it names in both languages', async () => {
    const request = { what: 'a bad alarm', path: '/feeds/groups/4005.ics?alarm=99999' } as Case;
    const english = await ask(request);
    const russian = await ask(request, { 'accept-language': 'ru' });
    expect(english.body.error).toBe('query parameter alarm must be a whole number from 0 to 10080, got "99999"');
    expect(russian.body.error).toBe('параметр запроса alarm должен быть целым числом от 0 до 10080, получено "99999"');
  });
});
