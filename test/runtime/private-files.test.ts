import { chmod, mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ensurePrivateDir } from '../../src/runtime/private-files.ts';

const roots: string[] = [];
afterEach(async () => {
  for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true });
});

async function root(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tts-private-'));
  roots.push(dir);
  return dir;
}

async function mode(path: string): Promise<number> {
  return (await stat(path)).mode & 0o777;
}

/** An existing folder with the usual 0755 mode. */
async function existing(path: string): Promise<string> {
  await mkdir(path, { recursive: true });
  await chmod(path, 0o755);
  return path;
}

describe('ensurePrivateDir', () => {
  it('creates a missing folder, and the parents it needs, readable by us alone', async () => {
    const base = await root();
    await ensurePrivateDir(join(base, 'new/data'));
    expect(await mode(join(base, 'new'))).toBe(0o700);
    expect(await mode(join(base, 'new/data'))).toBe(0o700);
  });

  it('leaves the mode of an existing folder the user chose (DATA_DIR=. or their home)', async () => {
    const chosen = await existing(join(await root(), 'home'));
    await ensurePrivateDir(chosen);
    expect(await mode(chosen)).toBe(0o755);
  });

  it('tightens an existing folder of ours: .data, or one marked own', async () => {
    const base = await root();
    const data = await existing(join(base, '.data'));
    const inside = await existing(join(base, 'home/redis'));
    await ensurePrivateDir(data);
    await ensurePrivateDir(inside, { own: true });
    expect(await mode(data)).toBe(0o700);
    expect(await mode(inside)).toBe(0o700);
    expect(await mode(join(base, 'home'))).toBe(0o755);
  });
});
