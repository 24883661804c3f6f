import { describe, expect, it } from 'vitest';
import type { Application } from '../../src/infra/argocd/types.js';
import {
  DEFAULT_STUCK_AFTER_MS,
  RULES,
  diagnoseAppSet,
  diagnoseFleet,
  type Finding,
} from '../../src/fleet/diagnose.js';
import { StaticFleet } from '../../src/fleet/model.js';
import {
  NOW,
  baseline,
  cluster,
  entry,
  fleetOf,
  generatedApp,
  minutesAgo,
  rolloutCondition,
  rollingSyncAppSet,
} from '../fixtures/diagnose/build.js';

const opts = { stuckAfterMs: DEFAULT_STUCK_AFTER_MS, now: NOW };

function diagnose(parts: ReturnType<typeof baseline>, o: Partial<typeof opts> = {}): Finding[] {
  const { fleet, target } = fleetOf(parts);
  return diagnoseAppSet(fleet, target, { ...opts, ...o });
}

function only(findings: Finding[], rule: string): Finding[] {
  return findings.filter((f) => f.rule === rule);
}

function app(parts: ReturnType<typeof baseline>, name: string): Application {
  const found = parts.apps.find((a) => a.metadata.name === name);
  if (!found) throw new Error(`no app ${name} in fixture`);
  return found;
}

function setEntry(
  parts: ReturnType<typeof baseline>,
  name: string,
  status: 'Waiting' | 'Pending' | 'Progressing' | 'Healthy',
  minutes: number,
) {
  const list = parts.appSet.status!.applicationStatus!;
  const i = list.findIndex((e) => e.application === name);
  list[i] = entry(name, Number(list[i].step), status, minutes);
}

describe('diagnose baseline', () => {
  it('finds nothing on a well-formed RollingSync appset whose rollout completed', () => {
    expect(diagnose(baseline())).toEqual([]);
  });

  it('exports every rule id it can emit, each once', () => {
    expect(new Set(RULES).size).toBe(RULES.length);
    for (const id of [
      'progressive-syncs-disabled',
      'step-matches-nothing',
      'label-on-cluster-not-app',
      'app-in-no-step',
      'unsupported-operator',
      'overlapping-steps',
      'no-max-update',
      'manual-gate',
      'stuck-step',
      'autosync-ignored',
      'sync-window-blocking',
    ])
      expect(RULES).toContain(id);
  });
});

describe('progressive-syncs-disabled', () => {
  it('fires when RollingSync is configured, apps exist and status.applicationStatus is absent', () => {
    const parts = baseline();
    delete parts.appSet.status!.applicationStatus;
    const [f] = only(diagnose(parts), 'progressive-syncs-disabled');
    expect(f).toMatchObject({ severity: 'critical', appSet: 'payments', instance: 'prod-argocd' });
    expect(f.message).toContain('4 generated apps');
    expect(f.apps).toEqual(['payments-canary-1', 'payments-prod-1', 'payments-prod-2', 'payments-stage-1']);
    expect(f.fix).toContain('applicationsetcontroller.enable.progressive.syncs: "true"');
    expect(f.fix).toContain('--enable-progressive-syncs');
    expect(f.fix).toContain('ARGOCD_APPLICATIONSET_CONTROLLER_ENABLE_PROGRESSIVE_SYNCS');
    expect(f.why).toMatch(/--enable-progressive-rollouts.*release candidates/);
    expect(f.why).toContain('v3.3');
  });

  it('treats an empty applicationStatus list like an absent one', () => {
    const parts = baseline();
    parts.appSet.status!.applicationStatus = [];
    expect(only(diagnose(parts), 'progressive-syncs-disabled')).toHaveLength(1);
  });

  it('does not fire when the controller writes applicationStatus entries', () => {
    expect(only(diagnose(baseline()), 'progressive-syncs-disabled')).toEqual([]);
  });

  it('does not fire when the appset has generated no apps yet', () => {
    const parts = baseline();
    parts.apps = [];
    parts.appSet.status = {};
    expect(only(diagnose(parts), 'progressive-syncs-disabled')).toEqual([]);
  });
});

