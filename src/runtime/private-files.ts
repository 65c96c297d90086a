/**
 * Files only this user may read: the data folder holds the embedded Redis's password and data (feed token
 * hashes, encrypted credentials), and another local user who can read or write them can read feeds.
 */
import { chmod, mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';

/** The data folder's default name (`DATA_DIR=.data`): a folder of that name is the service's, whoever made it. */
const OWN_FOLDER_NAME = '.data';

/**
 * Creates `dir` (and parents) 0700 when missing. An existing folder is made 0700 only when it is ours: named
 * `.data`, or `own` (a folder inside it). A DATA_DIR the user chose, such as `.` or their home, keeps its mode;
 * what we keep in it is 0600 or in a 0700 folder of our own.
 */
export async function ensurePrivateDir(dir: string, options: { own?: boolean } = {}): Promise<void> {
  const created = await mkdir(dir, { recursive: true, mode: 0o700 });
  if (created !== undefined) return;
  if (options.own === true || basename(resolve(dir)) === OWN_FOLDER_NAME) await chmod(dir, 0o700);
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
