import type { AllMiddlewareArgs, SlackActionMiddlewareArgs } from '@slack/bolt';

/** URL buttons open in the browser, but Slack still sends block_actions and shows a warning if it is not acked. */
export function linkButton() {
  return async ({ ack }: SlackActionMiddlewareArgs & AllMiddlewareArgs): Promise<void> => {
    await ack();
  };
}
