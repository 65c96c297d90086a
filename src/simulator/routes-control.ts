/*
 * Control API under /_sim (used by tests, the demo and benchmarks; never counted in stats, never faulted):
 *   GET    /_sim/groups | /_sim/employees | /_sim/users     listings (employees say whether they teach, users carry
 *                                                           their token and subgroup)
 *   GET    /_sim/entries/:id                               wire entry + groupIds (+ userIds of an elective)
 *   POST   /_sim/entries                                   add a class: raw fields (any values) + groupIds and/or
 *                                                           userIds (an elective in those personal timetables) → 201
 *   PATCH  /_sim/entries/:id                               change fields, groupIds and/or userIds → 200
 *   DELETE /_sim/entries/:id                               cancel a class → 204
 *   POST   /_sim/faults, GET /_sim/faults, DELETE /_sim/faults[/:id]
 *   GET    /_sim/dialect, PUT /_sim/dialect {"dialect": "standard" | "legacy" | "legacy-unlabelled"}   how answers are spelled
 *   GET    /_sim/stats[?path=P&path=…], DELETE /_sim/stats   request counts per endpoint, and per path P asked for
 *   POST   /_sim/reset
 */
import type { IncomingMessage } from 'node:http';
import { z } from 'zod';
import { dialectSchema } from './dialect.ts';
import { parseFault } from './faults.ts';
import { errorReply, json, noContent, type Reply, readJson } from './reply.ts';
import type { SimulatorState } from './state.ts';

/** The control routes above, as `METHOD /path` lines for the index at `/`. */
export const CONTROL_ROUTES: readonly string[] = [
  'GET /_sim/groups',
  'GET /_sim/employees',
  'GET /_sim/users',
  'POST /_sim/entries',
  'GET|PATCH|DELETE /_sim/entries/{id}',
  'GET|POST|DELETE /_sim/faults',
  'DELETE /_sim/faults/{id}',
  'GET|DELETE /_sim/stats',
  'GET|PUT /_sim/dialect',
  'POST /_sim/reset',
];

const idsSchema = z.array(z.number().int().positive());
// Entry fields may hold any value, valid or not: tests use this to create broken entries on purpose.
const newEntrySchema = z.looseObject({
  groupIds: idsSchema.optional(),
  userIds: idsSchema.optional(),
  id: z.number().int().positive().optional(),
});
const patchSchema = z.looseObject({ groupIds: idsSchema.optional(), userIds: idsSchema.optional() });

/** Whose timetables an entry is in: a class of no group and no user would be in none but its teacher's. */
const NOBODY = 'groupIds, userIds: at least one of them must name a group or a user';

function zodMessage(error: z.ZodError): string {
  const issue = error.issues[0];
  return `${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'}`;
}

async function body(req: IncomingMessage): Promise<{ value: unknown } | { error: Reply }> {
  const read = await readJson(req);
  return 'error' in read ? { error: errorReply(400, read.error) } : read;
}

function unknownGroup(state: SimulatorState, groupIds: readonly number[]): Reply | undefined {
  const missing = groupIds.find((id) => !state.store.groups.has(id));
  return missing === undefined ? undefined : errorReply(400, `groupIds: unknown group ${missing}`);
}

function unknownUser(state: SimulatorState, userIds: readonly number[]): Reply | undefined {
  const missing = userIds.find((id) => !state.store.hasUser(id));
  return missing === undefined ? undefined : errorReply(400, `userIds: unknown user ${missing}`);
}

/** The 400 for groups or users that do not exist, if any. */
function unknownIds(
  state: SimulatorState,
  ids: { groupIds?: number[] | undefined; userIds?: number[] | undefined },
): Reply | undefined {
  return unknownGroup(state, ids.groupIds ?? []) ?? unknownUser(state, ids.userIds ?? []);
}

function entryFields(value: Record<string, unknown>): Record<string, unknown> {
  const { groupIds: _groups, userIds: _users, ...fields } = value;
  return fields;
}

async function addEntry(state: SimulatorState, req: IncomingMessage): Promise<Reply> {
  const read = await body(req);
  if ('error' in read) return read.error;
  const parsed = newEntrySchema.safeParse(read.value);
  if (!parsed.success) return errorReply(400, zodMessage(parsed.error));
  const { groupIds = [], userIds = [] } = parsed.data;
  if (groupIds.length === 0 && userIds.length === 0) return errorReply(400, NOBODY);
  const bad = unknownIds(state, parsed.data);
  if (bad) return bad;
  if (parsed.data.id !== undefined && state.store.entry(parsed.data.id)) {
    return errorReply(409, `entry ${parsed.data.id} already exists`);
  }
  const entry = state.store.add(entryFields(parsed.data), groupIds, userIds);
  return json(201, state.store.controlView(entry));
}

