/**
 * Every key under a prefix, written out as plain data and read back into another Redis: what the upgrade
 * fixture is made of. Each key keeps its type, its remaining TTL and its value, every string, field, item and
 * member in base64 (feeds are compressed bytes). The export is by type, not `DUMP`, so that the fixture can be
 * read and restored by any Redis version, not only one that knows the exporting server's RDB format.
 */
import type { Redis } from 'ioredis';

/** One exported key; `ttlMs` is -1 for a key without expiry. */
export type ExportedKey = { key: string; ttlMs: number } & (
  | { type: 'string'; value: string }
  | { type: 'hash'; value: [field: string, value: string][] }
  | { type: 'list'; value: string[] }
  | { type: 'set'; value: string[] }
  | { type: 'zset'; value: [member: string, score: string][] }
  | { type: 'stream'; value: { lastId: string; entries: [id: string, fields: string[]][] } }
);

const b64 = (bytes: Buffer): string => bytes.toString('base64');
const bytes = (text: string): Buffer => Buffer.from(text, 'base64');

function pairs<T>(flat: T[]): [T, T][] {
  const out: [T, T][] = [];
  for (let index = 0; index + 1 < flat.length; index += 2) out.push([flat[index] as T, flat[index + 1] as T]);
  return out;
}

/** Every key matching `prefix:*`, sorted by name (sets by member), so that one state always exports alike. */
export async function exportPrefix(redis: Redis, prefix: string): Promise<ExportedKey[]> {
  const names = new Set<string>();
  for await (const batch of redis.scanStream({ match: `${prefix}:*`, count: 1000 }) as AsyncIterable<string[]>)
    for (const name of batch) names.add(name);
  const exported: ExportedKey[] = [];
  for (const key of [...names].sort()) {
    const one = await exportKey(redis, key);
    if (one) exported.push(one);
  }
  return exported;
}

async function exportKey(redis: Redis, key: string): Promise<ExportedKey | undefined> {
  const [type, ttlMs] = await Promise.all([redis.type(key), redis.pttl(key)]);
  switch (type) {
    case 'string':
      return { key, ttlMs, type, value: b64((await redis.getBuffer(key)) ?? Buffer.alloc(0)) };
    case 'hash': {
      // hgetallBuffer would key its answer by field names decoded as UTF-8.
      const fields = pairs((await redis.callBuffer('HGETALL', key)) as Buffer[]);
      const value = fields.map(([field, item]): [string, string] => [b64(field), b64(item)]);
      return { key, ttlMs, type, value: value.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)) };
    }
    case 'list':
      return { key, ttlMs, type, value: (await redis.lrangeBuffer(key, 0, -1)).map(b64) };
    case 'set':
      return { key, ttlMs, type, value: (await redis.smembersBuffer(key)).map(b64).sort() };
    case 'zset': {
      // Over RESP3 the reply is [member, score] pairs, the score a double; over RESP2 a flat list of strings.
      const reply = (await redis.callBuffer('ZRANGE', key, '0', '-1', 'WITHSCORES')) as (Buffer | [Buffer, unknown])[];
      const flat = reply.flatMap((item) => (Array.isArray(item) ? item : [item]));
      return { key, ttlMs, type, value: pairs(flat).map(([member, score]) => [b64(member as Buffer), String(score)]) };
    }
    case 'stream': {
      const entries = (await redis.xrangeBuffer(key, '-', '+')).map(([id, fields]): [string, string[]] => [
        id.toString(),
        fields.map(b64),
      ]);
      const info = (await redis.xinfo('STREAM', key)) as unknown[];
      const lastId = String(info[info.indexOf('last-generated-id') + 1]);
      return { key, ttlMs, type, value: { lastId, entries } };
    }
    case 'none':
      return undefined; // expired or deleted between SCAN and TYPE
    default:
      throw new Error(`${key}: cannot export a Redis ${type}`);
  }
}

/** Writes `keys` into `redis`, replacing keys of the same names; TTLs count from now. */
export async function restoreKeys(redis: Redis, keys: readonly ExportedKey[]): Promise<void> {
  for (const exported of keys) {
    const { key } = exported;
    const multi = redis.multi().del(key);
    switch (exported.type) {
      case 'string':
        multi.set(key, bytes(exported.value));
        break;
      case 'hash':
        multi.hset(key, ...exported.value.flatMap(([field, value]) => [bytes(field), bytes(value)]));
        break;
      case 'list':
        multi.rpush(key, ...exported.value.map(bytes));
        break;
      case 'set':
        multi.sadd(key, ...exported.value.map(bytes));
        break;
      case 'zset':
        multi.zadd(key, ...exported.value.flatMap(([member, score]) => [score, bytes(member)]));
        break;
      case 'stream':
        for (const [id, fields] of exported.value.entries) multi.xadd(key, id, ...fields.map(bytes));
        // A stream trimmed to nothing still exists; XADD cannot make it, a consumer group's MKSTREAM can.
        if (exported.value.entries.length === 0)
          multi.xgroup('CREATE', key, 'restore', '$', 'MKSTREAM').xgroup('DESTROY', key, 'restore');
        multi.xsetid(key, exported.value.lastId);
        break;
    }
    if (exported.ttlMs > 0) multi.pexpire(key, exported.ttlMs);
    const results = await multi.exec().catch((error: Error) => {
      throw new Error(`restoring ${key} (${exported.type}): ${error.message}`);
    });
    const failed = results?.find(([error]) => error);
    if (failed) throw new Error(`restoring ${key} (${exported.type}): ${failed[0]?.message}`);
  }
}
