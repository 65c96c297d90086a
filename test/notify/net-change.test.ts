import { describe, expect, it } from 'vitest';
import { netChange } from '../../src/notify/net-change.ts';
import { changeLine } from '../../src/notify/telegram/message.ts';
import type { ChangeSet, NotifyItem, NotifySide } from '../../src/timetable/notify-change.ts';

const START = Date.UTC(2030, 9, 2, 12, 40);

function side(overrides: Partial<NotifySide> = {}): NotifySide {
  return {
    date: '2030-10-02',
    begin: '15:40',
    end: '17:10',
    startUtc: START,
    summary: 'Оптика (лабораторная работа)',
    location: 'Корпус 1, 425',
    teacher: 'Иванов Иван Иванович',
    ...overrides,
  };
}

function item(kind: NotifyItem['kind'], before?: NotifySide, after?: NotifySide, uid = 'u1'): NotifyItem {
  const starts = [before?.startUtc, after?.startUtc].filter((start): start is number => start !== undefined);
  return {
    kind,
    uid,
    ...(before ? { before } : {}),
    ...(after ? { after } : {}),
    startsAt: Math.min(...starts),
    lessonKind: 'лабораторная работа',
    note: '',
  };
}

function set(stamp: number, ...items: NotifyItem[]): ChangeSet {
  return { source: 'group:4242', name: 'ИВТ-21', stamp, items, omitted: 0 };
}

const room = (number: string) => side({ location: `Корпус 1, ${number}` });

describe('netChange', () => {
  it('tells 425 → 518 then 518 → 620 as one «ауд. 425 → 620»', () => {
    const net = netChange([
      set(1, item('moved', room('425'), room('518'))),
      set(2, item('moved', room('518'), room('620'))),
    ]);
    expect(net?.stamp).toBe(2);
    expect(net?.items.map((each) => changeLine(each))).toEqual(['15:40 Оптика (лабораторная работа): ауд. 425 → 620']);
  });

  it('tells nothing of a class moved and moved back, cancelled and restored, or added and cancelled', () => {
    expect(
      netChange([set(1, item('moved', room('425'), room('518'))), set(2, item('moved', room('518'), room('425')))])
        ?.items,
    ).toEqual([]);
    // Moved to another day (another uid) and back.
    const friday = side({ date: '2030-10-04', startUtc: START + 2 * 86_400_000 });
    const away = { ...item('moved', side(), friday, 'u1-fri'), beforeUid: 'u1' };
    const back = { ...item('moved', friday, side(), 'u1'), beforeUid: 'u1-fri' };
    expect(netChange([set(1, away), set(2, back)])?.items).toEqual([]);
    expect(netChange([set(1, item('cancelled', side())), set(2, item('added', undefined, side()))])?.items).toEqual([]);
    // Restored under another uid, exactly as it was.
    expect(
      netChange([set(1, item('cancelled', side())), set(2, item('added', undefined, side(), 'u9'))])?.items,
    ).toEqual([]);
    expect(netChange([set(1, item('added', undefined, side())), set(2, item('cancelled', side()))])?.items).toEqual([]);
  });

  it('keeps what is left: a move then a cancel is a cancel of the class as it was known; an add then a move is an add', () => {
    const cancelled = netChange([
      set(1, item('moved', room('425'), room('518'))),
      set(2, item('cancelled', room('518'))),
    ]);
    expect(cancelled?.items).toEqual([item('cancelled', room('425'))]);
    const added = netChange([
      set(1, item('added', undefined, room('425'))),
      set(2, item('moved', room('425'), room('620'))),
    ]);
    expect(added?.items).toEqual([item('added', undefined, room('620'))]);
    const teacher = side({ teacher: 'Петров Пётр Петрович' });
    expect(netChange([set(1, item('teacher', side(), teacher))])?.items.map((each) => each.kind)).toEqual(['teacher']);
  });

  it('keeps classes apart, soonest first, and sums what the sets left out', () => {
    const later = side({ begin: '17:20', end: '18:50', startUtc: START + 6_000_000, location: 'Корпус 1, 100' });
    const net = netChange([
      { ...set(1, item('moved', later, { ...later, location: 'Корпус 1, 101' }, 'u2')), omitted: 2 },
      { ...set(2, item('cancelled', side())), omitted: 1 },
    ]);
    expect(net?.items.map((each) => each.uid)).toEqual(['u1', 'u2']);
    expect(net?.omitted).toBe(3);
    expect(netChange([])).toBeUndefined();
  });
});
