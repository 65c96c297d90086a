/**
 * The directory of study groups: id → name, the only way to find a group by the name people know (`09-351`),
 * since the university API has no list of groups. It is fed by the group timetables the service publishes
 * (the name their entries give), by the profiles of people who sign up, and by an admin's import of a full
 * list. Redis holds one HASH (id → name) and a version counter raised by every change; each API process keeps
 * an in-memory search index and rebuilds it when the counter moved, so that every process answers from the
 * same directory (a search costs one GET while nothing changed).
 *
 * Search compares {@link searchKey}s: case, `ё`/`е`, Latin letters that look like Cyrillic ones, and
 * everything but letters and digits (spaces, dashes, dots, slashes) are ignored, so `09351`, `09 351` and
 * `09-351` all find `09-351`, and `9-351` finds it as a part of the name. Names that start with the query come
 * first, then names that contain it.
 */

import { loadScript } from '../lib/lua-script.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import type { RedisKeys } from './keys.ts';
import { VersionedIndex } from './versioned-index.ts';

/** One group of the directory. */
export interface DirectoryGroup {
  id: number;
  name: string;
}

/** What an import changed. */
export interface ImportCounts {
  added: number;
  updated: number;
  unchanged: number;
}

/** Groups found by a search, best first, and how many matched in all. */
export interface GroupSearch {
  groups: DirectoryGroup[];
  total: number;
}

/** Longest group name kept (real ones are a dozen characters). */
export const MAX_GROUP_NAME_LENGTH = 100;
/** Results of one search by default. */
export const DEFAULT_SEARCH_LIMIT = 20;
/** Groups written by one script call of an import (a pipeline sends them all at once). */
const IMPORT_CHUNK = 500;

/** Sets one group's name unless it has it already, raising the version (group-directory-record.lua). */
const RECORD = loadScript(import.meta.dirname, 'group-directory-record');

/** Adds or renames many groups, raising the version once (group-directory-upsert.lua). */
const UPSERT = loadScript(import.meta.dirname, 'group-directory-upsert');

/** Latin letters that look like Cyrillic ones, typed by mistake on the wrong keyboard layout. */
const LOOKALIKES: Readonly<Record<string, string>> = {
  a: 'а',
  b: 'в',
  c: 'с',
  e: 'е',
  h: 'н',
  k: 'к',
  m: 'м',
  o: 'о',
  p: 'р',
  t: 'т',
  x: 'х',
  y: 'у',
};

/**
 * What a name or a query is compared by: lower case, `ё` as `е`, Latin lookalikes as their Cyrillic letters,
 * and nothing but letters and digits (`09-351` → `09351`, `ИВТ 2.1` → `ивт21`).
 */
export function searchKey(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/ё/g, 'е')
    .replace(/[^\p{L}\p{N}]/gu, '')
    .replace(/[abcehkmoptxy]/g, (letter) => LOOKALIKES[letter] ?? letter);
}

/**
 * A group name as the directory keeps it: trimmed, runs of whitespace as one space; undefined when it is
 * empty, longer than {@link MAX_GROUP_NAME_LENGTH} or holds control characters (not a name, whatever it is).
 */
export function cleanGroupName(raw: string): string | undefined {
  const name = raw.trim().replace(/\s+/g, ' ');
  if (name === '' || name.length > MAX_GROUP_NAME_LENGTH || /\p{Cc}/u.test(name)) return undefined;
  return name;
}

/** A directory entry with its search key. */
interface IndexedGroup extends DirectoryGroup {
  key: string;
}

/** The search index of one directory version. */
export class GroupIndex {
  /** Sorted once, as results are within each rank: shorter names first, then by name, then by id. */
  private readonly groups: readonly IndexedGroup[];
  /** {@link example}'s answer once asked (null: not yet). */
  private exampleName: string | undefined | null = null;

  constructor(groups: Iterable<DirectoryGroup>) {
    this.groups = [...groups]
      .map((group) => ({ ...group, key: searchKey(group.name) }))
      .sort((a, b) => a.key.length - b.key.length || COLLATOR.compare(a.name, b.name) || a.id - b.id);
  }

  get size(): number {
    return this.groups.length;
  }

  /**
   * A group name to show as an example of what to type (one that exists here, unlike a made-up one): the middle
   * one in the index's order, so a name of a usual length rather than the shortest, among the names with a digit
   * (group numbers) when there are any; undefined when the directory is empty.
   */
  example(): string | undefined {
    if (this.exampleName === null) {
      const numbered = this.groups.filter((group) => /\p{N}/u.test(group.name));
      const from = numbered.length > 0 ? numbered : this.groups;
      this.exampleName = from[Math.floor(from.length / 2)]?.name;
    }
    return this.exampleName;
  }

