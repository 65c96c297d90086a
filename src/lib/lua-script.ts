/**
 * Lua scripts live in `.lua` files beside the module that runs them, one script per file with its KEYS and
 * ARGV described at its top (BullMQ keeps its commands the same way). A module reads each of its scripts once,
 * by name, when it is loaded; they are sent with EVAL as they are (Redis keeps a compiled script by its digest).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The text of the script `name`: the file `<dir>/<name>.lua`, `dir` being the caller's `import.meta.dirname`. */
export function luaScript(dir: string, name: string): string {
  return readFileSync(join(dir, `${name}.lua`), 'utf8');
}