describe('step-matches-nothing', () => {
  it('fires for a step whose values the apps do not carry, naming the values they do carry', () => {
    const parts = baseline();
    parts.appSet.spec.strategy!.rollingSync!.steps![2].matchExpressions = [
      { key: 'env', operator: 'In', values: ['production'] },
    ];
    const [f] = only(diagnose(parts), 'step-matches-nothing');
    expect(f).toMatchObject({ severity: 'warning', step: 3 });
    expect(f.message).toContain('Step 3 (env In [production])');
    expect(f.message).toContain('the apps carry env=canary, prod, stage');
  });

  it('says so when no app carries the key at all', () => {
    const parts = baseline();
    parts.appSet.spec.strategy!.rollingSync!.steps![0].matchExpressions = [
      { key: 'region', operator: 'In', values: ['eu'] },
    ];
    const [f] = only(diagnose(parts), 'step-matches-nothing');
    expect(f.step).toBe(1);
    expect(f.message).toContain('no generated app has a `region` label');
  });

  it('does not fire when every step selects at least one app', () => {
    const parts = baseline();
    parts.appSet.spec.strategy!.rollingSync!.steps![2].matchExpressions = [
      { key: 'env', operator: 'In', values: ['prod', 'production'] },
    ];
    expect(only(diagnose(parts), 'step-matches-nothing')).toEqual([]);
  });
});

describe('label-on-cluster-not-app', () => {
  function envOnlyOnClusters() {
    const parts = baseline({ templateLabels: { team: 'payments' } });
    for (const a of parts.apps) a.metadata.labels = { team: 'payments' };
    return parts;
  }

  it('fires when the step key is a cluster label the generated apps lack', () => {
    const findings = diagnose(envOnlyOnClusters());
    const [f] = only(findings, 'label-on-cluster-not-app');
    expect(f).toMatchObject({ severity: 'critical', step: 1 });
    expect(f.message).toContain('`env`');
    expect(f.message).toContain('the 4 destination clusters carry');
    expect(f.message).toContain('none of the 4 generated apps has it');
    expect(f.apps).toHaveLength(4);
    expect(f.fix).toContain("env: '{{metadata.labels.env}}'");
    // The same key is reported once, at its first step, not once per step.
    expect(only(findings, 'label-on-cluster-not-app')).toHaveLength(1);
  });

  it('gives the goTemplate form of the fix for goTemplate appsets', () => {
    const parts = envOnlyOnClusters();
    parts.appSet.spec.goTemplate = true;
    const [f] = only(diagnose(parts), 'label-on-cluster-not-app');
    expect(f.fix).toContain(`env: '{{ index .metadata.labels "env" }}'`);
  });

  it('does not fire when the key is on both the clusters and the generated apps', () => {
    expect(only(diagnose(baseline()), 'label-on-cluster-not-app')).toEqual([]);
  });

  it('does not fire when neither the clusters nor the apps carry the key', () => {
    const parts = baseline();
    parts.appSet.spec.strategy!.rollingSync!.steps![0].matchExpressions = [
      { key: 'region', operator: 'In', values: ['eu'] },
    ];
    const findings = diagnose(parts);
    expect(only(findings, 'label-on-cluster-not-app')).toEqual([]);
    expect(only(findings, 'step-matches-nothing')).toHaveLength(1);
  });
});

describe('label-only-on-live-app', () => {
  it('fires when a step key exists only as a hand-added label on the live apps', () => {
    const parts = baseline({
      steps: [
        { matchExpressions: [{ key: 'wave', operator: 'In', values: ['first'] }], maxUpdate: 1 },
        { matchExpressions: [{ key: 'env', operator: 'In', values: ['stage', 'canary', 'prod'] }], maxUpdate: 1 },
      ],
    });
    app(parts, 'payments-prod-1').metadata.labels!.wave = 'first';
    const [f] = only(diagnose(parts), 'label-only-on-live-app');
    expect(f).toMatchObject({ severity: 'warning', step: 1, apps: ['payments-prod-1'] });
    expect(f.why).toContain('#22001');
  });

  it('does not fire when the template renders the label', () => {
    const parts = baseline({
      templateLabels: { team: 'payments', env: '{{metadata.labels.env}}', wave: '{{metadata.labels.wave}}' },
      steps: [
        { matchExpressions: [{ key: 'wave', operator: 'In', values: ['first'] }], maxUpdate: 1 },
        { matchExpressions: [{ key: 'env', operator: 'In', values: ['stage', 'canary', 'prod'] }], maxUpdate: 1 },
      ],
    });
    app(parts, 'payments-prod-1').metadata.labels!.wave = 'first';
    expect(only(diagnose(parts), 'label-only-on-live-app')).toEqual([]);
  });
});

