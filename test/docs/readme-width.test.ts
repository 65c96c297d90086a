/**
 * The README is read in terminals and diff views as well as on GitHub: no line of it is wider than 160 columns
 * (a table row that grows past that moves its detail to the page it links to).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';

const MAX_COLUMNS = 160;

it(`keeps every README line at most ${MAX_COLUMNS} columns`, () => {
  const lines = readFileSync(join(import.meta.dirname, '../../README.md'), 'utf8').split('\n');
  const wide = lines.flatMap((line, index) => ([...line].length > MAX_COLUMNS ? [`${index + 1}: ${line}`] : []));
  expect(wide).toEqual([]);
});
