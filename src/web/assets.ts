/**
 * The pages' stylesheet and script: read once from `src/web/assets/`, served under a name that carries a digest
 * of their content, so that browsers may keep them for a year and a new release is fetched at once.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

export interface Asset {
  /** Path under which it is served, e.g. `/assets/app.3f2a9c1b.css`. */
  path: string;
  type: string;
  body: Buffer;
  gzip: Buffer;
}

const FILES = {
  css: ['app.css', 'text/css; charset=utf-8'],
  js: ['app.js', 'text/javascript; charset=utf-8'],
  icon: ['icon.svg', 'image/svg+xml'],
} as const;

type Assets = { [K in keyof typeof FILES]: Asset };

function load(file: string, type: string): Asset {
  const body = readFileSync(new URL(`./assets/${file}`, import.meta.url));
  const digest = createHash('sha256').update(body).digest('hex').slice(0, 10);
  const [stem, extension] = file.split('.') as [string, string];
  return { path: `/assets/${stem}.${digest}.${extension}`, type, body, gzip: gzipSync(body, { level: 9 }) };
}

let loaded: Assets | undefined;

/** The assets, loaded on first use. */
export function assets(): Assets {
  loaded ??= { css: load(...FILES.css), js: load(...FILES.js), icon: load(...FILES.icon) };
  return loaded;
}
