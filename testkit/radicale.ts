/**
 * A real Radicale (Debian's `radicale` package) of a test's own: htpasswd users with `plain` passwords, its own
 * temp folder, a free loopback port. The CalDAV adapter, the push and the pages are tested against it.
 *
 * Radicale runs under a small `sh` that holds a pipe from us on its stdin: when the pipe closes (our `close()`,
 * or the test process dying in any way, even SIGKILL), the shell stops Radicale and removes the folder, so a
 * crashed run leaves no server and no files behind. Both run in a process group of their own, killed whole
 * when SIGTERM was not enough.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../src/runtime/embedded-redis.ts';
import { findOrInstall } from './debian-packages.ts';

/** Where Debian puts it. */
export const RADICALE_PATHS = ['/usr/bin/radicale'] as const;

/** A running Radicale. */
export interface Radicale {
  /** `http://127.0.0.1:<port>/`, the server URL a person would give. */
  url: string;
  /** Changes a user's password (the htpasswd file is re-read on every login). */
  setPassword(user: string, password: string): Promise<void>;
  /** Adds a user (or changes the password of an existing one). */
  addUser(user: string, password: string): Promise<void>;
  /** The folder on disk of the calendar `<url><user>/<calendarSlug>/` (plant files there to fake other clients). */
  collectionDir(user: string, calendarSlug: string): string;
  /** Writes `name` into that folder as another client would have stored it (Radicale lists it at once). */
  plantFile(user: string, calendarSlug: string, name: string, text: string): Promise<void>;
  /** Stops it (SIGTERM, SIGKILL after 3 s) and removes its folder. */
  close(): Promise<void>;
}

/** Users and their passwords to start with (default: none). */
export interface RadicaleOptions {
  users?: Record<string, string>;
}

/**
 * Stops Radicale when stdin closes, then removes the folder unless we wrote `keep` first ($1 = radicale,
 * $2 = config, $3 = folder, $4 = log).
 */
const WRAPPER = `"$1" --config "$2" </dev/null >>"$4" 2>&1 & r=$!
read said
kill -TERM "$r" 2>/dev/null
wait "$r"
[ "$said" = keep ] || rm -rf "$3"`;

const START_ATTEMPTS = 3;
const READY_MS = 15_000;
const KILL_AFTER_MS = 3_000;

/** Starts Radicale (installing Debian's package first when missing and we are root). */
export async function startRadicale(options: RadicaleOptions = {}): Promise<Radicale> {
  const binary = findOrInstall('radicale', RADICALE_PATHS);
  if (binary === undefined)
    throw new Error('the CalDAV tests need Radicale: install it with `sudo apt-get install radicale` (Debian/Ubuntu)');
  const dir = await mkdtemp(join(tmpdir(), 'tts-radicale-'));
  const users = new Map(Object.entries(options.users ?? {}));
  const usersFile = join(dir, 'users');
  const writeUsers = async () => {
    for (const [user, password] of users)
      if (/[:\r\n]/.test(user) || /[\r\n]/.test(password)) throw new Error(`unusable htpasswd entry for ${user}`);
    await writeFile(usersFile, [...users].map(([user, password]) => `${user}:${password}\n`).join(''));
  };
  try {
    await writeUsers();
    let lastError: unknown;
    for (let attempt = 0; attempt < START_ATTEMPTS; attempt++) {
      const port = await freePort();
      try {
        const child = await launch(binary, dir, port);
        const url = `http://127.0.0.1:${port}/`;
        const collections = join(dir, 'collections', 'collection-root');
        const collectionDir = (user: string, slug: string) => join(collections, user, slug);
        return {
          url,
          setPassword: async (user, password) => {
            users.set(user, password);
            await writeUsers();
          },
          addUser: async (user, password) => {
            users.set(user, password);
            await writeUsers();
          },
          collectionDir,
          plantFile: async (user, slug, name, text) => {
            await mkdir(collectionDir(user, slug), { recursive: true });
            await writeFile(join(collectionDir(user, slug), name), text);
          },
          close: async () => {
            await stop(child, 'keep');
            await rm(dir, { recursive: true, force: true });
          },
        };
      } catch (error) {
        lastError = error; // most likely the port was taken between freePort() and the bind: another port
      }
    }
    throw lastError;
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

async function launch(binary: string, dir: string, port: number): Promise<ChildProcess> {
  const config = join(dir, 'config');
  const log = join(dir, `radicale-${port}.log`);
  await writeFile(
    config,
    [
      '[server]',
      `hosts = 127.0.0.1:${port}`,
      '[auth]',
      'type = htpasswd',
      `htpasswd_filename = ${join(dir, 'users')}`,
      'htpasswd_encryption = plain',
      'delay = 0',
      '[rights]',
      'type = owner_only',
      '[storage]',
      `filesystem_folder = ${join(dir, 'collections')}`,
      '[web]',
      'type = none',
      '[logging]',
      'level = warning',
      'mask_passwords = True',
      '',
    ].join('\n'),
  );
  const child = spawn('/bin/sh', ['-c', WRAPPER, 'radicale-wrapper', binary, config, dir, log], {
    stdio: ['pipe', 'ignore', 'ignore'],
    detached: true,
  });
  child.stdin?.on('error', () => undefined);
  let exited = false;
  child.once('exit', () => (exited = true));
  const deadline = Date.now() + READY_MS;
  while (Date.now() < deadline && !exited) {
    if (await answers(port)) return child;
    await new Promise((wake) => setTimeout(wake, 50));
  }
  const tail = (await readFile(log, 'utf8').catch(() => '')).split('\n').slice(-10).join('\n');
  await stop(child, 'keep'); // the next attempt uses the same folder
  throw new Error(`radicale did not answer on port ${port}${exited ? ' (it exited)' : ''}; its log ends:\n${tail}`);
}

/** Whether `GET /` gets any HTTP answer (Radicale redirects it to its web page, 302). */
function answers(port: number): Promise<boolean> {
  return new Promise((done) => {
    const req = request({ host: '127.0.0.1', port, path: '/', method: 'GET', timeout: 1_000 }, (res) => {
      res.resume();
      done(true);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => done(false));
    req.end();
  });
}

/**
 * Closes the wrapper's stdin (it SIGTERMs Radicale, waits for it, and removes the folder unless told to keep
 * it); the whole group gets SIGKILL after 3 s.
 */
async function stop(child: ChildProcess, say = ''): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((done) => child.once('exit', done));
  child.stdin?.end(`${say}\n`);
  const timer = setTimeout(() => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // the group is already gone
    }
  }, KILL_AFTER_MS);
  await exited;
  clearTimeout(timer);
}
