import type { Logger } from 'pino';
import { headerReply } from '../../commands/incident.js';
import type { Services } from '../../commands/registry.js';

/**
 * Keeps every open incident's Slack header current while nobody types (durations, blast radius),
 * and says once, in the incident's thread, when every scoped app has been Synced and Healthy long
 * enough to call it mitigated. One bot process refreshes per tick, however many run.
 */
export function startIncidentHeaders(
  services: Services,
  opts: { intervalMs?: number; logger?: Logger } = {},
): { stop(): void } {
  const intervalMs = opts.intervalMs ?? 60_000;
  const tick = async () => {
    const incidents = services.incidents;
    const notifier = services.notifier;
    if (!incidents || !notifier) return;
    if (!(await incidents.store.claim('header-tick', Math.max(1000, intervalMs - 1000)))) return;
    for (const incident of await incidents.open()) {
      if (!incident.header) continue;
      const analysis = await incidents.analyse(incident);
      const suggestion = incidents.mitigationSuggestion(analysis);
      if (
        suggestion &&
        (await incidents.store.setOnce(incident.id, 'mitigationSuggestedAt', new Date().toISOString()))
      ) {
        await incidents.store.append(incident.id, {
          at: new Date().toISOString(),
          kind: 'status',
          source: 'rollcall',
          text: `rollcall suggests: ${suggestion.replace(/`/g, '')}`,
        });
        await notifier.post(
          { channel: incident.header.channel, threadTs: incident.header.ts },
          {
            ok: true,
            command: 'incident',
            title: `${incident.id} suggestion`,
            data: {},
            blocks: [{ kind: 'text', text: `:bulb: ${suggestion}`, tone: 'info' }],
          },
        );
      }
      await notifier.update(incident.header, headerReply(analysis, suggestion, Date.now()));
    }
  };
  const timer = setInterval(
    () =>
      void tick().catch((err: unknown) =>
        opts.logger?.warn({ err: (err as Error).message }, 'incident header refresh failed'),
      ),
    intervalMs,
  );
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
