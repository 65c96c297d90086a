import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERRORS_DOC, errorsDoc } from '../../scripts/docs-errors.ts';
import { ERROR_CODES } from '../../src/http/error-codes.ts';

const ROOT = join(import.meta.dirname, '../..');

/** Every .ts file under `dir`, with its text. */
function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => readFileSync(join(ROOT, dir, name), 'utf8'));
}

describe('the catalog of error codes', () => {
  it('is what docs/errors.md says (regenerate it with: node scripts/docs-errors.ts)', () => {
    expect(readFileSync(join(ROOT, ERRORS_DOC), 'utf8')).toBe(errorsDoc());
  });

  it('lists only codes something answers, in SCREAMING_SNAKE_CASE', () => {
    const catalog = readFileSync(join(ROOT, 'src/http/error-codes.ts'), 'utf8');
    const answering = [
      ...sources('src').filter((text) => text !== catalog),
      readFileSync(join(ROOT, 'deploy/nginx.conf'), 'utf8'),
    ].join('\n');
    for (const code of Object.keys(ERROR_CODES)) {
      expect(code).toMatch(/^[A-Z]+(_[A-Z]+)*$/);
      expect(answering, `${code} is answered nowhere`).toMatch(new RegExp(`['"]${code}['"]`));
    }
  });

  it('knows every code the shipped proxy answers', () => {
    const nginx = readFileSync(join(ROOT, 'deploy/nginx.conf'), 'utf8');
    const codes = [...nginx.matchAll(/"code": "([A-Z_]+)"/g)].map((match) => match[1]);
    expect(codes.length).toBeGreaterThan(0);
    for (const code of codes) expect(Object.keys(ERROR_CODES)).toContain(code);
  });
});
