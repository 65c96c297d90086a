/**
 * `POST /admin/directory`: an admin imports a list of study groups (JSON or CSV `id,name`, see
 * directory-input.ts; CSV in the Content-Type's charset) into the group directory, so that people find any group by name before its timetable
 * was ever fetched. Groups are added or renamed, never removed; the answer counts what changed.
 */
import type { FastifyInstance } from 'fastify';
import type { Logger } from '../logger.ts';
import type { GroupDirectory } from '../store/group-directory.ts';
import { decodeCsv, groupsFromCsv, groupsFromJson } from './directory-input.ts';

/** Room for a whole university's list (50,000 groups of ~40 bytes), refused before it is read beyond this. */
const BODY_LIMIT_BYTES = 4 * 1024 * 1024;

/** A CSV body as the parser hands it on (a JSON body can never be one). */
class CsvText {
  readonly text: string;

  constructor(text: string) {
    this.text = text;
  }
}

/** What the import writes to and logs with. */
export interface DirectoryRouteDeps {
  readonly directory: Pick<GroupDirectory, 'import' | 'size'>;
  readonly logger: Pick<Logger, 'info'>;
}

/** Registers the import on the admin scope (its token check applies). */
export function registerDirectoryRoutes(admin: FastifyInstance, ctx: DirectoryRouteDeps): void {
  admin.addContentTypeParser('text/csv', { parseAs: 'buffer', bodyLimit: BODY_LIMIT_BYTES }, (request, body, done) => {
    try {
      done(null, new CsvText(decodeCsv(body as Buffer, charsetOf(request.headers['content-type']))));
    } catch (error) {
      done(error as Error);
    }
  });
  admin.post('/directory', { bodyLimit: BODY_LIMIT_BYTES }, async (request) => {
    const body = request.body;
    const groups = body instanceof CsvText ? groupsFromCsv(body.text) : groupsFromJson(body);
    const counts = await ctx.directory.import(groups);
    const total = await ctx.directory.size();
    ctx.logger.info({ ...counts, total }, 'group directory imported');
    return { ...counts, total };
  });
}

/** The `charset` parameter of a Content-Type, unquoted; undefined when there is none. */
function charsetOf(contentType: string | undefined): string | undefined {
  const match = /;\s*charset\s*=\s*(?:"([^"]*)"|([^;\s]*))/i.exec(contentType ?? '');
  return match === null ? undefined : (match[1] ?? match[2]);
}