  /**
   * The groups whose name matches `query`: the whole name first, then names that start with it, then names
   * that contain it; within each, shorter names first, then by name (digits compared as numbers). One pass in
   * the index's order: each rank keeps its first `limit` matches, and every match is counted.
   */
  search(query: string, limit = DEFAULT_SEARCH_LIMIT): GroupSearch {
    const key = searchKey(query);
    if (key === '') return { groups: [], total: 0 };
    const ranks: [IndexedGroup[], IndexedGroup[], IndexedGroup[]] = [[], [], []];
    let total = 0;
    for (const group of this.groups) {
      const at = group.key.indexOf(key);
      if (at < 0) continue;
      total += 1;
      const rank = ranks[group.key.length === key.length ? 0 : at === 0 ? 1 : 2];
      if (rank.length < limit) rank.push(group);
    }
    return {
      groups: ranks
        .flat()
        .slice(0, limit)
        .map((group) => ({ id: group.id, name: group.name })),
      total,
    };
  }
}

const COLLATOR = new Intl.Collator('ru', { numeric: true, sensitivity: 'base' });

/** The directory in Redis, with this process's search index of it. */
export class GroupDirectory {
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;
  private readonly index = new VersionedIndex<GroupIndex>(() => this.load());

  constructor(redis: RedisClient, keys: RedisKeys) {
    this.redis = redis;
    this.keys = keys;
  }

  /**
   * Records what a group is called (a published timetable or a profile named it). A name that is not one
   * ({@link cleanGroupName}) or an id that is not a positive integer is ignored. Resolves to whether it changed
   * the directory.
   */
  async record(id: number, rawName: string): Promise<boolean> {
    const name = cleanGroupName(rawName);
    if (name === undefined || !Number.isSafeInteger(id) || id <= 0) return false;
    const { groupDirectory, groupDirectoryVersion } = this.keys;
    return (await RECORD.run(this.redis, [groupDirectory, groupDirectoryVersion], [String(id), name])) === 1;
  }

  /**
   * Adds or renames many groups at once (already validated: positive ids, clean names, each id once), in
   * pipelined script calls of {@link IMPORT_CHUNK}. Groups not in the list stay.
   */
  async import(groups: readonly DirectoryGroup[]): Promise<ImportCounts> {
    // Sent together without awaiting each: one connection writes them back to back, as a pipeline would,
    // and each call still falls back on its own when a node does not know the script.
    const keys = [this.keys.groupDirectory, this.keys.groupDirectoryVersion];
    const calls: Promise<unknown>[] = [];
    for (let start = 0; start < groups.length; start += IMPORT_CHUNK) {
      const pairs = groups.slice(start, start + IMPORT_CHUNK).flatMap(({ id, name }) => [String(id), name]);
      calls.push(UPSERT.run(this.redis, keys, pairs));
    }
    let added = 0;
    let updated = 0;
    for (const result of await Promise.all(calls)) {
      const [a, u] = result as [number, number];
      added += a;
      updated += u;
    }
    return { added, updated, unchanged: groups.length - added - updated };
  }

  /** The name of group `id`, when the directory knows it. */
  async name(id: number): Promise<string | undefined> {
    return (await this.redis.hget(this.keys.groupDirectory, String(id))) ?? undefined;
  }

  /** Whether the directory knows group `id` (so that the id is very likely a real group's). */
  async has(id: number): Promise<boolean> {
    return (await this.redis.hexists(this.keys.groupDirectory, String(id))) === 1;
  }

  /** How many groups the directory holds. */
  async size(): Promise<number> {
    return this.redis.hlen(this.keys.groupDirectory);
  }

  /** A group name of the directory as it is now, to show as an example (see {@link GroupIndex.example}). */
  async example(): Promise<string | undefined> {
    return (await this.currentIndex()).example();
  }

  /** Groups by name (see {@link GroupIndex.search}), from the directory as it is now. */
  async search(query: string, limit = DEFAULT_SEARCH_LIMIT): Promise<GroupSearch> {
    return (await this.currentIndex()).search(query, limit);
  }

  /** This process's index, rebuilt first when the directory's version moved (one rebuild at a time). */
  private async currentIndex(): Promise<GroupIndex> {
    return this.index.at((await this.redis.get(this.keys.groupDirectoryVersion)) ?? '0');
  }

  /**
   * Reads the whole directory. The version is read before the groups: a change in between makes the next
   * search load again, never keeps an index older than its version says.
   */
  private async load(): Promise<GroupIndex> {
    const fields = await this.redis.hgetall(this.keys.groupDirectory);
    return new GroupIndex(Object.entries(fields).map(([id, name]) => ({ id: Number(id), name })));
  }
}
