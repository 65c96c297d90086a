import {
  COMMON_SUBJECTS,
  domainSubjects,
  KIND,
  type Kind,
  LAB_DOMAINS,
  SEMINAR_DOMAINS,
  SPORTS_BUILDING_ID,
} from './catalog.ts';
import { addClass, type BuildContext, type ClassSpec, emitEntry, occupy, place } from './class-builder.ts';
import type { Stream } from './generate-groups.ts';
import type { TeacherPools } from './generate-people.ts';
import type { Employee, Group } from './model.ts';
import type { Span, WeekType } from './occupancy.ts';
import type { Random } from './random.ts';

interface Staff {
  pools: TeacherPools;
  all: readonly Employee[];
}

function pool(staff: Staff, key: string): readonly Employee[] {
  const found = staff.pools.get(key);
  return found && found.length > 0 ? found : staff.all;
}

function weekType(random: Random, everyWeekShare: number): WeekType {
  if (random.chance(everyWeekShare)) return 0;
  return random.chance(0.5) ? 1 : 2;
}

function span(random: Random): Span {
  if (random.chance(0.85)) return 'full';
  return random.chance(0.5) ? 'first' : 'second';
}

function classKind(random: Random, stream: Stream, general: boolean): Kind {
  const { domain } = stream.institute;
  if (!general && LAB_DOMAINS.has(domain) && random.chance(0.4)) return KIND.lab;
  return general || SEMINAR_DOMAINS.has(domain) ? KIND.seminar : KIND.practice;
}

/**
 * A class split between two subgroups: either both halves in one slot on alternating weeks (odd for the first
 * subgroup, even for the second, one teacher), or two separate slots.
 */
function addSubgroupPair(ctx: BuildContext, spec: ClassSpec, alternate: boolean): void {
  if (alternate) {
    const placed = place(ctx, { ...spec, weekType: 0 });
    if (placed) {
      occupy(ctx, spec.groups, placed);
      emitEntry(ctx, spec, placed, 1, '1 подгруппа');
      emitEntry(ctx, spec, placed, 2, '2 подгруппа');
      return;
    }
  }
  addClass(ctx, { ...spec, note: '1 подгруппа' });
  addClass(ctx, { ...spec, note: '2 подгруппа' });
}

/** One subject of a stream: a shared lecture plus each group's own practice, seminar or lab. */
function planSubject(
  ctx: BuildContext,
  stream: Stream,
  subject: string,
  teachers: readonly Employee[],
  general: boolean,
): void {
  const { random } = ctx;
  const buildingId = stream.institute.buildingId;
  const base = { subject, teachers, buildingId };
  addClass(ctx, {
    ...base,
    groups: stream.groups,
    kind: KIND.lecture,
    weekType: weekType(random, 0.7),
    span: span(random),
  });
  for (const group of stream.groups) {
    const kind = classKind(random, stream, general);
    const spec: ClassSpec = { ...base, groups: [group], kind, weekType: weekType(random, 0.55), span: span(random) };
    if (kind === KIND.lab && random.chance(0.6)) addSubgroupPair(ctx, { ...spec, weekType: 0 }, random.chance(0.6));
    else addClass(ctx, spec);
    if (random.chance(0.25))
      addClass(ctx, { ...spec, kind: classKind(random, stream, general), weekType: weekType(random, 0.3) });
  }
}

/** Foreign language (in subgroups) and physical education for the first three years. */
function planGeneralClasses(ctx: BuildContext, stream: Stream, group: Group, staff: Staff): void {
  if (stream.course > 3) return;
  const { random } = ctx;
  const language: ClassSpec = {
    groups: [group],
    subject: 'Иностранный язык',
    kind: KIND.practice,
    teachers: pool(staff, 'languages'),
    weekType: 0,
    span: 'full',
    buildingId: stream.institute.buildingId,
  };
  addSubgroupPair(ctx, language, random.chance(0.3));
  addClass(ctx, {
    groups: [group],
    subject: 'Физическая культура и спорт',
    kind: KIND.practice,
    teachers: pool(staff, 'sport'),
    weekType: 0,
    span: 'full',
    buildingId: SPORTS_BUILDING_ID,
    room: `Зал ${random.int(1, 4)}`,
  });
}

/** Generates every stream's timetable into `ctx.entries`. */
export function generateTimetable(
  ctx: BuildContext,
  streams: readonly Stream[],
  pools: TeacherPools,
  all: readonly Employee[],
): void {
  const staff: Staff = { pools, all };
  const { random } = ctx;
  for (const stream of streams) {
    const own = pool(staff, stream.institute.code);
    // Senior years have no language or PE classes, and more subjects instead.
    const count = random.int(6, 7) + (stream.course > 3 ? 2 : 0);
    const subjects = random.shuffle(domainSubjects(stream.institute.domain)).slice(0, count);
    for (const subject of subjects) planSubject(ctx, stream, subject, own, false);
    if (stream.course <= 2 || random.chance(0.3)) {
      planSubject(ctx, stream, random.pick(COMMON_SUBJECTS), pool(staff, 'humanities'), true);
    }
    for (const group of stream.groups) planGeneralClasses(ctx, stream, group, staff);
  }
}
