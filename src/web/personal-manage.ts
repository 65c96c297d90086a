/**
 * STUB (issue 13, personal-management helper replaces it): the owner's controls on the personal page: rotate
 * the feed URL, saved feed options, delete the subscription (forms posting to http/personal-routes.ts).
 */
import type { Subscription } from '../subscriptions/subscription-store.ts';
import type { Html } from './html.ts';
import type { Lang } from './i18n.ts';

export interface PersonalManageView {
  lang: Lang;
  subscription: Subscription;
}

export function personalManageSection(_view: PersonalManageView): Html {
  return '';
}