describe('app-in-no-step', () => {
  it('fires for apps no step selects, including entries the controller marked step "-1"', () => {
    const parts = baseline();
    const dev = cluster('dev-1', { env: 'dev', team: 'payments' });
    parts.clusters.push(dev);
    parts.apps.push(
      generatedApp(parts.appSet, 'payments-dev-1', {
        cluster: dev,
        labels: { team: 'payments', env: 'dev' },
        sync: 'OutOfSync',
      }),
    );
    parts.appSet.status!.applicationStatus!.push({
      ...entry('payments-dev-1', -1, 'Waiting'),
      message: 'Application is out of date with the current AppSet generation, setting status to Waiting.',
    });
    const [f] = only(diagnose(parts), 'app-in-no-step');
    expect(f).toMatchObject({ severity: 'warning', apps: ['payments-dev-1'] });
    expect(f.step).toBeUndefined();
    expect(f.message).toContain('1 app is matched by no step: payments-dev-1');
    expect(f.message).toContain('never syncs it; it is OutOfSync now and waits for a hand sync');
    expect(f.fix).toContain('env=dev');
    expect(f.fix).toContain('/argo sync payments-dev-1');
  });

  it('lists the first names and the count when many apps are unmatched', () => {
    const parts = baseline();
    for (let i = 1; i <= 5; i++) {
      const c = cluster(`dev-${i}`, { env: 'dev' });
      parts.clusters.push(c);
      parts.apps.push(
        generatedApp(parts.appSet, `payments-dev-${i}`, { cluster: c, labels: { team: 'payments', env: 'dev' } }),
      );
    }
    const [f] = only(diagnose(parts), 'app-in-no-step');
    expect(f.message).toContain(
      '5 apps are matched by no step: payments-dev-1, payments-dev-2, payments-dev-3, +2 more',
    );
    expect(f.apps).toHaveLength(5);
  });

  it('does not fire when every app is in a step', () => {
    expect(only(diagnose(baseline()), 'app-in-no-step')).toEqual([]);
  });
});

describe('unsupported-operator', () => {
  it('fires for an operator other than In/NotIn and names step, operator and key', () => {
    const parts = baseline();
    parts.appSet.spec.strategy!.rollingSync!.steps![1].matchExpressions = [
      { key: 'env', operator: 'In', values: ['canary'] },
      { key: 'env', operator: 'Exists' },
    ];
    const findings = diagnose(parts);
    const [f] = only(findings, 'unsupported-operator');
    expect(f).toMatchObject({ severity: 'critical', step: 2 });
    expect(f.message).toContain('Step 2 uses operator "Exists" on `env`');
    expect(f.message).toContain('step 2 now holds 0 apps');
    expect(f.fix).toContain('env In [');
    // The canary app lost its step: it is now in no step.
    expect(only(findings, 'app-in-no-step')[0].apps).toEqual(['payments-canary-1']);
  });

  it('suggests the right case for a lower-case operator', () => {
    const parts = baseline();
    parts.appSet.spec.strategy!.rollingSync!.steps![0].matchExpressions = [
      { key: 'env', operator: 'in', values: ['stage'] },
    ];
    const [f] = only(diagnose(parts), 'unsupported-operator');
    expect(f.fix).toContain('"In"');
  });

  it('does not fire for NotIn', () => {
    const parts = baseline();
    parts.appSet.spec.strategy!.rollingSync!.steps![2].matchExpressions = [
      { key: 'env', operator: 'NotIn', values: ['stage', 'canary'] },
    ];
    expect(only(diagnose(parts), 'unsupported-operator')).toEqual([]);
  });
});

