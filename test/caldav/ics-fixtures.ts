/** Occurrences and resources for the CalDAV resource and merge tests. */
import type { DesiredResource } from '../../src/caldav/caldav-client.ts';
import { desiredResources, type ResourceOptions } from '../../src/caldav/ics-resource.ts';
import type { Occurrence } from '../../src/timetable/types.ts';

export const STAMP = Date.UTC(2025, 8, 1, 12, 0, 0);

export function occurrence(overrides: Partial<Occurrence> = {}): Occurrence {
  return {
    uid: '4711-2025-10-01',
    entryId: 4711,
    date: '2025-10-01',
    beginTime: '09:00',
    endTime: '10:35',
    timezone: 'Europe/Moscow',
    startUtc: Date.UTC(2025, 9, 1, 6),
    endUtc: Date.UTC(2025, 9, 1, 7, 35),
    summary: 'Математика (лекция)',
    location: 'ауд. 101',
    description: 'Иванов И. И.',
    categories: ['лекция'],
    status: 'CONFIRMED',
    hash: 'occurrence-hash',
    sequence: 2,
    ...overrides,
  };
}

/** The one resource of one occurrence. */
export function resourceOf(
  overrides: Partial<Occurrence> = {},
  options: Partial<ResourceOptions> = {},
): DesiredResource {
  const [one] = desiredResources([occurrence(overrides)], 'group:4242', {
    cancelledPrefix: 'Отменено: ',
    timeZone: 'Europe/Moscow',
    stamp: STAMP,
    ...options,
  });
  if (one === undefined) throw new Error('the occurrence gave no resource');
  return one;
}
