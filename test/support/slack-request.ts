import { createHmac } from 'node:crypto';

/**
 * Signed requests to a Bolt HTTP endpoint, as Slack sends them: `X-Slack-Signature: v0=hex(HMAC-SHA256(secret,
 * "v0:<ts>:<raw body>"))` with `X-Slack-Request-Timestamp` in unix seconds. Bolt rejects timestamps older than
 * 5 minutes and any signature mismatch with 401.
 */
export interface SignOptions {
  /** Unix seconds; default now. */
  timestamp?: number;
  /** Override the computed signature (to test rejection). */
  signature?: string;
  /** Extra headers, e.g. Slack's retry headers `x-slack-retry-num` / `x-slack-retry-reason`. */
  headers?: Record<string, string>;
}

export interface SlackHttpResult {
  status: number;
  /** Raw response body. */
  body: string;
  /** Parsed body when it is JSON. */
  json?: any;
  ms: number;
}

export function slackSignature(secret: string, timestamp: number, body: string): string {
  return 'v0=' + createHmac('sha256', secret).update(`v0:${timestamp}:${body}`).digest('hex');
}

/** POST any body, signed: for bodies Slack would never send. */
export async function signedPost(
  url: string,
  secret: string,
  body: string,
  contentType: string,
  opts: SignOptions = {},
): Promise<SlackHttpResult> {
  const ts = opts.timestamp ?? Math.floor(Date.now() / 1000);
  const started = performance.now();
  const res = await fetch(url, {
    method: 'POST',
    body,
    headers: {
      'content-type': contentType,
      'x-slack-request-timestamp': String(ts),
      'x-slack-signature': opts.signature ?? slackSignature(secret, ts, body),
      ...opts.headers,
    },
  });
  const text = await res.text();
  const ms = performance.now() - started;
  let json: any;
  if (res.headers.get('content-type')?.includes('application/json') && text) json = JSON.parse(text);
  return { status: res.status, body: text, json, ms };
}

export interface SlashCommandFields {
  command?: string;
  text: string;
  user_id?: string;
  user_name?: string;
  channel_id?: string;
  channel_name?: string;
  team_id?: string;
  response_url: string;
  trigger_id?: string;
}

/** A slash command's form body as Slack sends it (form-encoded), with Slack's fields filled in where not given. */
export function slashCommandBody(fields: SlashCommandFields): string {
  return new URLSearchParams({
    token: 'legacy-verification-token',
    team_id: 'T0TEAM',
    team_domain: 'fake',
    channel_id: 'C0OPS',
    channel_name: 'ops',
    user_id: 'U0ALICE',
    user_name: 'alice',
    command: '/argo',
    trigger_id: '1337.42.abcdef',
    api_app_id: 'A0ROLLCALL',
    ...fields,
  }).toString();
}

/** POST a slash command (form-encoded, as Slack does). */
export function postSlashCommand(
  url: string,
  secret: string,
  fields: SlashCommandFields,
  opts?: SignOptions,
): Promise<SlackHttpResult> {
  return signedPost(url, secret, slashCommandBody(fields), 'application/x-www-form-urlencoded', opts);
}

/** POST an interaction (block_actions, view_submission): form-encoded `payload=<json>`. */
export function postInteraction(
  url: string,
  secret: string,
  payload: Record<string, unknown>,
  opts?: SignOptions,
): Promise<SlackHttpResult> {
  const body = new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
  return signedPost(url, secret, body, 'application/x-www-form-urlencoded', opts);
}

/** POST an Events API body (event_callback or url_verification) as JSON. */
export function postEvent(
  url: string,
  secret: string,
  body: Record<string, unknown>,
  opts?: SignOptions,
): Promise<SlackHttpResult> {
  return signedPost(url, secret, JSON.stringify(body), 'application/json', opts);
}

/** A block_actions payload for one button click on a message (or a view when `view` is given). */
export function blockActionsPayload(p: {
  actionId: string;
  value?: string;
  user?: string;
  channel?: string;
  responseUrl?: string;
  messageTs?: string;
  view?: { id: string; type: 'home' | 'modal'; callback_id?: string };
  triggerId?: string;
}): Record<string, unknown> {
  const user = p.user ?? 'U0ALICE';
  const base = {
    type: 'block_actions',
    team: { id: 'T0TEAM', domain: 'fake' },
    user: { id: user, username: user.toLowerCase(), team_id: 'T0TEAM' },
    api_app_id: 'A0ROLLCALL',
    token: 'legacy-verification-token',
    trigger_id: p.triggerId ?? '1337.43.abcdef',
    actions: [
      {
        type: 'button',
        action_id: p.actionId,
        block_id: 'b1',
        value: p.value,
        text: { type: 'plain_text', text: 'x' },
        action_ts: '1700000001.000001',
      },
    ],
  };
  if (p.view) {
    return {
      ...base,
      container: { type: 'view', view_id: p.view.id },
      view: {
        id: p.view.id,
        type: p.view.type,
        callback_id: p.view.callback_id ?? '',
        blocks: [],
        private_metadata: '',
      },
    };
  }
  const channel = p.channel ?? 'C0OPS';
  const ts = p.messageTs ?? '1700000000.000100';
  return {
    ...base,
    container: { type: 'message', message_ts: ts, channel_id: channel, is_ephemeral: true },
    channel: { id: channel, name: 'ops' },
    message: { type: 'message', ts, text: 'x', blocks: [] },
    response_url: p.responseUrl,
  };
}

/** An Events API event_callback envelope. */
export function eventCallback(event: Record<string, unknown>): Record<string, unknown> {
  return {
    token: 'legacy-verification-token',
    team_id: 'T0TEAM',
    api_app_id: 'A0ROLLCALL',
    type: 'event_callback',
    event_id: `Ev${Math.random().toString(36).slice(2, 10)}`,
    event_time: Math.floor(Date.now() / 1000),
    event,
    authorizations: [{ team_id: 'T0TEAM', user_id: 'U0BOT', is_bot: true }],
  };
}
