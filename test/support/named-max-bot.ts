/**
 * A MAX bot that only says its name: what a timetable page needs to link it. Tests of the pages take it instead of
 * a bot over the fake MAX API; anything else asked of it throws, so a test that reaches further fails loudly.
 */
import type { MaxBot } from '../../src/notify/max/bot.ts';

/** A bot named `name` (undefined: MAX has not said the name yet). */
export function namedMaxBot(name: string | undefined): MaxBot {
  const unused = (what: string) => () => {
    throw new Error(`a page test's MAX bot only says its name, it cannot ${what}`);
  };
  return {
    username: async () => name,
    handle: unused('handle updates'),
    handlePage: unused('handle updates'),
    idle: unused('be waited for'),
    subscribeWebhook: unused('subscribe a webhook'),
    checkWebhook: unused('check a webhook'),
    get webhookSecret(): string {
      throw new Error("a page test's MAX bot has no webhook secret");
    },
  };
}