describe('overlapping-steps', () => {
  it('fires for apps selected by more than one step', () => {
    const parts = baseline();
    parts.appSet.spec.strategy!.rollingSync!.steps![1].matchExpressions = [
      { key: 'env', operator: 'In', values: ['canary', 'prod'] },
    ];
    const [f] = only(diagnose(parts), 'overlapping-steps');
    expect(f).toMatchObject({ severity: 'warning', step: 2, apps: ['payments-prod-1', 'payments-prod-2'] });
    expect(f.message).toContain('selected by steps 2 and 3');
    expect(f.message).toContain("also counted in step 3's list");
    expect(f.why).toContain('the step whose maxUpdate counts it');
  });

  it('does not fire when the steps are disjoint (NotIn that excludes the earlier values)', () => {
    const parts = baseline();
    parts.appSet.spec.strategy!.rollingSync!.steps![2].matchExpressions = [
      { key: 'env', operator: 'NotIn', values: ['stage', 'canary'] },
    ];
    expect(only(diagnose(parts), 'overlapping-steps')).toEqual([]);
  });
});

describe('no-max-update', () => {
  it('fires for a step without maxUpdate: all its apps at once', () => {
    const parts = baseline();
    delete parts.appSet.spec.strategy!.rollingSync!.steps![2].maxUpdate;
    const [f] = only(diagnose(parts), 'no-max-update');
    expect(f).toMatchObject({ severity: 'info', step: 3 });
    expect(f.message).toContain('all 2 apps of the step sync at once');
  });

  it('does not fire when every step has a maxUpdate', () => {
    expect(only(diagnose(baseline()), 'no-max-update')).toEqual([]);
  });
});

describe('manual-gate', () => {
  it('is info for maxUpdate 0 on a step the rollout has not reached', () => {
    const parts = baseline();
    parts.appSet.spec.strategy!.rollingSync!.steps![2].maxUpdate = 0;
    const [f] = only(diagnose(parts), 'manual-gate');
    expect(f).toMatchObject({ severity: 'info', step: 3 });
    expect(f.message).toContain('manual gate (maxUpdate: 0)');
  });

  it('is a warning naming the waiting apps when the rollout waits on the gate', () => {
    const parts = baseline();
    parts.appSet.spec.strategy!.rollingSync!.steps![2].maxUpdate = '0%';
    parts.appSet.status!.conditions![2] = rolloutCondition(3);
    setEntry(parts, 'payments-prod-1', 'Waiting', 40);
    setEntry(parts, 'payments-prod-2', 'Waiting', 40);
    const [f] = only(diagnose(parts), 'manual-gate');
    expect(f).toMatchObject({ severity: 'warning', step: 3, apps: ['payments-prod-1', 'payments-prod-2'] });
    expect(f.message).toContain('maxUpdate: "0%"');
    expect(f.message).toContain('waiting here now on 2 apps');
    expect(f.fix).toContain('/argo sync payments-prod-1');
  });

  it('does not fire for a small percent that Argo CD raises to 1', () => {
    const parts = baseline();
    parts.appSet.spec.strategy!.rollingSync!.steps![2].maxUpdate = '10%';
    expect(only(diagnose(parts), 'manual-gate')).toEqual([]);
  });
});

describe('invalid-max-update', () => {
  it('fires for a maxUpdate string that is not a percent, which behaves like 1', () => {
    const parts = baseline();
    parts.appSet.spec.strategy!.rollingSync!.steps![2].maxUpdate = '2';
    const [f] = only(diagnose(parts), 'invalid-max-update');
    expect(f).toMatchObject({ severity: 'warning', step: 3 });
    expect(f.fix).toContain('`maxUpdate: 2`');
    expect(only(diagnose(parts), 'manual-gate')).toEqual([]);
  });

  it('does not fire for a percent string or an integer', () => {
    const parts = baseline();
    parts.appSet.spec.strategy!.rollingSync!.steps![1].maxUpdate = 2;
    expect(only(diagnose(parts), 'invalid-max-update')).toEqual([]);
  });
});

