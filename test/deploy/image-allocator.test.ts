/**
 * The Dockerfile's allocator settings and the ones the memory benchmarks give the service (bench/support/
 * processes.ts): the benchmarks' api figures are the image's only while the two agree.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { IMAGE_ALLOCATOR } from '../../testkit/processes.ts';

const dockerfile = readFileSync(join(import.meta.dirname, '../../Dockerfile'), 'utf8');

/** Every `NAME=value` of the Dockerfile's `ENV` lines whose name starts with `MALLOC_`. */
function imageMallocSettings(text: string): Record<string, string> {
  const settings: Record<string, string> = {};
  for (const line of text.split('\n').filter((candidate) => candidate.startsWith('ENV ')))
    for (const match of line.matchAll(/\b(MALLOC_\w+)=(\S+)/g)) settings[match[1] as string] = match[2] as string;
  return settings;
}

describe('the image allocator settings', () => {
  it('are the ones the benchmarks apply', () => {
    expect(imageMallocSettings(dockerfile)).toEqual(IMAGE_ALLOCATOR);
  });

  it('are read from ENV lines only', () => {
    expect(imageMallocSettings('# ENV MALLOC_ARENA_MAX=8\nENV A=1 MALLOC_ARENA_MAX=2\nRUN MALLOC_X=1 true')).toEqual({
      MALLOC_ARENA_MAX: '2',
    });
  });
});
