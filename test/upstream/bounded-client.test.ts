import { describe, expect, it } from 'vitest';
import { toHttpError } from '../../src/http/errors.ts';
import { boundedClient } from '../../src/upstream/bounded-client.ts';
import type { UniversityClient } from '../../src/upstream/client.ts';
import { UpstreamBusyError } from '../../src/upstream/errors.ts';
import type { Employee } from '../../src/upstream/schemas.ts';

/** A client whose searches wait until released, counting the calls that reached it. */
function slowClient() {
  const waiting: (() => void)[] = [];
  let calls = 0;
  const search = () => {
    calls += 1;
    return new Promise<Employee[]>((resolve) => waiting.push(() => resolve([])));
  };
  const client = { searchEmployees: search, close: async () => undefined } as unknown as UniversityClient;
  return {
    client,
    calls: () => calls,
    releaseAll: () => {
      for (const release of waiting.splice(0)) release();
    },
  };
}

describe('boundedClient', () => {
  it('refuses calls beyond the bound at once, without reaching the university, and admits them again after', async () => {
    const slow = slowClient();
    const bounded = boundedClient(slow.client, 2);
    const first = [bounded.searchEmployees('ив'), bounded.searchEmployees('пе')];
    const refused = await bounded.searchEmployees('си').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(UpstreamBusyError);
    expect(slow.calls()).toBe(2);
    const answer = toHttpError(refused);
    expect(answer?.statusCode).toBe(503);
    expect(answer?.headers).toEqual({ 'retry-after': '5' });
    expect(answer?.message).toMatch(/too many requests are waiting for the university/);
    slow.releaseAll();
    await Promise.all(first);
    const again = bounded.searchEmployees('си');
    slow.releaseAll();
    expect(await again).toEqual([]);
    expect(slow.calls()).toBe(3);
  });

  it('frees its place when a call fails', async () => {
    const failing = {
      searchEmployees: async () => {
        throw new Error('down');
      },
    } as unknown as UniversityClient;
    const bounded = boundedClient(failing, 1);
    await expect(bounded.searchEmployees('ив')).rejects.toThrow('down');
    await expect(bounded.searchEmployees('ив')).rejects.toThrow('down');
  });
});
