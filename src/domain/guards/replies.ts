import { link, plural } from '../../core/format.js';
import type { Reply } from '../../core/reply.js';
import type { Guard, GuardTrip } from './store.js';

const SHOWN = 10;

/** The message a trip posts: which apps failed which check, with values and links, and what was done. */
export function tripReply(guard: Guard, trip: GuardTrip): Reply<'guard.trip', { guard: Guard; trip: GuardTrip }> {
  const where = `\`${guard.appSet}\` (${guard.instance})`;
  const did = trip.runId
    ? `paused the rollout (run ${trip.runId}); \`resume ${guard.appSet}\` when it is safe`
    : trip.action === 'notify'
      ? 'did not pause it (the guard notifies only, or the rollout is complete)'
      : `could not pause it: ${trip.action.replace(/^pause failed: /, '')}`;
  return {
    ok: false,
    command: 'guard.trip',
    title: `Guard tripped on ${guard.appSet}`,
    data: { guard, trip },
    blocks: [
      {
        kind: 'text',
        tone: 'error',
        text: `:rotating_light: Guard on ${where}: ${plural(trip.apps.length, 'app')} failed ${guard.checks.map((c) => `\`${c}\``).join(', ')}${trip.step !== null ? ` at step ${trip.step}` : ''}; rollcall ${did}.`,
      },
      {
        kind: 'list',
        items: trip.apps.slice(0, SHOWN).map((a) => ({
          text: `*${a.app}* (${a.cluster}) · ${a.check}: ${a.reason}`,
          tone: 'error' as const,
          detail: link('query', a.link),
        })),
        total: trip.apps.length,
      },
    ],
  };
}
