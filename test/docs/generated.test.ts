/**
 * The settings are written in one place, the table in src/config.ts; docs/configuration.md and .env.example are
 * made from it by scripts/generate-docs.ts. These tests fail while a generated file is out of date, while the
 * table documents a default or an example the code would not accept as such, and when another document copies
 * the settings table instead of linking to docs/configuration.md.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseEnv } from 'node:util';
import { describe, expect, it } from 'vitest';
import { envExample, GENERATED, REGENERATE } from '../../scripts/generate-docs.ts';
import { ENV_VARIABLES, loadConfig, SETTING_DOCS } from '../../src/config.ts';

const root = join(import.meta.dirname, '../..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');

describe('generated documents', () => {
  for (const { path, make } of GENERATED)
    it(`${path} is what ${REGENERATE} makes`, () => {
      expect(read(path) === make(), `${path} is out of date: run ${REGENERATE}`).toBe(true);
    });
});

describe('the settings table', () => {
  it('documents every variable the service reads, once', () => {
    expect(SETTING_DOCS.map((entry) => entry.env)).toEqual([...ENV_VARIABLES]);
    expect(new Set(ENV_VARIABLES).size).toBe(ENV_VARIABLES.length);
    for (const entry of SETTING_DOCS) {
      expect(entry.meaning.length, entry.env).toBeGreaterThan(10);
      expect(entry.default !== undefined || entry.defaultText !== undefined, entry.env).toBe(true);
      expect(entry.example !== undefined || entry.exampleText !== undefined, entry.env).toBe(true);
    }
  });

  it('gives as default the value the code applies when the variable is unset', () => {
    const defaults = loadConfig({});
    for (const entry of SETTING_DOCS.filter((each) => each.default !== undefined))
      expect(loadConfig({ [entry.env]: entry.default }), entry.env).toEqual(defaults);
  });

  /** What an example needs beside it to be a valid configuration. */
  const COMPANIONS: Record<string, Record<string, string>> = {
    REDIS_SENTINELS: { REDIS_SENTINEL_MASTER: 'timetable' },
    REDIS_SENTINEL_MASTER: { REDIS_SENTINELS: 'sentinel-1:26379' },
    GOOGLE_CLIENT_ID: { GOOGLE_CLIENT_SECRET: 'a client secret' },
  };

  it('gives examples the code accepts, each changing the configuration', () => {
    const defaults = loadConfig({});
    for (const entry of SETTING_DOCS.filter((each) => each.example !== undefined)) {
      const env = { [entry.env]: entry.example, ...COMPANIONS[entry.env] };
      expect(() => loadConfig(env), entry.env).not.toThrow();
      expect(loadConfig(env), entry.env).not.toEqual(defaults);
    }
  });
});

describe('.env.example', () => {
  const example = envExample();

  it('names every variable, set to its default or commented out', () => {
    const named = [...example.matchAll(/^(?:# )?([A-Z][A-Z0-9_]+)=/gm)].map((match) => match[1]);
    expect(named.sort()).toEqual([...ENV_VARIABLES].sort());
  });

  it('changes nothing when copied to .env as it is', () => {
    const active = parseEnv(example);
    expect(Object.keys(active).length).toBeGreaterThan(40);
    expect(loadConfig(active)).toEqual(loadConfig({}));
  });

  it('gives a commented-out default that means what unset means', () => {
    const commented = [...example.matchAll(/^# ([A-Z][A-Z0-9_]+=".*")$/gm)].map((match) => match[1] as string);
    expect(commented.length).toBeGreaterThan(0);
    for (const line of commented) expect(loadConfig(parseEnv(line)), line).toEqual(loadConfig({}));
  });
});
describe('one reference for settings', () => {
  const documents = ['README.md', ...readdirSync(join(root, 'docs')).filter((name) => name.endsWith('.md'))]
    .map((name) => (name === 'README.md' ? name : `docs/${name}`))
    .filter((path) => path !== 'docs/configuration.md');

  it('no other document lists settings in a table of its own', () => {
    for (const path of documents) {
      const rows = read(path)
        .split('\n')
        .filter((line) => ENV_VARIABLES.some((name) => line.startsWith(`| \`${name}\``)));
      expect(rows, `${path} copies settings rows; link to docs/configuration.md instead`).toEqual([]);
    }
  });

  it('README.md and docs/design.md link to docs/configuration.md', () => {
    expect(read('README.md').includes('](docs/configuration.md'), 'README.md links it').toBe(true);
    expect(read('docs/design.md').includes('](configuration.md'), 'docs/design.md links it').toBe(true);
  });
});
