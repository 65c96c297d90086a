/**
 * Rewrites the golden feeds from the current renderer: `node test/feeds/regenerate-golden.ts`. Only after
 * reading the diff line by line (`git diff test/feeds/golden`): a golden file is a reviewed expectation.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderIcs } from '../../src/feeds/render-ics.ts';
import { goldenCases } from './golden-inputs.ts';

for (const c of goldenCases()) {
  writeFileSync(join(import.meta.dirname, 'golden', `${c.name}.ics`), renderIcs(c.occurrences, c.meta));
}
