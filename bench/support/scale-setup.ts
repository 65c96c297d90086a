/**
 * The population of the scale benchmark: the simulator's groups, teachers and users chosen for a step, and
 * the users' personal subscriptions made through the sign-up use case in this process.
 */

import type { ServiceContext } from '../../src/runtime/context.ts';
import { signUp } from '../../src/subscriptions/personal.ts';
import type { Population } from './scale-population.ts';
import { simulatorControl } from './soak-setup.ts';

/** Share of the simulator's employees that teach (its generator makes about 88 % teachers). */
const TEACHER_SHARE = 0.85;

/** Simulator sizes with enough groups, teachers and users for `largest`. */
export function simulatorSizes(largest: Population): { groups: number; employees: number; users: number } {
  return {
    groups: Math.max(1_500, largest.groups),
    employees: Math.max(800, Math.ceil(largest.teachers / TEACHER_SHARE)),
    users: largest.personal,
  };
}

/** The sources of a step: public source keys (`group:<id>`, `employee:<id>`) and the users who sign up. */
export interface StepSources {
  publicSources: string[];
  /** Credentials of the users who sign up, one personal subscription each. */
  credentials: string[];
}

/** The lowest-id groups and teachers and the first users of the simulator, as many as `step` asks. */
export async function stepSources(simulatorUrl: string, step: Population): Promise<StepSources> {
  const { groups } = (await simulatorControl(simulatorUrl, 'GET', '/_sim/groups')) as { groups: { id: number }[] };
  const { employees } = (await simulatorControl(simulatorUrl, 'GET', '/_sim/employees')) as {
    employees: { id: number; teacher: boolean }[];
  };
  const { users } = (await simulatorControl(simulatorUrl, 'GET', '/_sim/users')) as { users: { token: string }[] };
  const lowest = (ids: number[], n: number) => ids.sort((a, b) => a - b).slice(0, n);
  const groupIds = lowest(
    groups.map((group) => group.id),
    step.groups,
  );
  const teacherIds = lowest(
    employees.filter((employee) => employee.teacher).map((employee) => employee.id),
    step.teachers,
  );
  if (groupIds.length < step.groups || teacherIds.length < step.teachers || users.length < step.personal)
    throw new Error(
      `the simulator has ${groupIds.length} groups, ${teacherIds.length} teachers and ${users.length} users; ` +
        `the step needs ${step.groups}, ${step.teachers} and ${step.personal}`,
    );
  return {
    publicSources: [...groupIds.map((id) => `group:${id}`), ...teacherIds.map((id) => `employee:${id}`)],
    credentials: users.slice(0, step.personal).map((user) => user.token),
  };
}

/**
 * Signs every credential up with the sign-up use case (credential checked upstream, subscription and feed
 * token stored, source activated, first refresh queued), `concurrency` at a time; answers the feed paths.
 */
export async function signUpAll(
  ctx: ServiceContext,
  credentials: readonly string[],
  concurrency = 16,
): Promise<string[]> {
  const paths = new Array<string>(credentials.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    for (let index = next++; index < credentials.length; index = next++) {
      const { token } = await signUp(ctx, credentials[index] as string);
      paths[index] = `/feeds/personal/${token}.ics`;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  return paths;
}
