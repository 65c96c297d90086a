/**
 * Response schemas of the university API: zod validation plus normalisation into the types the rest of the
 * pipeline consumes. Pure functions of the parsed JSON; nothing here performs I/O.
 */
export {
  parseScheduleResponse,
  type EntryProblem,
  type ScheduleResult,
  type TimetableEntry,
} from './schedule-schema.ts';
export {
  parseEmployeeSearchResponse,
  parsePlanResponse,
  type Employee,
  type PlanSubject,
} from './directory-schema.ts';
export {
  DEFAULT_USER_SELECT,
  parseUserResponse,
  type Group,
  type GroupSelect,
  type SelectedUser,
  type UserProfile,
  type UserSelect,
} from './profile-schema.ts';
export { openEnvelope, upstreamErrorText } from './envelope.ts';
