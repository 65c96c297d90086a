import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FolderLockedError } from '../../src/runtime/errors.ts';
import { acquireFolderLock, folderLockHolder } from '../../src/runtime/folder-lock.ts';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function dataDir(): Promise<string> {
  const dir = join(await mkdtemp(join(tmpdir(), 'tts-lock-')), '.data');
  dirs.push(dir);
  return dir;
}

/** Beyond Linux's largest pid (2^22): no process has it. */
const GONE_PID = 4_194_305;

describe('the instance lock of a data folder', () => {
  it('is a 0600 file with our pid in a 0700 folder, removed on release', async () => {
    const dir = await dataDir();
    const lock = await acquireFolderLock(dir, 'demo');
    expect(await folderLockHolder(dir)).toMatchObject({ pid: process.pid, command: 'demo' });
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    expect((await stat(join(dir, 'instance.lock'))).mode & 0o777).toBe(0o600);
    await lock.release();
    expect(await folderLockHolder(dir)).toBeUndefined();
  });

  it('refuses a second holder while the first process lives, naming its command and pid', async () => {
    const dir = await dataDir();
    await acquireFolderLock(dir, 'demo');
    // pid 1 always lives; our own pid would count as stale (a container's pid repeats across runs).
    await writeFile(join(dir, 'instance.lock'), JSON.stringify({ pid: 1, command: 'demo', startedAt: '' }));
    const second = acquireFolderLock(dir, 'start');
    await expect(second).rejects.toBeInstanceOf(FolderLockedError);
    await expect(second).rejects.toThrow(
      'another demo is running in this folder (pid 1); stop it or use another folder',
    );
    expect(JSON.parse(await readFile(join(dir, 'instance.lock'), 'utf8'))).toMatchObject({ pid: 1 });
  });

  it('takes over a lock whose process is gone, or that is unreadable', async () => {
    const dir = await dataDir();
    await acquireFolderLock(dir, 'demo').then((lock) => lock.release());
    for (const stale of [JSON.stringify({ pid: GONE_PID, command: 'demo', startedAt: '' }), '', '{"pid":']) {
      await writeFile(join(dir, 'instance.lock'), stale);
      const lock = await acquireFolderLock(dir, 'start');
      expect(await folderLockHolder(dir)).toMatchObject({ pid: process.pid, command: 'start' });
      lock.releaseSync();
      expect(await folderLockHolder(dir)).toBeUndefined();
    }
  });

  it('never releases a lock that another process holds now', async () => {
    const dir = await dataDir();
    const lock = await acquireFolderLock(dir, 'demo');
    await writeFile(join(dir, 'instance.lock'), JSON.stringify({ pid: 1, command: 'demo', startedAt: '' }));
    await lock.release();
    lock.releaseSync();
    expect(await folderLockHolder(dir)).toMatchObject({ pid: 1 });
  });
});
