import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedisClient } from '../../src/infra/redis.js';
import { AlertManager, type AlertOutput } from '../../src/domain/alerts/manager.js';
import { AlertStore } from '../../src/domain/alerts/store.js';
import { alertReply, alertWorseReply } from '../../src/commands/alerts.js';
import '../../src/commands/index.js';
import { closeRedis, createRedis } from '../../src/infra/redis.js';
import { AuditLog } from '../../src/domain/audit/audit-log.js';
import { startEngine } from '../../src/domain/runbooks/engine.js';
import { PauseStore } from '../../src/domain/runbooks/rollout-pause.js';
import { progressiveInfraFixture } from '../../src/sim/scenarios/progressive-infra.js';
import { blockActionsPayload, postInteraction, postSlashCommand } from '../support/slack-request.js';
import { dispatch } from '../../src/commands/index.js';
import { renderText } from '../../src/views/text.js';
import { startHarness, SECRET, type Harness } from '../slack/harness.js';
import { allText } from '../slack/limits.js';
import { testPrefix } from '../runbooks/fake-argo.js';

const NOW = new Date('2026-12-02T18:00:00Z');

describe('alert buttons through Bolt (HTTP, fake Slack Web API)', () => {
  let h: Harness;
  let redis: RedisClient;
  let manager: AlertManager;
  let store: AlertStore;
  let engine: Awaited<ReturnType<typeof startEngine>> | undefined;
  const prefix = testPrefix();

  beforeAll(async () => {
    redis = createRedis(process.env.REDIS_URL!);
    h = await startHarness({
      fleet: progressiveInfraFixture(NOW).instances,
      redisPrefix: prefix,
      access: { operators: ['U_OP'] },
      config: { alerts: { channel: 'C_ALERTS', stuckAfter: '1m', holdDown: 0 } },
      configure: async (services) => {
        store = new AlertStore(redis, prefix);
        services.alerts = store;
        // As in `rollcall start --role bot`: refusals are audited to the audit stream the engine writes.
        engine = await startEngine(services, { role: 'bot', redisUrl: process.env.REDIS_URL!, prefix });
        services.runs = engine.runs;
        services.audit = engine.runs.audit;
      },
    });
    const notifier = h.slack.notifier;
    const output: AlertOutput = {
      post: (target, alert) => notifier.post(target, alertReply(alert, NOW)),
      update: (message, alert) => notifier.update(message, alertReply(alert, NOW)),
      followUp: async (message, alert) =>
        void (await notifier.post({ channel: message.channel, threadTs: message.ts }, alertWorseReply(alert))),
    };
    manager = new AlertManager({ fleet: h.services.fleet, config: h.services.config, store, output, now: () => NOW });
    await manager.sweep();
    await h.slack.notifier.flush();
  });

  afterAll(async () => {
    await engine?.stop();
    await h?.stop();
    await closeRedis(redis);
  });

  const alertPost = () => h.fake.callsTo('chat.postMessage').find((c) => c.args.channel === 'C_ALERTS')!;
  const buttons = (blocks: any[]) =>
    blocks.flatMap((b) => (b.type === 'actions' ? b.elements : [])) as {
      action_id: string;
      value: string;
      text: { text: string };
    }[];
  const press = async (label: string, user: string, id: string) => {
    const button = buttons(alertPost().args.blocks).find((b) => b.text.text === label)!;
    expect(button, label).toBeDefined();
    await postInteraction(
      h.url,
      SECRET,
      blockActionsPayload({
        actionId: button.action_id,
        value: button.value,
        user,
        channel: 'C_ALERTS',
        responseUrl: h.fake.responseUrl(id),
      }),
    );
    await expect.poll(() => h.fake.responsesTo(id).length).toBe(1);
    return h.fake.responsesTo(id)[0].body;
  };

  it('posts the stuck step with Ack, Snooze 1h/4h, Declare incident (scope filled in), Pause rollout and Show rollout', () => {
    const labels = buttons(alertPost().args.blocks).map((b) => [b.text.text, b.value]);
    const alertId = /alert ack (a-\w+)/.exec(labels.find(([l]) => l === 'Ack')![1])![1];
    expect(labels).toEqual([
      ['Ack', `alert ack ${alertId}`],
      ['Snooze 1h', `alert snooze ${alertId} 1h`],
      ['Snooze 4h', `alert snooze ${alertId} 4h`],
      [
        'Declare incident',
        expect.stringMatching(
          new RegExp(`^incident start .*appset=progressive-infra instance=infra alert=${alertId}$`),
        ),
      ],
      ['Pause rollout', 'pause progressive-infra instance=infra'],
      ['Show rollout', 'rollout progressive-infra instance=infra'],
    ]);
    expect(allText(alertPost().args.blocks)).toContain('ingress-nginx-prod-1');
  });

  it('refuses Snooze from someone who may not operate, audits the refusal and changes nothing', async () => {
    const answer = await press('Snooze 1h', 'U_RANDO', 'snooze-refused');
    expect(allText(answer.blocks)).toContain('U_RANDO is not an operator');
    const alert = (await store.all()).find((a) => a.rule === 'stuck-step')!;
    expect(alert.state).toBe('firing');
    const audit = await new AuditLog(redis, prefix).latest(10);
    expect(audit.some((e) => e.kind === 'run.refused' && e.who === 'U_RANDO' && e.surface === 'slack')).toBe(true);
  });

  it('Ack runs as the person who pressed it: audited, and the alert message says who acked it', async () => {
    const answer = await press('Ack', 'U_OP', 'ack');
    expect(allText(answer.blocks)).toContain('U_OP acknowledged');
    const alert = (await store.all()).find((a) => a.rule === 'stuck-step')!;
    expect(alert).toMatchObject({ state: 'acked', ackedBy: 'U_OP' });
    const audit = await new AuditLog(redis, prefix).latest(10);
    expect(audit.find((e) => e.kind === 'alert.ack')).toMatchObject({
      who: 'U_OP',
      surface: 'slack',
      target: `alert/${alert.id}`,
    });
    await manager.sweep();
    await h.slack.notifier.flush();
    const update = h.fake.callsTo('chat.update').at(-1)!;
    expect(update.args.channel).toBe('C_ALERTS');
    expect(allText(update.args.blocks)).toContain('Acknowledged');
    expect(buttons(update.args.blocks).map((b) => b.text.text)).not.toContain('Ack');
  });

  it('an unknown alert id reads the same in Slack (a slash command through Bolt) and in the terminal, with the closest id', async () => {
    const alert = (await store.all()).find((a) => a.rule === 'stuck-step')!;
    const typo = `${alert.id}x`;
    await postSlashCommand(h.url, SECRET, {
      text: `alert show ${typo}`,
      user_id: 'U_OP',
      response_url: h.fake.responseUrl('unknown-alert'),
    });
    await expect.poll(() => h.fake.responsesTo('unknown-alert').length).toBe(1);
    const message = `No alert ${typo}: \`alerts\` lists the active and recently resolved ones.`;
    expect(allText(h.fake.responsesTo('unknown-alert')[0].body.blocks)).toBe(
      `:x: ${message}\nDid you mean: \`${alert.id}\`?`,
    );
    const terminal = await dispatch(`alert show ${typo}`, { services: h.services, user: 'U_OP', surface: 'terminal' });
    expect(terminal.error).toEqual({ code: 'alert_not_found', message, suggestions: [alert.id] });
    expect(renderText(terminal)).toBe(`✖ ${message.replace(/`/g, '')}\n\nDid you mean: ${alert.id}?\n`);
  });

  it('Show rollout answers with the rollout of the stuck appset', async () => {
    const answer = await press('Show rollout', 'U_RANDO', 'show');
    expect(allText(answer.blocks)).toContain('progressive-infra');
  });

  it('Declare incident goes through the normal dispatcher with the scope filled in', async () => {
    const answer = await press('Declare incident', 'U_OP', 'declare');
    // Whatever the incident command answers, it was parsed as `incident`, by the presser, not dropped.
    expect(allText(answer.blocks)).toMatch(/incident/i);
  });
});

describe('Pause rollout on a stuck-step alert', () => {
  it('starts the pause-rollout runbook for the presser: a preview to confirm, nothing changed yet', async () => {
    const redis = createRedis(process.env.REDIS_URL!);
    const prefix = testPrefix();
    let engine: Awaited<ReturnType<typeof startEngine>> | undefined;
    const h = await startHarness({
      fleet: progressiveInfraFixture(NOW).instances,
      redisPrefix: prefix,
      access: { operators: ['U_OP'] },
      config: { alerts: { channel: 'C_ALERTS', stuckAfter: '1m', holdDown: 0 } },
      configure: async (services) => {
        services.alerts = new AlertStore(redis, prefix);
        services.pauses = new PauseStore(redis, prefix);
        engine = await startEngine(services, { role: 'bot', redisUrl: process.env.REDIS_URL!, prefix });
        services.runs = engine.runs;
        services.audit = engine.runs.audit;
      },
    });
    try {
      const alert = alertReply(
        (
          await new AlertManager({
            fleet: h.services.fleet,
            config: h.services.config,
            store: h.services.alerts!,
            now: () => NOW,
          }).sweep()
        ).find((a) => a.rule === 'stuck-step')!,
        NOW,
      );
      const pause = alert.blocks
        .flatMap((b) => (b.kind === 'actions' ? b.buttons : []))
        .find((b) => b.label === 'Pause rollout')!;
      await postInteraction(
        h.url,
        SECRET,
        blockActionsPayload({
          actionId: 'cmd',
          value: pause.command!,
          user: 'U_OP',
          channel: 'C_ALERTS',
          responseUrl: h.fake.responseUrl('pause'),
        }),
      );
      await expect.poll(() => h.fake.responsesTo('pause').length, { timeout: 10_000 }).toBe(1);
      const text = allText(h.fake.responsesTo('pause')[0].body.blocks);
      expect(text).toContain('progressive-infra');
      expect(text).toMatch(/Confirm/);
      const runs = await engine!.runs.list(5);
      expect(runs[0]).toMatchObject({ runbook: 'pause-rollout', requester: 'U_OP', status: 'awaiting-confirmation' });
    } finally {
      await engine?.stop();
      await h.stop();
      await closeRedis(redis);
    }
  });
});
