import { WebAPIHTTPError, WebAPIPlatformError, WebAPIRateLimitedError, WebAPIRequestError } from '@slack/web-api';
import { RollcallError } from '../../core/errors.js';

/** Slack's `error` strings that mean the bot token no longer works: only a new token or a reinstall helps. */
const AUTH_ERRORS = new Set([
  'token_revoked',
  'token_expired',
  'invalid_auth',
  'not_authed',
  'account_inactive',
  'no_permission',
  'ekm_access_denied',
]);

/** The Web API call that failed, and the channel it named. */
export interface SlackCall {
  method: string;
  channel?: string;
}

/**
 * A failed Web API call as a RollcallError with a stable slack_* code, so callers and logs branch on
 * the code and never on Slack's wording. `data` keeps Slack's own `error` string and the method.
 * Errors that are not the Web API's (a bug in rollcall) are returned unchanged.
 */
export function slackCallError(call: SlackCall, error: unknown): unknown {
  if (error instanceof RollcallError) return error;
  const where = call.channel ? ` in channel ${call.channel}` : '';
  const data = (slackError?: string) => ({
    method: call.method,
    ...(call.channel ? { channel: call.channel } : {}),
    ...(slackError ? { slackError } : {}),
  });
  if (error instanceof WebAPIRateLimitedError)
    return new RollcallError(
      'slack_rate_limited',
      `Slack kept rate limiting ${call.method}${where} (last Retry-After ${error.retryAfter}s); gave up after the retries allowed. Live updates are coalesced, so this means the workspace is busy: try again in a minute.`,
      { data: data('ratelimited'), cause: error },
    );
  if (error instanceof WebAPIPlatformError) {
    const slackError = error.data.error;
    if (slackError === 'channel_not_found')
      return new RollcallError(
        'slack_channel_not_found',
        `Slack has no channel ${call.channel ?? ''} the bot can see (${call.method}: channel_not_found): check the channel id in rollcall.yaml (an id like C0123ABCD, not a #name), and invite the bot if the channel is private.`,
        { data: data(slackError), cause: error },
      );
    if (slackError === 'not_in_channel')
      return new RollcallError(
        'slack_not_in_channel',
        `the bot is not a member of channel ${call.channel ?? ''} (${call.method}: not_in_channel): /invite the bot there, or add the chat:write.public scope and reinstall the app.`,
        { data: data(slackError), cause: error },
      );
    if (slackError === 'missing_scope') {
      const needed = (error.data as { needed?: string }).needed;
      return new RollcallError(
        'slack_missing_scope',
        `the Slack app lacks the ${needed ?? 'required'} scope for ${call.method}: add it under OAuth & Permissions and reinstall the app.`,
        { data: data(slackError), cause: error },
      );
    }
    if (AUTH_ERRORS.has(slackError))
      return new RollcallError(
        'slack_auth_failed',
        `Slack rejected the bot token on ${call.method} (${slackError}): the token was revoked or the app uninstalled. Reinstall the app and update slack.botToken (xoxb-...).`,
        { data: data(slackError), cause: error },
      );
    return new RollcallError('slack_api_error', `Slack refused ${call.method}${where}: ${slackError}.`, {
      data: data(slackError),
      cause: error,
    });
  }
  if (error instanceof WebAPIHTTPError)
    return new RollcallError(
      'slack_unreachable',
      `Slack answered ${call.method} with HTTP ${error.statusCode} ${error.statusMessage}.`,
      { data: data(), cause: error },
    );
  if (error instanceof WebAPIRequestError)
    return new RollcallError(
      'slack_unreachable',
      `could not reach Slack for ${call.method}: ${error.original.message}.`,
      { data: data(), cause: error },
    );
  return error;
}
