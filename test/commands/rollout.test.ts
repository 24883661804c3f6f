import { describe, expect, it } from 'vitest';
import { runDiagnose } from '../../src/commands/diagnose.js';
import { CommandError, parseCommand } from '../../src/commands/parse.js';
import { runPlan } from '../../src/commands/plan.js';
import type { ReplyBlock } from '../../src/core/reply.js';
import { runRollout } from '../../src/commands/rollout.js';
import type { Application, ApplicationSet, ApplicationSetApplicationStatus } from '../../src/infra/argocd/types.js';
import { StaticFleet } from '../../src/fleet/model.js';
import { renderText } from '../../src/views/text.js';
import {
  ago,
  app,
  authAppSet,
  ctx,
  eastApps,
  eastClusters,
  platformAppSet,
  services,
  westApps,
  westClusters,
} from './fixtures.js';

const entry = (
  application: string,
  status: ApplicationSetApplicationStatus['status'],
  step: string,
  minutes: number,
  message = 'Application resource is already Healthy, updating status from Waiting to Healthy',
): ApplicationSetApplicationStatus => ({
  application,
  status,
  step,
  message,
  lastTransitionTime: ago(minutes),
  targetRevisions: ['d'.repeat(40)],
});

const infra: ApplicationSet = {
  metadata: { name: 'progressive-infra', namespace: 'argocd' },
  spec: {
    generators: [],
    template: {
      metadata: { name: 'infra-{{name}}', labels: { env: '{{metadata.labels.env}}' } },
      spec: { project: 'infra', destination: {} },
    },
    strategy: {
      type: 'RollingSync',
      rollingSync: {
        steps: [
          { matchExpressions: [{ key: 'env', operator: 'In', values: ['stage'] }] },
          { matchExpressions: [{ key: 'env', operator: 'In', values: ['canary'] }], maxUpdate: 1 },
          { matchExpressions: [{ key: 'env', operator: 'In', values: ['prod'] }], maxUpdate: '50%' },
        ],
      },
    },
  },
  status: {
    conditions: [
      {
        type: 'RolloutProgressing',
        status: 'True',
        reason: 'ApplicationSetModified',
        message: 'ApplicationSet is performing rollout of step 2',
      },
    ],
    applicationStatus: [
      entry('infra-canary-1', 'Healthy', '2', 50),
      entry(
        'infra-canary-2',
        'Progressing',
        '2',
        42,
        'Application resource completed a sync successfully, updating status from Pending to Progressing',
      ),
      entry('infra-dev', 'Waiting', '-1', 90, 'No Application status found, defaulting status to Waiting'),
      entry('infra-prod-1', 'Waiting', '3', 90, 'Application has pending changes, setting status to Waiting'),
      entry('infra-prod-2', 'Waiting', '3', 90, 'Application has pending changes, setting status to Waiting'),
      entry('infra-stage', 'Healthy', '1', 60),
    ],
  },
};

const infraApp = (
  name: string,
  env: string,
  health: Application['status'] = {
    sync: { status: 'Synced', revision: 'd'.repeat(40) },
    health: { status: 'Healthy' },
  },
) =>
  app({
    name,
    clusterName: `${env}-1`,
    appSet: 'progressive-infra',
    labels: { env },
    project: 'infra',
    status: health,
  });

const infraApps: Application[] = [
  infraApp('infra-stage', 'stage'),
  infraApp('infra-canary-1', 'canary'),
  infraApp('infra-canary-2', 'canary', {
    sync: { status: 'Synced', revision: 'd'.repeat(40) },
    health: { status: 'Degraded', lastTransitionTime: ago(41) },
    operationState: {
      operation: { sync: {}, initiatedBy: { username: 'applicationset-controller', automated: true } },
      phase: 'Failed',
      message: 'one or more synchronization tasks completed unsuccessfully',
      startedAt: ago(42),
      finishedAt: ago(41),
    },
  }),
  infraApp('infra-prod-1', 'prod', {
    sync: { status: 'OutOfSync', revision: 'e'.repeat(40) },
    health: { status: 'Healthy' },
  }),
  infraApp('infra-prod-2', 'prod', {
    sync: { status: 'OutOfSync', revision: 'e'.repeat(40) },
    health: { status: 'Healthy' },
  }),
  infraApp('infra-dev', 'dev', {
    sync: { status: 'OutOfSync', revision: 'e'.repeat(40) },
    health: { status: 'Healthy' },
  }),
];

