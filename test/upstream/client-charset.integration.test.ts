/**
 * Bodies in windows-1251, as older deployments send them: labelled in `Content-Type`, or not labelled at all
 * (read as windows-1251 with one warning per endpoint), through the real client over loopback HTTP.
 */
import type { ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { encodeWindows1251 } from '../../src/simulator/charset.ts';
import { createUniversityClient, type UniversityClient } from '../../src/upstream/client.ts';
import { UpstreamNotFoundError } from '../../src/upstream/errors.ts';
import { rawEntry } from './fixtures.ts';
import { type LocalServer, memoryLogger, startLocalServer } from './local-server.ts';

let server: LocalServer;
const clients: UniversityClient[] = [];

beforeAll(async () => {
  server = await startLocalServer();
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  server.seen.length = 0;
});
afterAll(() => server.close());

function client() {
  const { logger, output } = memoryLogger();
  const created = createUniversityClient({ baseUrl: server.url, logger, retry: { attempts: 3, baseDelayMs: 1 } });
  clients.push(created);
  return {
    client: created,
    warnings: () =>
      output()
        .split('\n')
        .filter((line) => line.includes('windows-1251')),
  };
}

function send1251(res: ServerResponse, status: number, body: unknown, contentType: string): void {
  res.writeHead(status, { 'content-type': contentType });
  res.end(encodeWindows1251(JSON.stringify(body)));
}

const ENTRY = rawEntry({ subject_name: 'Дискретная математика', teacher_lastname: 'Ёлкин', group_list: '09-351' });

describe('windows-1251 bodies', () => {
  it('reads a body in the charset its Content-Type names, without a warning', async () => {
    server.handle((_req, res) =>
      send1251(res, 200, { success: true, subjects: [ENTRY] }, 'application/json; charset=windows-1251'),
    );
    const { client: c, warnings } = client();
    const { entries } = await c.groupSchedule(1);
    expect(entries[0]).toMatchObject({ subjectName: 'Дискретная математика', groups: ['09-351'] });
    expect(entries[0]?.teacher.lastName).toBe('Ёлкин');
    expect(warnings()).toEqual([]);
  });

  it('reads an unlabelled body that is not UTF-8 as windows-1251, warning once per endpoint', async () => {
    server.handle((req, res) => {
      const body = req.url.startsWith('/employees?')
        ? { employees: [{ employee_id: '5', lastname: 'Ёлкин', firstname: 'Иван' }] }
        : { subjects: [ENTRY] };
      send1251(res, 200, body, 'application/json');
    });
    const { client: c, warnings } = client();
    for (const groupId of [1, 2, 3]) {
      expect((await c.groupSchedule(groupId)).entries[0]?.subjectName).toBe('Дискретная математика');
    }
    expect(await c.searchEmployees('Ёлкин')).toEqual([expect.objectContaining({ id: 5, lastName: 'Ёлкин' })]);
    const lines = warnings().map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toEqual([
      expect.objectContaining({ level: 40, endpoint: 'groupSchedule', reason: 'not valid UTF-8 and no charset named' }),
      expect.objectContaining({ level: 40, endpoint: 'employeeSearch' }),
    ]);
  });

  it('reads UTF-8 with a byte order mark and no charset as UTF-8', async () => {
    server.handle((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(Buffer.from(`\ufeff${JSON.stringify({ success: true, subjects: [ENTRY] })}`));
    });
    const { client: c, warnings } = client();
    expect((await c.groupSchedule(1)).entries[0]?.subjectName).toBe('Дискретная математика');
    expect(warnings()).toEqual([]);
  });

  it('reads a windows-1251 error text, and takes a 400 for an id as an unknown id, without retrying', async () => {
    server.handle((_req, res) =>
      send1251(res, 400, { success: false, error: 'Некорректный идентификатор группы' }, 'application/json'),
    );
    const { client: c } = client();
    const error = await c.groupSchedule(77).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(UpstreamNotFoundError);
    expect(error).toMatchObject({ status: 400, upstreamMessage: 'Некорректный идентификатор группы' });
    expect(server.seen).toHaveLength(1);
  });
});
