/** STUB (issue 13, study plan helper replaces it): the plan table of the personal page. */
import type { StudyPlanView } from '../subscriptions/study-plan-view.ts';
import type { Html } from './html.ts';
import type { Lang } from './i18n.ts';

export function planSection(_view: StudyPlanView, _lang: Lang): Html {
  return '';
}
