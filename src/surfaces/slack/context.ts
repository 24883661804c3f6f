import type { Logger } from 'pino';
import { dispatch } from '../../commands/index.js';
import type { CommandContext, FormSpec, Services } from '../../commands/registry.js';
import { errorReply, type Reply } from '../../core/reply.js';
import type { SlackConfig } from '../../infra/config/schema.js';
import type { AckFirst } from './intake.js';
import { nextTurn } from '../../core/concurrency.js';

/** What every listener gets: the shared services and a logger. Listeners never talk to Argo CD themselves. */
export interface SlackDeps {
  services: Services;
  logger: Logger;
  /** Answers wait on it until the requests waiting for their ack have it. */
  ackFirst?: AckFirst;
}

/**
 * Where a listener starts its answer, after its ack: once every request waiting for its own ack has it, together
 * with the other answers waiting (a crowd asking the same computes it once).
 */
export function afterAcks(deps: SlackDeps): Promise<void> {
  return deps.ackFirst?.allQuiet() ?? nextTurn();
}

/** Where a listener renders and posts its answer: one step after another, with the acks waiting between. */
export function answerTurn(deps: SlackDeps): Promise<void> {
  return deps.ackFirst?.quiet() ?? nextTurn();
}

/** What the HTTP receiver reads off each request as it arrives, in Bolt's context (`customPropertiesExtractor`). */
export interface ArrivalProperties {
  /** The fleet's version when the request was read. */
  askedAtVersion?: number;
}

/**
 * The fleet's version when the asker asked: read as the request arrived where the receiver did (HTTP), else now. An
 * answer shared with them is never older, and one computed since they asked serves them even if their turn came later.
 */
export function askedAtVersionOf(context: Readonly<Record<string, unknown>>, services: Services): number {
  return typeof context.askedAtVersion === 'number' ? context.askedAtVersion : services.fleet.version();
}

export function slackContext(
  services: Services,
  who: {
    user: string;
    channel?: string;
    threadTs?: string;
    openForm?: (form: FormSpec) => Promise<boolean>;
    /** The fleet's version when the request came in, read before its ack (`askedAtVersion`). */
    askedAtVersion?: number;
  },
): CommandContext {
  return {
    services,
    user: who.user,
    surface: 'slack',
    ...(who.askedAtVersion !== undefined ? { askedAtVersion: who.askedAtVersion } : {}),
    ...(who.channel ? { channel: who.channel } : {}),
    ...(who.threadTs ? { threadTs: who.threadTs } : {}),
    ...(who.openForm ? { openForm: who.openForm } : {}),
  };
}

/** `slack.channels` holds channel ids (C0123...) or names (#ops, ops); empty means everywhere. */
export function channelAllowed(slack: SlackConfig | undefined, channel: { id?: string; name?: string }): boolean {
  const allowed = slack?.channels ?? [];
  if (allowed.length === 0) return true;
  return allowed.some((entry) => {
    const e = entry.replace(/^#/, '');
    return e === channel.id || (channel.name !== undefined && e.toLowerCase() === channel.name.toLowerCase());
  });
}

function channelMention(entry: string): string {
  const e = entry.replace(/^#/, '');
  return /^[CG][A-Z0-9]{6,}$/.test(e) ? `<#${e}>` : `#${e}`;
}

export function declineReply(slack: SlackConfig | undefined): Reply {
  const where = (slack?.channels ?? []).map(channelMention).join(', ');
  const message = `I only answer in ${where}. Ask there, or ask an admin to add this channel to \`slack.channels\`.`;
  return { ...errorReply('slack', 'channel_not_allowed', message), title: 'Not in this channel' };
}

/** `--public` is a Slack concern (who sees the answer); commands never see it. */
export function splitPublicFlag(text: string): { text: string; isPublic: boolean } {
  let isPublic = false;
  const rest = text
    .split(/\s+/)
    .filter((word) => {
      if (word === '--public') {
        isPublic = true;
        return false;
      }
      return word.length > 0;
    })
    .join(' ');
  return { text: rest, isPublic };
}

/** dispatch() never throws by contract; this guard keeps a bug from becoming a silent Slack timeout. */
export async function runCommand(text: string, ctx: CommandContext, logger: Logger): Promise<Reply> {
  try {
    return await dispatch(text, ctx);
  } catch (err) {
    logger.error({ err, command: text.split(' ')[0] }, 'command failed unexpectedly');
    return errorReply(
      text.split(' ')[0] || 'help',
      'internal',
      'Something went wrong while answering. It was logged; try again, or run it with `rollcall ask`.',
    );
  }
}
