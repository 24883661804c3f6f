import { link } from '../core/format.js';
import type { Reply, ReplyItem } from '../core/reply.js';
import type { FleetView } from '../fleet/model.js';
import { currentStepFromStatus, isRollingSync, rolloutComplete, rolloutSteps } from '../fleet/rollingsync.js';
import type { CommandContext } from './registry.js';

const MAX_ROLLOUTS = 15;

/**
 * RollingSync appsets whose RolloutProgressing condition is True, with the step Argo CD reports: the Home
 * tab's rollouts section. (`rollout APPSET` shows one of them step by step.)
 */
export function rolloutsInFlightReply(ctx: CommandContext): Reply {
  const fleet: FleetView = ctx.services.fleet;
  const inFlight = fleet
    .appSets()
    .filter(({ appSet }) => isRollingSync(appSet) && !rolloutComplete(appSet) && currentStepFromStatus(appSet) !== null)
    .sort(
      (a, b) => a.appSet.metadata.name.localeCompare(b.appSet.metadata.name) || a.instance.localeCompare(b.instance),
    );
  const multiInstance = fleet.instances().length > 1;
  const shown = inFlight.slice(0, MAX_ROLLOUTS);
  const items: ReplyItem[] = shown.map(({ instance, appSet }) => {
    const step = currentStepFromStatus(appSet)!;
    const steps = rolloutSteps(appSet).length;
    const name = appSet.metadata.name;
    const url = fleet.appSetUrl(instance, name);
    const label = url ? link(name, url) : `*${name}*`;
    return { text: `${label}${multiInstance ? ` (${instance})` : ''} — step ${step} of ${steps}`, tone: 'progress' };
  });
  const buttons = shown.slice(0, 5).map(({ instance, appSet }) => ({
    label: `Rollout ${appSet.metadata.name}`,
    command: `rollout ${appSet.metadata.name}${multiInstance ? ` instance=${instance}` : ''}`,
  }));
  return {
    ok: true,
    command: 'rollout',
    title: 'Rollouts in flight',
    data: {
      rollouts: inFlight.map(({ instance, appSet }) => ({
        appSet: appSet.metadata.name,
        instance,
        currentStep: currentStepFromStatus(appSet),
      })),
    },
    blocks: [
      { kind: 'header', text: 'Rollouts in flight' },
      inFlight.length
        ? { kind: 'list', items, total: inFlight.length }
        : { kind: 'text', text: 'No RollingSync rollout is in progress.', tone: 'info' },
      ...(buttons.length ? [{ kind: 'actions' as const, buttons }] : []),
    ],
  };
}
