import { BUILDINGS, type Kind, subjectId, TIME_SLOTS } from './catalog.ts';
import type { Semester } from './dates.ts';
import type { Employee, Entry, Group } from './model.ts';
import { type Occupancy, type Placement, type Span, type WeekType, weekCells } from './occupancy.ts';
import type { Random } from './random.ts';

/** A class to place: who attends, what, with which pool of possible teachers, on which weeks. */
export interface ClassSpec {
  groups: readonly Group[];
  subject: string;
  kind: Kind;
  teachers: readonly Employee[];
  weekType: WeekType;
  span: Span;
  buildingId: number;
  note?: string;
  /** Fixed room, e.g. a gym; default a random room of the building. */
  room?: string;
}

/** Generation state shared by every class of one dataset. */
export interface BuildContext {
  random: Random;
  semester: Semester;
  occupancy: Occupancy;
  entries: Entry[];
  nextId: number;
}

/** A placed class: its time, teacher and room. */
export interface PlacedClass {
  placement: Placement;
  teacher: Employee;
  room: string;
}

const CELLS = weekCells();

// Late slots and Saturdays are possible but unpopular.
function penalty(day: number, slot: number): number {
  const bySlot = [1, 1, 1, 1.1, 1.8, 3.5, 8][slot - 1] ?? 8;
  return bySlot * (day === 6 ? 2 : 1);
}

function candidates(random: Random): { day: number; slot: number }[] {
  return CELLS.map((cell) => ({ cell, key: random.next() * penalty(cell.day, cell.slot) }))
    .sort((a, b) => a.key - b.key)
    .map(({ cell }) => cell);
}

function groupsFree(ctx: BuildContext, groups: readonly Group[], placement: Placement): boolean {
  return groups.every((group) => ctx.occupancy.isFree(`g${group.id}`, placement));
}

/**
 * Finds a slot free for every group and, if possible, for one of a few candidate teachers; when every teacher
 * is busy the class still goes in (teachers of big general departments are overbooked in real life too).
 */
export function place(ctx: BuildContext, spec: ClassSpec): PlacedClass | undefined {
  const { random } = ctx;
  const cells = candidates(random);
  const teachers = [0, 1, 2].map(() => random.pick(spec.teachers));
  const room = spec.room ?? randomRoom(random, spec.buildingId);
  for (const cell of cells) {
    const placement: Placement = { ...cell, weekType: spec.weekType, span: spec.span };
    if (!groupsFree(ctx, spec.groups, placement)) continue;
    const teacher = teachers.find((candidate) => ctx.occupancy.isFree(`t${candidate.id}`, placement));
    if (teacher) return { placement, teacher, room };
  }
  for (const cell of cells) {
    const placement: Placement = { ...cell, weekType: spec.weekType, span: spec.span };
    if (groupsFree(ctx, spec.groups, placement)) return { placement, teacher: teachers[0] as Employee, room };
  }
  return undefined;
}

/** Marks a placed class as taken for its groups and teacher. */
export function occupy(ctx: BuildContext, groups: readonly Group[], placed: PlacedClass): void {
  for (const group of groups) ctx.occupancy.occupy(`g${group.id}`, placed.placement);
  ctx.occupancy.occupy(`t${placed.teacher.id}`, placed.placement);
}

/** A room number in a building: floor first, sometimes with a letter ("305", "1108а"). */
export function randomRoom(random: Random, buildingId: number): string {
  const floors = BUILDINGS.find((building) => building.id === buildingId)?.floors ?? 4;
  const room = `${random.int(1, floors)}${String(random.int(1, 30)).padStart(2, '0')}`;
  return random.chance(0.06) ? `${room}а` : room;
}

/** Appends the wire entry for a placed class (weekType may differ from the spec's for subgroup pairs). */
export function emitEntry(
  ctx: BuildContext,
  spec: ClassSpec,
  placed: PlacedClass,
  weekType: WeekType,
  note: string,
): void {
  const { semester } = ctx;
  const { placement, teacher } = placed;
  const slot = TIME_SLOTS[placement.slot - 1] ?? { id: placement.slot, begin: '08:30', end: '10:00' };
  const course = spec.groups[0]?.course ?? 1;
  ctx.nextId += ctx.random.int(1, 3);
  const fields = {
    id: ctx.nextId,
    semester: semester.season === 'autumn' ? course * 2 - 1 : course * 2,
    year: semester.academicYear,
    subject_name: spec.subject,
    subject_id: subjectId(spec.subject),
    start_day_schedule: placement.span === 'second' ? semester.secondHalfStart : semester.start,
    finish_day_schedule: placement.span === 'first' ? semester.firstHalfEnd : semester.finish,
    day_week_schedule: placement.day,
    type_week_schedule: weekType,
    note_schedule: note,
    time_interval_id: slot.id,
    total_time_schedule: `${slot.begin}-${slot.end}`,
    begin_time_schedule: slot.begin,
    end_time_schedule: slot.end,
    teacher_id: teacher.id,
    teacher_lastname: teacher.lastName,
    teacher_firstname: teacher.firstName,
    teacher_middlename: teacher.middleName,
    num_auditorium_schedule: placed.room,
    building_name: BUILDINGS.find((building) => building.id === spec.buildingId)?.name ?? '',
    building_id: spec.buildingId,
    group_list: spec.groups.map((group) => group.name).join(', '),
    subject_kind_name: spec.kind,
  };
  ctx.entries.push({ id: ctx.nextId, groupIds: spec.groups.map((group) => group.id), fields });
}

/** Places a class and emits it once; returns false when no slot was free. */
export function addClass(ctx: BuildContext, spec: ClassSpec): boolean {
  const placed = place(ctx, spec);
  if (!placed) return false;
  occupy(ctx, spec.groups, placed);
  emitEntry(ctx, spec, placed, spec.weekType, spec.note ?? '');
  return true;
}
