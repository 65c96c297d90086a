/**
 * The study plans of personal sources in Redis: one packed value (compressed JSON, lib/packed-json.ts) per source
 * (`study-plan:<source>`) with the last plan fetched successfully and how the last fetch went; a plain JSON text
 * stored by earlier releases is read as well. The source's removal deletes it (registry).
 */

import { packJson, unpackJson } from '../lib/packed-json.ts';
import type { RedisClient } from '../lib/redis-target.ts';
import type { SourceKey } from '../timetable/source.ts';
import type { PlanNote } from '../timetable/study-plan.ts';
import type { PlanSubject } from '../upstream/directory-schema.ts';
import type { RedisKeys } from './keys.ts';

/** Why the last plan fetch failed. */
export interface PlanFailure {
  at: number;
  /** The failure class (`auth`, `timeout`, `network`, …; see `jobs/failure-class.ts`). */
  kind: string;
  message: string;
}

/** A source's study plan as stored. */
export interface StoredStudyPlan {
  /** When the plan in `subjects` was fetched; null: never (no fetch has succeeded yet). */
  fetchedAt: number | null;
  /** When a fetch was last tried, successful or not. */
  attemptedAt: number;
  /** The last try's failure; null when it succeeded. */
  failure: PlanFailure | null;
  /** The last plan fetched successfully (every semester), in plan order. */
  subjects: PlanNote[];
}

/** A plan row as descriptions and the comparison use it. */
export function planNoteOf(subject: PlanSubject): PlanNote {
  return {
    semester: subject.semester,
    subjectId: subject.subjectId,
    name: subject.subjectName,
    code: subject.fullShifr,
    exam: subject.isExam,
    quiz: subject.isQuiz,
    hours: {
      lecture: subject.lectureHours,
      practice: subject.practiceHours,
      seminar: subject.seminarHours,
      laboratory: subject.laboratoryHours,
    },
  };
}

/** Reads and writes the study plans of personal sources. */
export class StudyPlanStore {
  readonly #redis: RedisClient;
  readonly #keys: RedisKeys;

  constructor(redis: RedisClient, keys: RedisKeys) {
    this.#redis = redis;
    this.#keys = keys;
  }

  /** The stored plan of `source`, or undefined when none was ever tried. */
  async load(source: SourceKey): Promise<StoredStudyPlan | undefined> {
    const bytes = await this.#redis.getBuffer(this.#keys.studyPlan(source));
    return bytes === null ? undefined : unpackJson<StoredStudyPlan>(bytes);
  }

  /** Stores a plan fetched at `now`. */
  async saveFetched(source: SourceKey, subjects: readonly PlanSubject[], now: number): Promise<StoredStudyPlan> {
    const plan: StoredStudyPlan = {
      fetchedAt: now,
      attemptedAt: now,
      failure: null,
      subjects: subjects.map(planNoteOf),
    };
    await this.#redis.set(this.#keys.studyPlan(source), packJson(plan));
    return plan;
  }

  /** Records a failed fetch; the last good plan, if any, is kept. */
  async saveFailure(source: SourceKey, previous: StoredStudyPlan | undefined, failure: PlanFailure): Promise<void> {
    const plan: StoredStudyPlan = {
      fetchedAt: previous?.fetchedAt ?? null,
      attemptedAt: failure.at,
      failure,
      subjects: previous?.subjects ?? [],
    };
    await this.#redis.set(this.#keys.studyPlan(source), packJson(plan));
  }
}
