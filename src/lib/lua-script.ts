/**
 * Lua scripts live in `.lua` files beside the module that runs them, one script per file with its KEYS and
 * ARGV described at its top (BullMQ keeps its commands the same way). A module loads each of its scripts once,
 * by name, when it is loaded, and runs it by its SHA1 digest: `EVALSHA`, so that a call ships the digest rather
 * than the script's text, and `EVAL` of the text only when the node that got the call answers `NOSCRIPT` (its
 * script cache is empty after a restart, a failover or `SCRIPT FLUSH`; `EVAL` fills it again). On a Cluster
 * both commands go to the node that owns the keys' slot, so each node's cache is filled where it is missing.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChainableCommander } from 'ioredis';
import type { RedisClient } from './redis-target.ts';

/** A value a script takes in ARGV. */
export type LuaArgument = string | number | Buffer;

/** One Lua script of a module, run by its digest. */
export class LuaScript {
  /** The script's file name without `.lua`, for messages. */
  readonly name: string;
  /** The script's text. */
  readonly text: string;
  /** The script's SHA1 digest, hex: what `EVALSHA` names it by. */
  readonly sha: string;

  constructor(name: string, text: string) {
    this.name = name;
    this.text = text;
    this.sha = createHash('sha1').update(text).digest('hex');
  }

  /**
   * Runs the script on `redis` with `keys` and `args` and returns its reply: `EVALSHA`, then `EVAL` of the text
   * when that node does not know the script yet (which also stores it there for the next call).
   */
  async run(redis: RedisClient, keys: readonly string[], args: readonly LuaArgument[] = []): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!isNoScript(error)) throw error;
      return redis.eval(this.text, keys.length, ...keys, ...args);
    }
  }

  /**
   * Queues the script on a transaction (`multi`) with its text (`EVAL`). Inside `MULTI` a `NOSCRIPT` answer comes
   * only with `EXEC`, after the transaction's other commands were applied without this one, so there is no safe
   * moment to fall back: a transaction ships the text (Redis still compiles it only once per node).
   */
  queue(multi: ChainableCommander, keys: readonly string[], args: readonly LuaArgument[] = []): ChainableCommander {
    return multi.eval(this.text, keys.length, ...keys, ...args);
  }
}

/** Whether `error` is a Redis `NOSCRIPT` answer: the node has no script of that digest. */
export function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/**
 * Loads the script `name`: the file `<dir>/<name>.lua`, `dir` being the caller's `import.meta.dirname`, after
 * the text of each of `preludes` (`<dir>/<prelude>.prelude.lua`: local functions that several scripts of the
 * folder share, so that one of them is written once; Redis runs one text, so they are put in front of it).
 */
export function loadScript(dir: string, name: string, preludes: readonly string[] = []): LuaScript {
  const parts = preludes.map((prelude) => readFileSync(join(dir, `${prelude}.prelude.lua`), 'utf8'));
  return new LuaScript(name, [...parts, readFileSync(join(dir, `${name}.lua`), 'utf8')].join('\n'));
}