describe('percent-counts-unmatched', () => {
  it('fires when unmatched apps inflate step 1 percent maxUpdate', () => {
    const parts = baseline();
    parts.appSet.spec.strategy!.rollingSync!.steps![0].maxUpdate = '50%';
    // A second stage app (2 in step 1 -> 50% = 1) and two apps in no step (4 counted -> 2).
    const stage2 = cluster('stage-2', { env: 'stage' });
    parts.clusters.push(stage2, cluster('dev-1', { env: 'dev' }), cluster('dev-2', { env: 'dev' }));
    parts.apps.push(
      generatedApp(parts.appSet, 'payments-stage-2', { cluster: stage2, labels: { team: 'payments', env: 'stage' } }),
      generatedApp(parts.appSet, 'payments-dev-1', {
        cluster: parts.clusters[5],
        labels: { team: 'payments', env: 'dev' },
      }),
      generatedApp(parts.appSet, 'payments-dev-2', {
        cluster: parts.clusters[6],
        labels: { team: 'payments', env: 'dev' },
      }),
    );
    const [f] = only(diagnose(parts), 'percent-counts-unmatched');
    expect(f).toMatchObject({ severity: 'info', step: 1 });
    expect(f.message).toContain('2 at a time instead of 1');
  });

  it('does not fire for an integer maxUpdate on step 1', () => {
    const parts = baseline();
    const dev = cluster('dev-1', { env: 'dev' });
    parts.clusters.push(dev);
    parts.apps.push(
      generatedApp(parts.appSet, 'payments-dev-1', { cluster: dev, labels: { team: 'payments', env: 'dev' } }),
    );
    expect(only(diagnose(parts), 'percent-counts-unmatched')).toEqual([]);
  });
});

describe('stuck-step', () => {
  function prodProgressing(minutes: number) {
    const parts = baseline();
    parts.appSet.status!.conditions![2] = rolloutCondition(3);
    const stuck = app(parts, 'payments-prod-1');
    stuck.status!.sync!.status = 'OutOfSync';
    stuck.status!.health = { status: 'Degraded', lastTransitionTime: minutesAgo(minutes) };
    stuck.status!.operationState = {
      operation: {
        sync: { revision: 'main', prune: false },
        initiatedBy: { username: 'applicationset-controller', automated: true },
        info: [{ name: 'Reason', value: 'ApplicationSet RollingSync triggered a sync of this Application resource' }],
        retry: { limit: 5 },
      },
      phase: 'Failed',
      message:
        'one or more objects failed to apply, reason: Deployment.apps "payments" is invalid: spec.template.spec.containers[0].image: Required value (retried 5 times).',
      syncResult: {
        revision: '8f3c2a1d9e4b7c6a5f0e1d2c3b4a59687766aa01',
        resources: [
          {
            group: 'apps',
            version: 'v1',
            kind: 'Deployment',
            namespace: 'payments',
            name: 'payments',
            status: 'SyncFailed',
            message: 'Deployment.apps "payments" is invalid',
            syncPhase: 'Sync',
          },
        ],
      },
      startedAt: minutesAgo(minutes),
      finishedAt: minutesAgo(minutes - 1),
      retryCount: 5,
    };
    stuck.status!.resources = [
      {
        group: 'apps',
        version: 'v1',
        kind: 'Deployment',
        namespace: 'payments',
        name: 'payments',
        status: 'OutOfSync',
        health: { status: 'Degraded', message: 'Deployment "payments" exceeded its progress deadline' },
      },
    ];
    setEntry(parts, 'payments-prod-1', 'Progressing', minutes);
    setEntry(parts, 'payments-prod-2', 'Waiting', minutes);
    return parts;
  }

  it('fires for an app Progressing longer than the threshold, with its operation and health messages on a line of its own', () => {
    const [f] = only(diagnose(prodProgressing(42)), 'stuck-step');
    expect(f).toMatchObject({ severity: 'critical', step: 3, apps: ['payments-prod-1'] });
    expect(f.message).toBe('Step 3 is stuck: 1 app Pending/Progressing longer than 15m (payments-prod-1).');
    expect(f.details).toHaveLength(1);
    // Argo CD's messages quote names themselves: they are code spans, never nested in double quotes.
    expect(f.details![0]).toBe(
      'payments-prod-1 Progressing for 42m: operation Failed after 5 retries: Deployment/payments: `Deployment.apps "payments" is invalid`; ' +
        'sync OutOfSync, health Degraded: Deployment/payments: `Deployment "payments" exceeded its progress deadline`',
    );
    expect(f.why).toContain('no step timeout');
    expect(f.fix).toContain('/argo sync payments-prod-1');
    expect(f.fix).toContain('terminate-op');
    expect(f.fix).toContain('/argo pause payments');
  });

  it('names the later steps that wait behind a stuck step', () => {
    const parts = baseline();
    parts.appSet.status!.conditions![2] = rolloutCondition(1);
    setEntry(parts, 'payments-stage-1', 'Pending', 30);
    const [f] = only(diagnose(parts), 'stuck-step');
    expect(f.step).toBe(1);
    expect(f.message).toContain('Steps 2–3 (3 apps) wait behind it');
  });

  it('does not fire for an app Progressing 14m with a 15m threshold', () => {
    expect(only(diagnose(prodProgressing(14)), 'stuck-step')).toEqual([]);
  });

  it('follows a configured threshold', () => {
    expect(only(diagnose(prodProgressing(14), { stuckAfterMs: 10 * 60_000 }), 'stuck-step')).toHaveLength(1);
  });

  it('does not count Waiting apps as stuck', () => {
    const parts = baseline();
    setEntry(parts, 'payments-prod-2', 'Waiting', 600);
    expect(only(diagnose(parts), 'stuck-step')).toEqual([]);
  });
});

