/**
 * A class of a change set as the notify tests tell it: «Оптика (лабораторная работа)» on 2030-10-02 at 15:40 in
 * Moscow (years ahead, so it has never started), its room moved. The channel core's, the quiet hours' and the
 * e-mail channel's tests share it.
 */
import type { NotifyItem, NotifySide } from '../../src/timetable/notify-change.ts';

/** When the class starts (epoch ms). */
export const CLASS = Date.UTC(2030, 9, 2, 12, 40);

/** One side of the class, in room `room` of «Корпус 1». */
export function side(room: string, overrides: Partial<NotifySide> = {}): NotifySide {
  return {
    date: '2030-10-02',
    begin: '15:40',
    end: '17:10',
    startUtc: CLASS,
    summary: 'Оптика (лабораторная работа)',
    location: `Корпус 1, ${room}`,
    teacher: '',
    ...overrides,
  };
}

/** The class moved from room `from` to room `to` (`overrides` apply to both sides, `startUtc` to when it starts). */
export function moved(from: string, to: string, uid = 'u1', overrides: Partial<NotifySide> = {}): NotifyItem {
  return {
    kind: 'moved',
    uid,
    before: side(from, overrides),
    after: side(to, overrides),
    startsAt: overrides.startUtc ?? CLASS,
    lessonKind: 'лабораторная работа',
    note: '',
  };
}
