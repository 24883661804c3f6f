import { decodeModalMetadata } from './modals.js';

/**
 * One request from Slack as the authorization path sees it, whatever its surface: who sent it, from which
 * channel, and what it asks. Read from the parsed body Bolt dispatches (HTTP and Socket Mode alike).
 */
export interface SlackEntry {
  kind: 'command' | 'action' | 'view' | 'shortcut' | 'event' | 'options';
  /** The Slack user id; absent when the payload names none (Slack always does). */
  user?: string;
  /**
   * Where it was asked. Absent where Slack has no channel (the Home tab, a modal opened from it, an event):
   * a modal's channel is the one it was opened from, carried in its private_metadata.
   */
  channel?: { id: string; name?: string };
  /** What was asked: the command text, the action id, the callback id or the event type. */
  what: string;
}

type Obj = Record<string, unknown>;

const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 ? v : undefined);
const field = (v: unknown, key: string): unknown => (isObject(v) ? v[key] : undefined);

function channelOf(id: unknown, name: unknown): SlackEntry['channel'] {
  const channel = str(id);
  return channel ? { id: channel, ...(str(name) ? { name: str(name) } : {}) } : undefined;
}

/** Interactions (form field `payload`): a button, a modal, a shortcut, a select's options. */
function interactionEntry(body: Obj, type: string): SlackEntry | undefined {
  const user = str(field(body.user, 'id'));
  const base = { ...(user ? { user } : {}) };
  switch (type) {
    case 'block_actions': {
      const first = Array.isArray(body.actions) ? body.actions[0] : undefined;
      const viewChannel = decodeModalMetadata(str(field(body.view, 'private_metadata'))).origin.channel;
      const channel =
        channelOf(field(body.channel, 'id'), field(body.channel, 'name')) ?? channelOf(viewChannel, undefined);
      return { kind: 'action', ...base, ...(channel ? { channel } : {}), what: str(field(first, 'action_id')) ?? '' };
    }
    case 'view_submission':
    case 'view_closed': {
      const channel = channelOf(
        decodeModalMetadata(str(field(body.view, 'private_metadata'))).origin.channel,
        undefined,
      );
      return {
        kind: 'view',
        ...base,
        ...(channel ? { channel } : {}),
        what: str(field(body.view, 'callback_id')) ?? '',
      };
    }
    case 'shortcut':
    case 'message_action': {
      const channel = channelOf(field(body.channel, 'id'), field(body.channel, 'name'));
      return { kind: 'shortcut', ...base, ...(channel ? { channel } : {}), what: str(body.callback_id) ?? '' };
    }
    case 'block_suggestion':
      return { kind: 'options', ...base, what: str(body.action_id) ?? '' };
    default:
      return undefined;
  }
}

/** Fields Bolt dereferences before any listener runs: when present they must be objects (or a list of them). */
const OBJECT_FIELDS = ['event', 'channel', 'user', 'view'] as const;

/**
 * Why a parsed body is not a Slack request, or undefined when it is one: an object that is an ssl_check, a
 * slash command (`command`) or says its `type`. Bolt reads fields of anything it is given before it routes
 * it (`body.ssl_check`, `event.channel`, `channel.id`, `actions[0]`), and a TypeError there is thrown in a
 * promise no one awaits; so nothing else may reach it.
 */
export function malformedBody(body: unknown): string | undefined {
  if (!isObject(body))
    return `the body is ${body === null ? 'null' : Array.isArray(body) ? 'an array' : `a ${typeof body}`}, not an object`;
  if (body.ssl_check === '1') return undefined;
  for (const key of OBJECT_FIELDS) if (key in body && !isObject(body[key])) return `\`${key}\` is not an object`;
  if ('actions' in body && !(Array.isArray(body.actions) && body.actions.length > 0 && body.actions.every(isObject)))
    return '`actions` is not a list of objects';
  if (!str(body.command) && !str(body.type)) return 'it is neither a slash command nor a typed payload';
  return undefined;
}

/** Whether a parsed body is the slash command `command` (rollcall's own, `/argo` unless configured otherwise). */
export function isSlashCommand(body: unknown, command: string): boolean {
  return isObject(body) && body.command === command;
}

/**
 * The entry a body makes, or undefined for what asks nothing of rollcall (url_verification, ssl_check,
 * app_rate_limited ...). A slash command is the form with a `command` field; interactions and events say
 * their `type`.
 */
export function slackEntryOf(body: unknown): SlackEntry | undefined {
  if (!isObject(body)) return undefined;
  if (str(body.command)) {
    const user = str(body.user_id);
    const channel = channelOf(body.channel_id, body.channel_name);
    return {
      kind: 'command',
      ...(user ? { user } : {}),
      ...(channel ? { channel } : {}),
      what: typeof body.text === 'string' ? body.text : '',
    };
  }
  const type = str(body.type);
  if (!type) return undefined;
  if (type === 'event_callback') {
    // Events are not asked in a channel rollcall answers in (the Home tab is the user's own): no channel check.
    const user = str(field(body.event, 'user'));
    return { kind: 'event', ...(user ? { user } : {}), what: str(field(body.event, 'type')) ?? '' };
  }
  return interactionEntry(body, type);
}
