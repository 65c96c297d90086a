/**
 * The timetable the google-push benchmark pushes: the simulator's largest group, grown with weekly classes
 * until its feed has enough confirmed occurrences, plus one-off classes (one date each) for the rounds to
 * move, cancel and restore. Published once before any target exists.
 */
import type { ServiceContext } from '../../src/runtime/context.ts';
import type { SourceKey } from '../../src/timetable/source.ts';
import { rawRequest } from '../../testkit/processes.ts';
import { type OneOff, TimetableEdits } from '../../testkit/timetable-edits.ts';
import { refreshAndSettle } from './push-phase.ts';
import { confirmedOccurrences } from './push-rounds.ts';

/** An entry of the original timetable picked for a round, with its confirmed occurrences. */
export interface PickedEntry {
  id: number;
  occurrences: number;
}

/** The prepared group. */
export interface PushGroup {
  source: SourceKey;
  edits: TimetableEdits;
  /** Confirmed occurrences of the published feed. */
  occurrences: number;
  /** Entries: the group's own, weekly classes added, one-off classes added. */
  entries: { original: number; weekly: number; oneOff: number };
  /** One-off classes, `perRound` for each of the rounds that edit them, and 2 for the mixed round. */
  oneOffs: { slot: OneOff[]; week: OneOff[]; cancel: OneOff[]; mixed: OneOff[] };
  /** The original entry with the most occurrences (its room changes) and the next one (its teacher changes). */
  roomEntry: PickedEntry;
  teacherEntry: PickedEntry & { otherTeacher: number };
}

/** Weekly classes a semester holds at least (17 weeks, a few lost to holidays): how many to add at once. */
const WEEKLY_OCCURRENCES = 15;

/** Prepares and publishes the group: at least `minOccurrences` confirmed occurrences. */
export async function prepareGroup(
  ctx: ServiceContext,
  simulatorUrl: string,
  minOccurrences: number,
  perRound: number,
): Promise<PushGroup> {
  const listing = JSON.parse((await rawRequest(`${simulatorUrl}/_sim/groups`)).body.toString()) as {
    groups: { id: number; entryCount: number }[];
  };
  const group = listing.groups.reduce((best, next) => (next.entryCount > best.entryCount ? next : best));
  const edits = new TimetableEdits(simulatorUrl, group.id);
  const source = `group:${group.id}`;
  const original = new Set((await edits.entries()).map((entry) => Number(entry.id)));
  const take = async (n: number) => {
    const made: OneOff[] = [];
    for (let i = 0; i < n; i += 1) made.push(await edits.addOneOff());
    return made;
  };
  const oneOffs = {
    slot: await take(perRound),
    week: await take(perRound),
    cancel: await take(perRound),
    mixed: await take(2),
  };
  let weekly = 0;
  for (;;) {
    await refreshAndSettle(ctx, source);
    const count = (await confirmedOccurrences(ctx, source)).length;
    if (count >= minOccurrences) break;
    for (let n = Math.ceil((minOccurrences - count) / WEEKLY_OCCURRENCES); n > 0; n -= 1) {
      weekly += 1;
      await edits.addWeekly(weekly);
    }
  }
  const perEntry = new Map<number, number>();
  const occurrences = await confirmedOccurrences(ctx, source);
  for (const occurrence of occurrences) perEntry.set(occurrence.entryId, (perEntry.get(occurrence.entryId) ?? 0) + 1);
  const lonely = Object.values(oneOffs)
    .flat()
    .filter((oneOff) => perEntry.get(oneOff.id) !== 1);
  if (lonely.length > 0)
    throw new Error(
      `one-off classes without exactly one confirmed occurrence: ${lonely.map((oneOff) => `${oneOff.id} on ${oneOff.date}`).join(', ')}`,
    );
  const ranked = [...perEntry].filter(([id]) => original.has(id)).sort((a, b) => b[1] - a[1] || a[0] - b[0]);
  const [room, teacher] = ranked;
  if (room === undefined || teacher === undefined) throw new Error(`group ${group.id} has too few entries`);
  const entries = { original: original.size, weekly, oneOff: Object.values(oneOffs).flat().length };
  return {
    source,
    edits,
    occurrences: occurrences.length,
    entries,
    oneOffs,
    roomEntry: { id: room[0], occurrences: room[1] },
    teacherEntry: { id: teacher[0], occurrences: teacher[1], otherTeacher: await otherTeacher(edits, teacher[0]) },
  };
}

/** A teacher of the group other than the one of entry `id`. */
async function otherTeacher(edits: TimetableEdits, id: number): Promise<number> {
  const entries = await edits.entries();
  const current = entries.find((entry) => Number(entry.id) === id)?.teacher_id;
  const other = entries
    .map((entry) => Number(entry.teacher_id))
    .find((teacher) => teacher > 0 && teacher !== Number(current));
  if (other === undefined) throw new Error('the group has a single teacher');
  return other;
}