async function patchEntry(state: SimulatorState, req: IncomingMessage, id: number): Promise<Reply> {
  const read = await body(req);
  if ('error' in read) return read.error;
  const parsed = patchSchema.safeParse(read.value);
  if (!parsed.success) return errorReply(400, zodMessage(parsed.error));
  if ('id' in parsed.data) return errorReply(400, 'id: an entry id cannot be changed');
  const bad = unknownIds(state, parsed.data);
  if (bad) return bad;
  const old = state.store.entry(id);
  if (!old) return errorReply(404, `entry ${id} not found`);
  const groupIds = parsed.data.groupIds ?? old.groupIds;
  const userIds = parsed.data.userIds ?? old.userIds ?? [];
  if (groupIds.length === 0 && userIds.length === 0) return errorReply(400, NOBODY);
  const entry = state.store.patch(id, entryFields(parsed.data), parsed.data.groupIds, parsed.data.userIds);
  return entry ? json(200, state.store.controlView(entry)) : errorReply(404, `entry ${id} not found`);
}

async function entryRoute(state: SimulatorState, req: IncomingMessage, param: string): Promise<Reply> {
  const id = /^\d{1,15}$/.test(param) ? Number(param) : undefined;
  if (id === undefined) return errorReply(400, `bad entry id: ${param}`);
  if (req.method === 'PATCH') return patchEntry(state, req, id);
  if (req.method === 'DELETE') return state.store.remove(id) ? noContent() : errorReply(404, `entry ${id} not found`);
  if (req.method !== 'GET') return errorReply(405, `${req.method ?? ''} not allowed here`);
  const entry = state.store.entry(id);
  return entry ? json(200, state.store.controlView(entry)) : errorReply(404, `entry ${id} not found`);
}

async function addFault(state: SimulatorState, req: IncomingMessage): Promise<Reply> {
  const read = await body(req);
  if ('error' in read) return read.error;
  const parsed = parseFault(read.value);
  if ('error' in parsed) return errorReply(400, parsed.error);
  return json(201, { id: state.faults.add(parsed.spec) });
}

async function setDialect(state: SimulatorState, req: IncomingMessage): Promise<Reply> {
  const read = await body(req);
  if ('error' in read) return read.error;
  const parsed = dialectSchema.safeParse(read.value);
  if (!parsed.success) return errorReply(400, zodMessage(parsed.error));
  state.setDialect(parsed.data.dialect);
  return json(200, { dialect: state.dialect });
}

function listings(state: SimulatorState, url: URL): Reply | undefined {
  const path = url.pathname;
  const { store } = state;
  if (path === '/_sim/groups') {
    return json(200, {
      groups: [...store.groups.values()].map(({ id, name }) => ({ id, name, entryCount: store.entryCount(id) })),
    });
  }
  if (path === '/_sim/employees') {
    const employees = [...store.employees.values()].map(({ id, lastName, firstName, middleName, teacher }) => ({
      id,
      lastName,
      firstName,
      middleName,
      teacher,
    }));
    return json(200, { employees });
  }
  if (path === '/_sim/users') {
    return json(200, {
      users: store.users.map(({ id, username, token, groupId, subgroup }) => ({
        id,
        username,
        token,
        groupId,
        subgroup,
      })),
    });
  }
  if (path === '/_sim/stats') return json(200, state.stats.snapshot(url.searchParams.getAll('path')));
  if (path === '/_sim/dialect') return json(200, { dialect: state.dialect });
  if (path === '/_sim/faults') {
    return json(200, {
      faults: state.faults
        .list()
        .map((rule) => ({ ...rule, remaining: rule.times === undefined ? null : rule.remaining })),
    });
  }
  return undefined;
}

const ACTIONS: Readonly<Record<string, (state: SimulatorState) => void>> = {
  'DELETE /_sim/faults': (state) => state.faults.clear(),
  'DELETE /_sim/stats': (state) => state.stats.reset(),
  'POST /_sim/reset': (state) => state.reset(),
};

/** Answers a request under `/_sim` (never counted, never faulted). */
export async function handleControl(state: SimulatorState, req: IncomingMessage, url: URL): Promise<Reply> {
  const method = req.method ?? 'GET';
  const path = url.pathname;
  const entryMatch = /^\/_sim\/entries\/([^/]+)$/.exec(path);
  if (entryMatch?.[1] !== undefined) return entryRoute(state, req, entryMatch[1]);
  const faultMatch = /^\/_sim\/faults\/([^/]+)$/.exec(path);
  if (faultMatch?.[1] !== undefined && method === 'DELETE') {
    return state.faults.remove(faultMatch[1]) ? noContent() : errorReply(404, `fault ${faultMatch[1]} not found`);
  }
  const route = `${method} ${path}`;
  if (route === 'POST /_sim/entries') return addEntry(state, req);
  if (route === 'POST /_sim/faults') return addFault(state, req);
  if (route === 'PUT /_sim/dialect') return setDialect(state, req);
  const action = ACTIONS[route];
  if (action) {
    action(state);
    return noContent();
  }
  const listing = method === 'GET' ? listings(state, url) : undefined;
  return listing ?? errorReply(404, `no control route ${route}`);
}
