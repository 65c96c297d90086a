/**
 * Lua is code in `.lua` files: one script per file beside the module that runs it, its KEYS and ARGV described
 * at its top, loaded by name; and the files ship with the sources (the image copies src/ whole).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');
const src = join(root, 'src');

function filesUnder(dir: string, suffix: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith(suffix))
    .map((name) => join(dir, name));
}

const scripts = filesUnder(src, '.lua');
/** Shared local functions put in front of the scripts that name them (lib/lua-script.ts). */
const PRELUDE = '.prelude.lua';
const modules = filesUnder(src, '.ts');

describe('Lua scripts', () => {
  it('are all in .lua files: no TypeScript module holds a script', () => {
    const holding = modules.filter((file) => readFileSync(file, 'utf8').includes('redis.call('));
    expect(holding.map((file) => relative(root, file))).toEqual([]);
    expect(scripts.length).toBeGreaterThan(0);
  });

  it('say at their top which KEYS and ARGV they take', () => {
    for (const file of scripts) {
      const text = readFileSync(file, 'utf8');
      const header = text.slice(0, text.search(/^(?!--)/m));
      const name = relative(root, file);
      expect(header, name).toMatch(/^-- \S/);
      if (/\bKEYS\b/.test(text.slice(header.length))) expect(header, name).toMatch(/\bKEYS\b/);
      if (/\bARGV\b/.test(text.slice(header.length))) expect(header, name).toMatch(/\bARGV\b/);
      expect(header, name).toMatch(/^-- Returns /m);
    }
  });

  it('are each loaded by name by one module in their folder', () => {
    for (const file of scripts.filter((each) => !each.endsWith(PRELUDE))) {
      const name = basename(file, '.lua');
      const calls = [`loadScript(import.meta.dirname, '${name}')`, `loadScript(import.meta.dirname, '${name}', [`];
      const loaders = modules.filter(
        (module) =>
          dirname(module) === dirname(file) && calls.some((call) => readFileSync(module, 'utf8').includes(call)),
      );
      expect(
        loaders.map((module) => relative(root, module)),
        relative(root, file),
      ).toHaveLength(1);
    }
  });

  it('preludes are each put in front of a script of their folder, and of no script twice', () => {
    for (const file of scripts.filter((each) => each.endsWith(PRELUDE))) {
      const name = basename(file, PRELUDE);
      expect(readFileSync(file, 'utf8'), relative(root, file)).toMatch(/^-- Prelude: /);
      const users = modules.filter(
        (module) =>
          dirname(module) === dirname(file) &&
          new RegExp(`loadScript\\(import\\.meta\\.dirname, '[^']+', \\[[^\\]]*'${name}'`).test(
            readFileSync(module, 'utf8'),
          ),
      );
      expect(
        users.map((module) => relative(root, module)),
        relative(root, file),
      ).not.toEqual([]);
    }
  });

  it('run by their digest (LuaScript): no module sends one with EVAL itself', () => {
    const sending = modules
      .filter((file) => /\.eval\(/.test(readFileSync(file, 'utf8')))
      .map((file) => relative(root, file))
      .filter((file) => file !== 'src/lib/lua-script.ts');
    expect(sending).toEqual([]);
  });

  it('ship in the image: the Dockerfile copies src/ whole and .dockerignore keeps .lua files', () => {
    const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^COPY src \.\/src$/m);
    const ignored = readFileSync(join(root, '.dockerignore'), 'utf8')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#'));
    expect(ignored.filter((pattern) => /lua|^src|^\*/.test(pattern))).toEqual([]);
  });
});