describe('autosync-ignored', () => {
  it('fires when the template has automated selfHeal, saying prune carries over', () => {
    const [f] = only(diagnose(baseline({ automated: { prune: true, selfHeal: true } })), 'autosync-ignored');
    expect(f).toMatchObject({ severity: 'info' });
    expect(f.message).toContain('selfHeal has no effect');
    expect(f.message).toContain('prune: true is carried into the syncs RollingSync starts');
    expect(f.why).toContain('automated.enabled=false');
  });

  it('says RollingSync syncs will not prune when the template has automated without prune', () => {
    const [f] = only(diagnose(baseline({ automated: {} })), 'autosync-ignored');
    expect(f.message).toContain('do not prune');
  });

  it('does not fire when the template has no automated block', () => {
    expect(only(diagnose(baseline()), 'autosync-ignored')).toEqual([]);
  });
});

describe('sync-window-blocking', () => {
  function blocked(message: string) {
    const parts = baseline();
    parts.appSet.status!.conditions![2] = rolloutCondition(3);
    const a = app(parts, 'payments-prod-1');
    a.status!.sync!.status = 'OutOfSync';
    a.status!.operationState = {
      operation: {
        sync: { revision: 'main' },
        initiatedBy: { username: 'applicationset-controller', automated: true },
        retry: { limit: 5 },
      },
      phase: 'Running',
      message,
      startedAt: minutesAgo(5),
    };
    setEntry(parts, 'payments-prod-1', 'Progressing', 5);
    return parts;
  }

  it('is critical for a rollout app whose operation is held by a sync window', () => {
    const [f] = only(diagnose(blocked('Sync operation blocked by sync window')), 'sync-window-blocking');
    expect(f).toMatchObject({ severity: 'critical', step: 3, apps: ['payments-prod-1'] });
    expect(f.why).toContain('manualSync: true');
    expect(f.fix).toContain('AppProject `payments`');
  });

  it('is a warning when the held app is not one the rollout waits on', () => {
    const parts = blocked('Sync operation blocked by sync window');
    setEntry(parts, 'payments-prod-1', 'Healthy', 5);
    const [f] = only(diagnose(parts), 'sync-window-blocking');
    expect(f.severity).toBe('warning');
  });

  it('does not fire for a Running operation with another message', () => {
    expect(only(diagnose(blocked('one or more tasks are running')), 'sync-window-blocking')).toEqual([]);
  });
});

describe('degraded-after-healthy', () => {
  function canaryDegraded(health: 'Degraded' | 'Progressing') {
    const parts = baseline();
    parts.appSet.status!.conditions![2] = rolloutCondition(3);
    setEntry(parts, 'payments-prod-1', 'Progressing', 3);
    setEntry(parts, 'payments-prod-2', 'Progressing', 3);
    const canary = app(parts, 'payments-canary-1');
    canary.status!.health = { status: health, lastTransitionTime: minutesAgo(2) };
    canary.status!.resources = [
      {
        group: 'apps',
        version: 'v1',
        kind: 'Deployment',
        namespace: 'payments',
        name: 'payments',
        status: 'Synced',
        health: {
          status: health,
          message: 'Back-off restarting failed container payments in pod payments-7d9f8c-x2k4q',
        },
      },
    ];
    return parts;
  }

  it('is critical when a canary degrades after its step completed and the rollout moved on', () => {
    const [f] = only(diagnose(canaryDegraded('Degraded')), 'degraded-after-healthy');
    expect(f).toMatchObject({ severity: 'critical', step: 2, apps: ['payments-canary-1'] });
    expect(f.message).toContain('payments-canary-1 (step 2) Degraded');
    expect(f.message).toContain('Back-off restarting failed container');
    expect(f.message).toContain('moved on to step 3 regardless');
    expect(f.fix).toContain('/argo pause payments');
  });

  it('does not fire while the app is only Progressing again', () => {
    expect(only(diagnose(canaryDegraded('Progressing')), 'degraded-after-healthy')).toEqual([]);
  });
});

