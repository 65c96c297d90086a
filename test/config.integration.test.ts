import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { ConfigError, loadConfig, readEnvironment } from '../src/config.ts';
import { runCli } from './support/cli.ts';

function problemsOf(env: Record<string, string>, required: Parameters<typeof loadConfig>[1] = []): readonly string[] {
  try {
    loadConfig(env, required);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

/** A random ADMIN_TOKEN and SECRET_KEY, as an operator would make them. */
const RANDOM_TOKEN = randomBytes(24).toString('hex');
const RANDOM_KEY = randomBytes(32);

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

describe('loadConfig', () => {
  it('applies the documented defaults to an empty environment', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      universityApiUrl: undefined,
      universityAuthHeader: 'Authorization',
      universityAuthScheme: 'Bearer',
      redisUrl: undefined,
      redisPrefix: 'tts',
      port: 8080,
      publicUrl: 'http://localhost:8080',
      timezone: 'Europe/Moscow',
      weekParityAnchors: [],
      holidays: [],
      refreshIntervalMs: 30 * 60_000,
      upstreamRateLimit: 10,
      upstreamTimeoutMs: 15_000,
      adminToken: undefined,
      secretKey: undefined,
      googleApiRootUrl: 'https://www.googleapis.com/',
      googleOauthTokenUrl: 'https://oauth2.googleapis.com/token',
      logLevel: 'info',
      dataDir: '.data',
    });
  });

  it('parses every variable', () => {
    const config = loadConfig({
      UNIVERSITY_API_URL: 'https://uni.example/api',
      UNIVERSITY_AUTH_HEADER: 'X-Api-Key',
      UNIVERSITY_AUTH_SCHEME: '',
      REDIS_URL: 'redis://redis:6379/2',
      REDIS_PREFIX: '{tts}',
      PORT: '9000',
      PUBLIC_URL: 'https://tt.example/',
      TIMEZONE: 'America/New_York',
      WEEK_PARITY_ANCHORS: '2026-02-09, 2025-09-01',
      HOLIDAYS: '2025-11-04,2026-01-07',
      REFRESH_INTERVAL: '15m',
      UPSTREAM_RATE_LIMIT: '2.5',
      UPSTREAM_TIMEOUT: '5s',
      ADMIN_TOKEN: RANDOM_TOKEN,
      SECRET_KEY: RANDOM_KEY.toString('hex'),
      HOST: '::',
      HTTP_REQUEST_TIMEOUT: '20s',
      HTTP_HEADERS_TIMEOUT: '5s',
      HTTP_IDLE_TIMEOUT: '2m',
      HTTP_KEEP_ALIVE_TIMEOUT: '90s',
      HTTP_MAX_CONNECTIONS: '100',
      HTTP_MAX_CONNECTIONS_PER_ADDRESS: '20',
      GOOGLE_CLIENT_ID: 'id',
      GOOGLE_CLIENT_SECRET: 'shh',
      GOOGLE_API_ROOT_URL: 'http://127.0.0.1:9/',
      GOOGLE_OAUTH_TOKEN_URL: 'http://127.0.0.1:9/token',
      LOG_LEVEL: 'debug',
      DATA_DIR: '/var/lib/tts',
    });
    expect(config.universityAuthScheme).toBe('');
    expect(config.publicUrl).toBe('https://tt.example');
    expect(config.weekParityAnchors).toEqual(['2025-09-01', '2026-02-09']);
    expect(config.holidays).toEqual(['2025-11-04', '2026-01-07']);
    expect(config.refreshIntervalMs).toBe(900_000);
    expect(config.upstreamRateLimit).toBe(2.5);
    expect(config.secretKey?.length).toBe(32);
    expect(config.port).toBe(9000);
    expect(config.host).toBe('::');
    expect(config.adminToken).toBe(RANDOM_TOKEN);
    expect(config.httpRequestTimeoutMs).toBe(20_000);
    expect(config.httpHeadersTimeoutMs).toBe(5_000);
    expect(config.httpIdleTimeoutMs).toBe(120_000);
    expect(config.httpKeepAliveTimeoutMs).toBe(90_000);
    expect(config.httpMaxConnections).toBe(100);
    expect(config.httpMaxConnectionsPerAddress).toBe(20);
  });

  it('listens on every IPv4 interface with bounded HTTP timeouts unless told otherwise', () => {
    const config = loadConfig({});
    expect(config.host).toBe('0.0.0.0');
    expect(config.httpRequestTimeoutMs).toBe(30_000);
    expect(config.httpHeadersTimeoutMs).toBe(10_000);
    expect(config.httpMaxConnections).toBe(4096);
    expect(config.httpMaxConnectionsPerAddress).toBe(256);
    expect(problemsOf({ HOST: 'two words' })[0]).toMatch(/^HOST: must be an IP address or host name/);
    expect(problemsOf({ HTTP_REQUEST_TIMEOUT: '5s', HTTP_HEADERS_TIMEOUT: '10s' })).toEqual([
      expect.stringMatching(/^HTTP_HEADERS_TIMEOUT: must not be longer than HTTP_REQUEST_TIMEOUT/),
    ]);
    expect(problemsOf({ HTTP_MAX_CONNECTIONS: '0' })[0]).toMatch(/^HTTP_MAX_CONNECTIONS: must be a whole number/);
  });

  it.each([
    ['one character repeated', 'aaaaaaaaaaaaaaaa'],
    ['four characters', 'abcdabcdabcdabcdabcd'],
    ['a repeated word', 'passwordpassword'],
    ['an ascending run', 'abcdefghijklmnop'],
    ['ascending runs of digits and letters', '0123456789abcdef'],
    ['a descending run', 'fedcba9876543210'],
    ['two runs', 'abcdefgh12345678'],
  ])('refuses an ADMIN_TOKEN that is easy to guess: %s', (_, token) => {
    const problems = problemsOf({ ADMIN_TOKEN: token });
    expect(problems).toEqual([expect.stringMatching(/^ADMIN_TOKEN: is too easy to guess/)]);
    expect(problems[0]).not.toContain(token);
  });

  it('refuses an ADMIN_TOKEN with a space, which the Authorization header could never carry', () => {
    expect(problemsOf({ ADMIN_TOKEN: 'correct horse battery staple' })).toEqual([
      expect.stringMatching(/^ADMIN_TOKEN: must not contain spaces or other whitespace/),
    ]);
  });

  it('accepts a token with short runs among random characters', () => {
    expect(loadConfig({ ADMIN_TOKEN: 'abc7f19c7e2a4d8f0b3' }).adminToken).toBe('abc7f19c7e2a4d8f0b3');
  });

  it('accepts random tokens of the shortest allowed length', () => {
    for (let i = 0; i < 200; i += 1) {
      const token = randomBytes(12).toString('base64url');
      expect(loadConfig({ ADMIN_TOKEN: token }).adminToken).toBe(token);
    }
  });

  it.each([
    ['all zero', '0'.repeat(64)],
    ['one byte repeated', 'ab'.repeat(32)],
    ['a short pattern repeated', Buffer.alloc(32, 'key!').toString('base64')],
  ])('refuses a SECRET_KEY that is not random: %s', (_, key) => {
    expect(problemsOf({ SECRET_KEY: key })).toEqual([expect.stringMatching(/^SECRET_KEY: is not random/)]);
  });

  it('keeps CANCELLED_TITLE_PREFIX as written, empty to switch it off, and refuses a line break in it', () => {
    expect(loadConfig({}).cancelledTitlePrefix).toBe('Отменено: ');
    expect(loadConfig({ CANCELLED_TITLE_PREFIX: '[X] ' }).cancelledTitlePrefix).toBe('[X] ');
    expect(loadConfig({ CANCELLED_TITLE_PREFIX: '' }).cancelledTitlePrefix).toBe('');
    expect(() => loadConfig({ CANCELLED_TITLE_PREFIX: 'X\nDTSTART:1' })).toThrow(
      /CANCELLED_TITLE_PREFIX: must not contain line breaks/,
    );
  });

  it('is frozen', () => {
    const config = loadConfig({});
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.holidays)).toBe(true);
  });

  it('names every bad variable in one error, with the reason', () => {
    const problems = problemsOf({
      UNIVERSITY_API_URL: 'ftp://x',
      PORT: '70000',
      TIMEZONE: 'Mars/Olympus',
      WEEK_PARITY_ANCHORS: '2025-02-30',
      HOLIDAYS: '2025-13-01',
      REFRESH_INTERVAL: 'often',
      UPSTREAM_RATE_LIMIT: '-1',
      LOG_LEVEL: 'loud',
      REDIS_URL: 'localhost:6379',
    });
    const named = problems.map((problem) => problem.split(':')[0]);
    expect(named.sort()).toEqual([
      'HOLIDAYS',
      'LOG_LEVEL',
      'PORT',
      'REDIS_URL',
      'REFRESH_INTERVAL',
      'TIMEZONE',
      'UNIVERSITY_API_URL',
      'UPSTREAM_RATE_LIMIT',
      'WEEK_PARITY_ANCHORS',
    ]);
    expect(problems.find((p) => p.startsWith('PORT'))).toContain('70000');
    expect(problems.find((p) => p.startsWith('WEEK_PARITY_ANCHORS'))).toContain('2025-02-30');
  });

  it('never echoes a secret value in its error', () => {
    const problems = problemsOf({ ADMIN_TOKEN: 'short-secret', SECRET_KEY: 'not-a-32-byte-key' });
    expect(problems).toHaveLength(2);
    expect(problems.join('\n')).not.toMatch(/short-secret|not-a-32-byte-key/);
  });

  it('accepts a base64 SECRET_KEY and rejects one of the wrong length', () => {
    expect(loadConfig({ SECRET_KEY: RANDOM_KEY.toString('base64') }).secretKey).toEqual(RANDOM_KEY);
    expect(problemsOf({ SECRET_KEY: Buffer.alloc(16).toString('base64') })[0]).toMatch(/^SECRET_KEY: must be 32 bytes/);
  });

  it('reports settings a command requires, together with the invalid ones', () => {
    expect(problemsOf({ PORT: 'x' }, ['UNIVERSITY_API_URL'])).toEqual([
      expect.stringMatching(/^PORT:/),
      'UNIVERSITY_API_URL: is required for this command',
    ]);
  });

  it('requires GOOGLE_CLIENT_SECRET with GOOGLE_CLIENT_ID', () => {
    expect(problemsOf({ GOOGLE_CLIENT_ID: 'id' })).toEqual([
      'GOOGLE_CLIENT_SECRET: is required when GOOGLE_CLIENT_ID is set',
    ]);
  });

  it('reads HOLIDAYS from a file with one date per line and # comments', async () => {
    const dir = await tempDir('tts-holidays-');
    const file = join(dir, 'holidays.txt');
    await writeFile(file, '# national holidays\n2025-11-04  # unity day\n\n2026-01-07\n');
    expect(loadConfig({ HOLIDAYS: file }).holidays).toEqual(['2025-11-04', '2026-01-07']);
    await writeFile(file, '2025-11-04\nnot-a-date\n');
    expect(problemsOf({ HOLIDAYS: file })).toEqual(['HOLIDAYS: not a valid YYYY-MM-DD date: not-a-date']);
    expect(problemsOf({ HOLIDAYS: join(dir, 'missing.txt') })[0]).toMatch(
      /^HOLIDAYS: not a date list and not a readable file/,
    );
  });

  it('fills in from a .env file what the real environment does not set, and lets the environment win', async () => {
    const dir = await tempDir('tts-dotenv-');
    await writeFile(join(dir, '.env'), 'PORT=9999\nTIMEZONE=Asia/Tokyo\n# comment\n');
    vi.stubEnv('PORT', '1234');
    try {
      const env = readEnvironment(dir);
      expect(env.TIMEZONE).toBe('Asia/Tokyo');
      expect(env.PORT).toBe('1234');
    } finally {
      vi.unstubAllEnvs();
    }
  });
});

describe('bad configuration on the command line', () => {
  it('prints one error naming every bad variable and exits non-zero', async () => {
    const result = await runCli(['start'], { env: { PORT: 'abc', TIMEZONE: 'Nowhere/Land', ADMIN_TOKEN: 'tiny' } });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('Invalid configuration:');
    for (const name of ['PORT', 'TIMEZONE', 'ADMIN_TOKEN', 'UNIVERSITY_API_URL'])
      expect(result.stderr).toContain(`  - ${name}:`);
    expect(result.stderr).not.toContain('tiny');
  });
});
