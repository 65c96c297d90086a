/**
 * The one-instance lock of a data folder: the process that runs the folder's embedded Redis (or its demo)
 * holds `<dataDir>/instance.lock`, so that a second `demo` or `start` there fails clearly instead of joining
 * the first one's Redis with a different university behind it.
 */
import { readFileSync, unlinkSync } from 'node:fs';
import { link, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { FolderLockedError } from './errors.ts';
import { ensurePrivateDir } from './private-files.ts';

const LOCK_FILE = 'instance.lock';

const lockSchema = z.object({ pid: z.number().int().positive(), command: z.string(), startedAt: z.string() });

/** What the lock file records about its holder. */
export type FolderLockRecord = z.infer<typeof lockSchema>;

/** A held lock. */
export interface FolderLock {
  /** Removes the lock file when it is still ours (async, for the ordered shutdown). */
  release(): Promise<void>;
  /** The same, synchronously, for an emergency exit. */
  releaseSync(): void;
}

/** True when a process with this id exists (EPERM: it exists but belongs to another user). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Takes the lock of `dataDir` for `command`, or throws {@link FolderLockedError} naming the live holder.
 * A lock whose process is gone (kill -9, a crash, a reboot) is stale and taken over.
 */
export async function acquireFolderLock(dataDir: string, command: string): Promise<FolderLock> {
  await ensurePrivateDir(dataDir);
  const file = join(dataDir, LOCK_FILE);
  const mine: FolderLockRecord = { pid: process.pid, command, startedAt: new Date().toISOString() };
  // Written whole under a private name, then linked into place: link() fails when the lock exists, and a
  // lock file is never seen half-written.
  const draft = `${file}.${process.pid}.tmp`;
  await writeFile(draft, `${JSON.stringify(mine)}\n`, { mode: 0o600 });
  try {
    // Two rounds: the second follows the removal of a stale lock; losing that race to another starter means
    // meeting a live holder like any other.
    for (let round = 0; round < 2; round++) {
      try {
        await link(draft, file);
        return lockHandle(file);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const text = await readLockText(file);
      const holder = text === undefined ? undefined : lockSchema.safeParse(parse(text)).data;
      // Our own pid in an old lock is stale too: in a container every run may have the same pid.
      if (holder && holder.pid !== process.pid && isAlive(holder.pid)) throw new FolderLockedError(holder);
      // Removed only when unchanged since read, so that a lock another starter just took is left alone.
      if (text !== undefined && (await readLockText(file)) === text) await rm(file, { force: true });
    }
    throw new FolderLockedError((await readLock(file)) ?? { pid: 0, command: 'process', startedAt: '' });
  } finally {
    await rm(draft, { force: true });
  }
}

/** The holder recorded in `dataDir`'s lock, if any (alive or not). */
export async function folderLockHolder(dataDir: string): Promise<FolderLockRecord | undefined> {
  return readLock(join(dataDir, LOCK_FILE));
}

function lockHandle(file: string): FolderLock {
  const ours = (text: string | undefined) =>
    text !== undefined && lockSchema.safeParse(parse(text)).data?.pid === process.pid;
  return {
    release: async () => {
      if (ours(await readLockText(file))) await rm(file, { force: true });
    },
    releaseSync: () => {
      try {
        if (ours(readFileSync(file, 'utf8'))) unlinkSync(file);
      } catch {
        // Already gone: nothing to release.
      }
    },
  };
}

async function readLockText(file: string): Promise<string | undefined> {
  return readFile(file, 'utf8').catch(() => undefined);
}

async function readLock(file: string): Promise<FolderLockRecord | undefined> {
  const text = await readLockText(file);
  return text === undefined ? undefined : lockSchema.safeParse(parse(text)).data;
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