function fleet() {
  return StaticFleet.fromObjects([
    {
      name: 'east',
      uiUrl: 'https://cd-east.example.com',
      applications: [...eastApps, ...infraApps],
      applicationSets: [authAppSet, infra],
      clusters: eastClusters,
    },
    {
      name: 'west',
      uiUrl: 'https://cd-west.example.com',
      applications: westApps,
      applicationSets: [platformAppSet],
      clusters: westClusters,
    },
  ]);
}

const c = (extra: Record<string, unknown> = {}) => ctx(services(fleet(), {}, extra));

describe('rollout', () => {
  it('reports strategy, current step, steps with maxUpdate and apps, apps in no step and findings', async () => {
    const reply = await runRollout(parseCommand('rollout progressive-infra'), c());
    expect(reply.ok).toBe(true);
    const d = reply.data as Record<string, any>;
    expect(d).toMatchObject({
      appSet: 'progressive-infra',
      instance: 'east',
      strategy: 'RollingSync',
      currentStep: 2,
      complete: false,
    });
    expect(d.steps.map((s: any) => [s.step, s.maxUpdate, s.maxConcurrent, s.apps.map((a: any) => a.name)])).toEqual([
      [1, null, null, ['infra-stage']],
      [2, 1, 1, ['infra-canary-1', 'infra-canary-2']],
      [3, '50%', 1, ['infra-prod-1', 'infra-prod-2']],
    ]);
    expect(d.steps[1].apps[1]).toMatchObject({
      name: 'infra-canary-2',
      cluster: 'canary-1',
      status: 'Progressing',
      since: ago(42),
      sync: 'Synced',
      health: 'Degraded',
      message: expect.stringContaining('Pending to Progressing'),
    });
    expect(d.unmatched.map((a: any) => a.name)).toEqual(['infra-dev']);
    const rules = d.findings.map((f: any) => f.rule);
    expect(rules).toContain('app-in-no-step');
    expect(rules).toContain('stuck-step');
    for (const f of d.findings)
      expect(Object.keys(f)).toEqual(expect.arrayContaining(['rule', 'severity', 'message', 'why', 'fix']));
  });

  it('shows each step with its expressions and meaning, what it waits on and since when, in a screen', async () => {
    const reply = await runRollout(parseCommand('rollout progressive-infra'), c());
    const text = renderText(reply);
    expect(text).toContain('Waiting on step 2 since 42m: 1 in flight');
    expect(text).toMatch(
      /▶ Step 2 \(current\) · env In \[canary\] · 1 at a time \(maxUpdate 1\) · 2 apps: Healthy 1 · Progressing 1/,
    );
    expect(text).toMatch(/Step 3 · env In \[prod\] · 50% → 1 at a time \(maxUpdate 50%\)/);
    // The app in flight with why, in a line; no URL, and not the appset's status message.
    expect(text).toMatch(
      /✖ infra-canary-2 · canary-1 · Progressing · Synced\/Degraded · for 42m\n {6}last sync Failed: \S/,
    );
    expect(text).not.toContain('Pending to Progressing');
    expect(text).not.toMatch(/https?:\/\/\S+\/applications\//);
    expect(text).toContain('In no step: RollingSync never syncs these (1)');
    expect(text).toMatch(/‼ stuck-step|⚠ stuck-step/);
    expect(text).toContain('→ try: rollout progressive-infra detail=true');
    expect(text).toContain('→ try: plan progressive-infra');
    // About a terminal screen, with the Refresh button's line, which dispatch leaves out after the command it repeats.
    expect(text.trimEnd().split('\n').length).toBeLessThanOrEqual(30);
  });

  it('with detail=true: every app not Healthy with its link, the status message and the whole reason', async () => {
    const reply = await runRollout(parseCommand('rollout progressive-infra detail=true'), c());
    const text = renderText(reply, { links: 'label' });
    expect(text).toContain('Waiting on step 2 since 42m: 1 in flight (infra-canary-2)');
    expect(text).toMatch(
      /▶ Step 2 \(current\) · env In \[canary\] · 1 at a time \(maxUpdate 1\)\n2 apps: Healthy 1 · Progressing 1/,
    );
    expect(text).toMatch(
      /✖ infra-canary-2 · canary-1 · Progressing · Synced\/Degraded · for 42m\n {6}.*Pending to Progressing\n {6}last sync Failed: one or more synchronization tasks completed unsuccessfully/,
    );
    expect(renderText(reply)).toMatch(/infra-canary-2 \(https?:\/\/\S+\/applications\/\S*infra-canary-2\)/);
    expect(text).toMatch(/Why: .+\n {6}Fix: .+/);
    const buttons = reply.blocks.flatMap((b) => (b.kind === 'actions' ? b.buttons : []));
    expect(buttons.map((b) => b.label)).not.toContain('Show detail');
  });

  it('refuses detail= other than true or false, saying what it does', async () => {
    await expect(runRollout(parseCommand('rollout progressive-infra detail=yes'), c())).rejects.toMatchObject({
      code: 'usage',
      message: expect.stringMatching(/^detail= takes true or false \(true: .+\); got `yes`\.$/),
    });
  });

  it('takes stuckAfter from config.diagnose', async () => {
    const reply = await runRollout(parseCommand('rollout progressive-infra'), c({ diagnose: { stuckAfter: '2h' } }));
    expect((reply.data.findings as { rule: string }[]).map((f) => f.rule)).not.toContain('stuck-step');
  });

  it('says an AllAtOnce appset has no rollout to follow', async () => {
    const reply = await runRollout(parseCommand('rollout platform'), c());
    expect(reply.ok).toBe(true);
    expect(reply.data).toMatchObject({
      appSet: 'platform',
      instance: 'west',
      strategy: 'AllAtOnce',
      currentStep: null,
      steps: [],
      unmatched: [],
      findings: [],
    });
    expect(renderText(reply)).toContain('platform has no rollout to follow: its strategy is AllAtOnce (the default)');
  });

  it('suggests appsets for an unknown name and points an app name at its appset', async () => {
    const unknown = await runRollout(parseCommand('rollout progresive-infra'), c()).catch((e: CommandError) => e);
    expect(unknown).toMatchObject({
      code: 'unknown_target',
      suggestions: expect.arrayContaining(['progressive-infra']),
    });
    const appName = await runRollout(parseCommand('rollout infra-dev'), c()).catch((e: CommandError) => e);
    expect(appName).toMatchObject({
      code: 'unknown_target',
      message: expect.stringContaining('generated by ApplicationSet `progressive-infra`'),
    });
  });
});

describe('plan', () => {
  it('lists steps in order with how many at a time, the apps and what remains, and apps never synced', async () => {
    const reply = await runPlan(parseCommand('plan progressive-infra'), c());
    const d = reply.data as Record<string, any>;
    expect(
      d.steps.map((s: any) => ({ step: s.step, maxConcurrent: s.maxConcurrent, apps: s.apps, remaining: s.remaining })),
    ).toEqual([
      { step: 1, maxConcurrent: null, apps: ['infra-stage'], remaining: [] },
      { step: 2, maxConcurrent: 1, apps: ['infra-canary-1', 'infra-canary-2'], remaining: ['infra-canary-2'] },
      {
        step: 3,
        maxConcurrent: 1,
        apps: ['infra-prod-1', 'infra-prod-2'],
        remaining: ['infra-prod-1', 'infra-prod-2'],
      },
    ]);
    expect(d.unmatched).toEqual(['infra-dev']);
    expect(d.findings.length).toBeGreaterThan(0);
    const text = renderText(reply);
    expect(text).toContain(
      'RollingSync will sync 3 apps in steps 2, 3, each step only after every app of the earlier steps is Healthy.',
    );
    expect(text).toContain('Step 1 · all at once · 1 app, 0 to sync');
    expect(text).toContain('Never synced by RollingSync (in no step, 1): infra-dev');
  });

  it('does not promise to sync a manual gate: its apps are counted as waiting for a hand sync', async () => {
    const f = fleet();
    const target = f.appSetsNamed('progressive-infra')[0];
    const set = (target.appSet = structuredClone(target.appSet));
    set.spec.strategy!.rollingSync!.steps![2] = { ...set.spec.strategy!.rollingSync!.steps![2], maxUpdate: 0 };
    const reply = await runPlan(parseCommand('plan progressive-infra'), ctx(services(f)));
    const text = renderText(reply);
    expect(text).toContain('RollingSync will sync 1 app in step 2.');
    expect(text).toContain(
      'Step 3 is a manual gate: 2 apps wait for a hand sync, and no later step starts until they are Healthy.',
    );
  });
});

describe('diagnose', () => {
  it('over every RollingSync appset, tags each finding with its appset and instance', async () => {
    const reply = await runDiagnose(parseCommand('diagnose'), c());
    expect('appSets' in reply.data && reply.data.appSets).toBe(2);
    const findings = reply.data.findings as { appSet?: string; instance: string; rule: string; apps?: string[] }[];
    expect(findings.length).toBeGreaterThan(0);
    // RollingSync findings name their appset; a down app no appset generated is named itself.
    for (const f of findings.filter((x) => x.rule !== 'app-degraded'))
      expect(['auth', 'progressive-infra']).toContain(f.appSet);
    expect(findings.filter((x) => x.rule === 'app-degraded')).toEqual([
      expect.objectContaining({ apps: ['orphan-app'], message: 'App orphan-app is Missing (down for 10m).' }),
    ]);
    expect(findings.every((f) => f.instance === 'east')).toBe(true);
    // Short: what is wrong and the fix's first step; the per-app lines, why and the whole fix behind detail=true.
    const list = reply.blocks.find((b) => b.kind === 'list') as Extract<ReplyBlock, { kind: 'list' }>;
    expect(list.items[0].detail).toMatch(/^Fix: [^\n]+$/);
    expect(renderText(reply)).toContain('→ try: diagnose detail=true');
    const detailed = await runDiagnose(parseCommand('diagnose detail=true'), c());
    const full = detailed.blocks.find((b) => b.kind === 'list') as Extract<ReplyBlock, { kind: 'list' }>;
    expect(full.items[0].detail).toMatch(/Why: .+\nFix: .+/s);
    expect(renderText(detailed)).not.toContain('detail=true');
    expect(detailed.data).toEqual(reply.data);
  });

  it('for one appset returns its findings, the same as the rollout shows', async () => {
    const one = await runDiagnose(parseCommand('diagnose progressive-infra'), c());
    const rollout = await runRollout(parseCommand('rollout progressive-infra'), c());
    expect((one.data.findings as { rule: string }[]).map((f) => f.rule)).toEqual(
      (rollout.data.findings as { rule: string }[]).map((f) => f.rule),
    );
    expect(one.data).toMatchObject({ appSet: 'progressive-infra', instance: 'east' });
  });

  it('answers for an instance without RollingSync appsets', async () => {
    const reply = await runDiagnose(parseCommand('diagnose instance=west'), c());
    expect(reply.data).toEqual({ appSets: 0, findings: [] });
    expect(renderText(reply)).toContain('No ApplicationSet uses RollingSync on west');
  });
});
