/**
 * Response schemas of the university API: zod validation plus normalisation into the types the rest of the
 * pipeline consumes. Pure functions of the parsed JSON; nothing here performs I/O.
 */

export {
  type Employee,
  type PlanSubject,
  parseEmployeeSearchResponse,
  parsePlanResponse,
} from './directory-schema.ts';
export { openEnvelope, upstreamErrorText } from './envelope.ts';
export {
  DEFAULT_USER_SELECT,
  type Group,
  type GroupSelect,
  parseUserResponse,
  type SelectedUser,
  type UserProfile,
  type UserSelect,
} from './profile-schema.ts';
export {
  type EntryProblem,
  parseScheduleResponse,
  type ScheduleResult,
  type TimetableEntry,
} from './schedule-schema.ts';
