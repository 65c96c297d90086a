/**
 * Files only this user may read: the data folder holds the embedded Redis's password and data (feed token
 * hashes, encrypted credentials), and another local user who can read or write them can read feeds.
 */
import { chmod, mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** Creates `dir` (and parents) when missing and makes it 0700, also when it existed with looser modes. */
export async function ensurePrivateDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
}

/** Replaces `file` atomically with `text`, mode 0600 from its first byte. */
export async function writePrivateFile(file: string, text: string): Promise<void> {
  const draft = `${file}.${process.pid}.tmp`;
  await rm(draft, { force: true });
  await writeFile(draft, text, { mode: 0o600, flag: 'wx' });
  await rename(draft, file);
}

/** Makes every folder under `dir` 0700 and every file 0600: data written by earlier versions was 0644. */
export async function restrictTree(dir: string): Promise<void> {
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    const path = join(entry.parentPath, entry.name);
    if (entry.isDirectory()) await chmod(path, 0o700);
    else if (entry.isFile()) await chmod(path, 0o600);
  }
}
