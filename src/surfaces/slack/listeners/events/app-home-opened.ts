import type { AllMiddlewareArgs, SlackEventMiddlewareArgs } from '@slack/bolt';
import { slackContext, type SlackDeps } from '../../context.js';
import { buildHomeView } from '../../home.js';

/** The Home tab is rebuilt each time it is opened: it reads the mirror, so this is cheap. */
export function appHomeOpened({ services, logger }: SlackDeps) {
  return async ({ event, client }: SlackEventMiddlewareArgs<'app_home_opened'> & AllMiddlewareArgs): Promise<void> => {
    if (event.tab !== 'home') return;
    try {
      const view = await buildHomeView(slackContext(services, { user: event.user }), logger);
      await client.views.publish({ user_id: event.user, view });
    } catch (err) {
      logger.error({ err, user: event.user }, 'publishing the App Home failed');
    }
  };
}
