/**
 * Run by render-ics.test.ts in a child `node` with another `TZ`: renders every golden case and prints
 * `{ zone, feeds }` as JSON on stdout, `zone` being the process zone the child actually ran in.
 */
import { renderIcs } from '../../src/feeds/render-ics.ts';
import { goldenCases } from './golden-inputs.ts';

const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
process.stdout.write(JSON.stringify({ zone, feeds: goldenCases().map((c) => renderIcs(c.occurrences, c.meta)) }));
