/**
 * Writes docs/errors.md from the catalog of error codes (src/http/error-codes.ts). Run it after changing the
 * catalog:
 *
 *     node scripts/docs-errors.ts
 *
 * `test/http/error-docs.test.ts` fails while the file differs from what this writes.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ERROR_CODES } from '../src/http/error-codes.ts';

/** Where the page lives, from the repository's root. */
export const ERRORS_DOC = 'docs/errors.md';

/** The text of docs/errors.md. */
export function errorsDoc(): string {
  const rows = Object.entries(ERROR_CODES).map(
    ([code, { status, meaning }]) => `| \`${code}\` | ${status} | ${meaning.replaceAll('|', '\\|')} |`,
  );
  return `${[
    '# Error codes',
    '',
    '<!-- Generated from src/http/error-codes.ts by `node scripts/docs-errors.ts`: edit the catalog, not this file. -->',
    '',
    'Every JSON error answer of the service is `{"error": "…", "code": "…"}`. The `code` is stable: a client',
    'branches on it. The `error` words are for people and may change between releases; they come in the language',
    'the request names (`?lang=ru` or `?lang=en`, then the `lang` cookie the pages set, then `Accept-Language`), and',
    'in English when it names neither. Words quoted from the university, Google or a CalDAV server, ids, parameter',
    'names and numbers are the same in both languages. Requests Node refuses before reading their headers',
    '(`MALFORMED_REQUEST`, `REQUEST_TIMEOUT`, `HEADERS_TOO_LARGE`, and `MALFORMED_URL` for raw non-ASCII bytes)',
    'are answered in English.',
    '',
    'Four answers carry one more field: `NOT_READY` has `checks`, `CALENDAR_NOT_DELETED` has `calendarId`,',
    '`CALDAV_NOT_CLEANED` has `calendarUrl` and `CALDAV_NO_CALENDAR` has `calendars`. A `Retry-After` header comes',
    'with every 429 and with the 503s that say when to ask again. The HTML pages answer their own errors as pages.',
    '',
    '| Code | Status | Meaning |',
    '| --- | --- | --- |',
    ...rows,
  ].join('\n')}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(join(import.meta.dirname, '..', ERRORS_DOC), errorsDoc());
}