describe('rolling-sync-without-steps', () => {
  it('fires for type RollingSync with an empty step list, and runs no other rule', () => {
    const parts = baseline({ steps: [] });
    const findings = diagnose(parts);
    expect(findings.map((f) => f.rule)).toEqual(['rolling-sync-without-steps']);
  });

  it('does not apply to an AllAtOnce appset, except to say that steps written under it are ignored', () => {
    const parts = baseline({ type: 'AllAtOnce' });
    expect(diagnose(parts).map((f) => f.rule)).toEqual(['steps-without-rolling-sync-type']);
    delete parts.appSet.spec.strategy!.rollingSync;
    expect(diagnose(parts)).toEqual([]);
  });
});

describe('ordering and fleet', () => {
  it('sorts findings by severity, then step', () => {
    const parts = baseline({ automated: { prune: true, selfHeal: true } });
    const steps = parts.appSet.spec.strategy!.rollingSync!.steps!;
    delete steps[0].maxUpdate;
    steps[2].matchExpressions = [{ key: 'env', operator: 'Exists' }];
    steps[1].matchExpressions = [{ key: 'env', operator: 'In', values: ['nope'] }];
    const findings = diagnose(parts);
    const rank = { critical: 0, warning: 1, info: 2 };
    for (let i = 1; i < findings.length; i++) {
      const a = findings[i - 1];
      const b = findings[i];
      expect(rank[a.severity] < rank[b.severity] || (a.severity === b.severity && (a.step ?? 0) <= (b.step ?? 0))).toBe(
        true,
      );
    }
    expect(findings[0]).toMatchObject({ rule: 'unsupported-operator', severity: 'critical' });
    expect(findings.map((f) => f.rule)).toEqual(
      expect.arrayContaining(['step-matches-nothing', 'app-in-no-step', 'no-max-update', 'autosync-ignored']),
    );
  });

  it('diagnoses every RollingSync appset on every instance and tags each finding', () => {
    const eu = baseline();
    delete eu.appSet.status!.applicationStatus;
    const us = baseline({ name: 'checkout' });
    us.appSet.spec.strategy!.rollingSync!.steps![2].maxUpdate = 0;
    const plain = rollingSyncAppSet({ name: 'tools', type: 'AllAtOnce', steps: [] });
    const toolsApp = generatedApp(plain, 'tools-prod-1', { cluster: us.clusters[2] });
    const fleet = StaticFleet.fromObjects([
      { name: 'argocd-eu', applications: eu.apps, applicationSets: [eu.appSet], clusters: eu.clusters },
      {
        name: 'argocd-us',
        applications: [
          ...us.apps.map((a) => ({
            ...a,
            metadata: {
              ...a.metadata,
              ownerReferences: [{ apiVersion: 'argoproj.io/v1alpha1', kind: 'ApplicationSet', name: 'checkout' }],
            },
          })),
          toolsApp,
        ],
        applicationSets: [us.appSet, plain],
        clusters: us.clusters,
      },
    ]);
    const findings = diagnoseFleet(fleet, opts);
    expect(findings.map((f) => [f.instance, f.appSet, f.rule])).toEqual([
      ['argocd-eu', 'payments', 'progressive-syncs-disabled'],
      ['argocd-us', 'checkout', 'manual-gate'],
    ]);
  });
});

