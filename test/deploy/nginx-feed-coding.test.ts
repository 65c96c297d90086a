/**
 * The coding deploy/nginx.conf asks the api for (and keys its cache by): its map's exact entries, which nginx
 * looks up before it tries the expressions, must choose what the expressions choose for the same header, or a
 * browser sending one of them would get another coding than one sending the same header in other letter case
 * or spacing. The expressions are PCRE; the ones in the map are also valid JavaScript with the same meaning.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const config = readFileSync(join(import.meta.dirname, '../../deploy/nginx.conf'), 'utf8');
const block = /^map \$http_accept_encoding \$feed_coding \{\n([\s\S]*?)^\}/m.exec(config)?.[1] ?? '';
const entries = block
  .split('\n')
  .map((line) => line.replace(/#.*/, '').trim())
  .filter((line) => line !== '')
  .map((line) => {
    const match = /^("(?:[^"\\]|\\.)*"|\S+)\s+(\S+);$/.exec(line);
    if (!match?.[1] || !match[2]) throw new Error(`unexpected line in the $feed_coding map: ${line}`);
    const key = match[1].startsWith('"') ? match[1].slice(1, -1) : match[1];
    return { key, value: match[2] };
  });
const fallback = entries.find((entry) => entry.key === 'default')?.value;
const expressions = entries
  .filter((entry) => entry.key.startsWith('~*'))
  .map((entry) => ({ pattern: new RegExp(entry.key.slice(2), 'i'), value: entry.value }));
const exact = entries.filter((entry) => entry.key !== 'default' && !entry.key.startsWith('~'));

/** What the map gives without its exact entries: the first expression that matches, else the default. */
function byExpressions(header: string): string | undefined {
  return expressions.find((expression) => expression.pattern.test(header))?.value ?? fallback;
}

describe('the $feed_coding map of deploy/nginx.conf', () => {
  it('has a default, expressions and exact entries', () => {
    expect(fallback).toBe('identity');
    expect(expressions.map((expression) => expression.value)).toEqual(['br', 'gzip']);
    expect(exact.length).toBeGreaterThan(0);
  });

  it('chooses by its exact entries what its expressions choose', () => {
    for (const { key, value } of exact) expect(value, key).toBe(byExpressions(key));
  });

  it('chooses as the api does for the headers the proxy tests send', () => {
    expect(byExpressions('gzip, deflate')).toBe('gzip');
    expect(byExpressions('deflate, gzip')).toBe('gzip');
    expect(byExpressions('identity')).toBe('identity');
    expect(byExpressions('gzip, deflate, br, zstd')).toBe('br');
    expect(byExpressions('br;q=0, gzip')).toBe('gzip');
    expect(byExpressions('gzip;q=0')).toBe('identity');
  });
});