describe('what the controller knows that labels cannot tell', () => {
  it("places apps whose templated labels the live app lacks by Argo CD's applicationStatus, so no rule contradicts the controller", () => {
    const parts = baseline();
    for (const a of parts.apps) delete a.metadata.labels;
    const findings = diagnose(parts);
    for (const rule of ['app-in-no-step', 'step-matches-nothing', 'label-on-cluster-not-app'])
      expect(only(findings, rule)).toEqual([]);
    // The same apps with their labels but an entry in no step: still the controller's verdict.
    const noStep = baseline();
    for (const a of noStep.apps) delete a.metadata.labels;
    noStep.appSet.status!.applicationStatus![0] = {
      ...noStep.appSet.status!.applicationStatus![0],
      step: '-1',
      status: 'Waiting',
    };
    expect(only(diagnose(noStep), 'app-in-no-step')[0].apps).toEqual(['payments-stage-1']);
  });

  it("renders a template label from the destination cluster's labels (cluster generator) when the live app lacks it and no status says", () => {
    const parts = baseline();
    for (const a of parts.apps) delete a.metadata.labels;
    delete parts.appSet.status!.applicationStatus;
    const findings = diagnose(parts);
    // Progressive syncs look off (no entries), but every app still lands in its step by its cluster's env.
    expect(only(findings, 'app-in-no-step')).toEqual([]);
    expect(only(findings, 'step-matches-nothing')).toEqual([]);
    expect(only(findings, 'progressive-syncs-disabled')).toHaveLength(1);
  });

  it('still trusts the labels over a stale entry when every template label is known', () => {
    const parts = baseline();
    parts.appSet.spec.strategy!.rollingSync!.steps![2].matchExpressions = [
      { key: 'env', operator: 'In', values: ['production'] },
    ];
    // Entries still say step 3 (written before the spec changed); the live labels say no step selects prod.
    expect(only(diagnose(parts), 'step-matches-nothing').map((f) => f.step)).toEqual([3]);
  });

  it('counts generated apps the appset lists in its status even without ownerReferences', () => {
    const parts = baseline();
    for (const a of parts.apps) delete a.metadata.ownerReferences;
    setEntry(parts, 'payments-prod-1', 'Progressing', 120);
    parts.appSet.status!.conditions = [rolloutCondition(3)];
    const { fleet, target } = fleetOf(parts);
    expect(
      fleet
        .appsOf(target.instance, 'payments')
        .map((a) => a.app.metadata.name)
        .sort(),
    ).toEqual(parts.apps.map((a) => a.metadata.name).sort());
    const [stuck] = only(diagnoseAppSet(fleet, target, opts), 'stuck-step');
    expect(stuck.message).not.toContain('not in the mirror');
    expect(stuck.details!.join('\n')).toContain('sync Synced, health Healthy');
  });

  it('does not adopt an app another appset owns', () => {
    const parts = baseline();
    parts.apps[0].metadata.ownerReferences = [
      { apiVersion: 'argoproj.io/v1alpha1', kind: 'ApplicationSet', name: 'other', uid: 'u' } as never,
    ];
    const { fleet, target } = fleetOf(parts);
    expect(fleet.appsOf(target.instance, 'payments').map((a) => a.app.metadata.name)).not.toContain(
      parts.apps[0].metadata.name,
    );
  });

  it('skips autosync-ignored when progressive syncs are off: the template auto-sync is then really in effect', () => {
    const parts = baseline({ automated: { selfHeal: true, prune: true } });
    expect(only(diagnose(parts), 'autosync-ignored')).toHaveLength(1);
    delete parts.appSet.status!.applicationStatus;
    const findings = diagnose(parts);
    expect(only(findings, 'progressive-syncs-disabled')).toHaveLength(1);
    expect(only(findings, 'autosync-ignored')).toEqual([]);
  });

  it('diagnoses an appset whose template has no spec (templatePatch only) without failing', () => {
    const parts = baseline();
    (parts.appSet.spec.template as { spec?: unknown }).spec = undefined;
    parts.appSet.spec.templatePatch = 'spec:\n  project: payments\n';
    expect(() => diagnose(parts)).not.toThrow();
  });

  it('counts an app selected by two steps only in its first step for manual-gate', () => {
    const parts = baseline({
      steps: [
        { matchExpressions: [{ key: 'env', operator: 'In', values: ['stage'] }], maxUpdate: 1 },
        { matchExpressions: [{ key: 'env', operator: 'In', values: ['canary', 'prod'] }], maxUpdate: 1 },
        { matchExpressions: [{ key: 'env', operator: 'In', values: ['prod'] }], maxUpdate: 0 },
      ],
    });
    const [gate] = only(diagnose(parts), 'manual-gate');
    expect(gate.step).toBe(3);
    expect(gate.message).toContain('its 0 apps');
  });
});
