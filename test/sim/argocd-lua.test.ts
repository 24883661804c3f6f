import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import type { ResourceAction } from '../../src/infra/argocd/types.js';
import { actionImpacts, discoverActions, runActionScript } from '../../src/sim/rollouts/actions.js';
import { rolloutHealth } from '../../src/sim/rollouts/health.js';
import { LuaError } from '../../src/sim/rollouts/lua.js';

/**
 * The simulator's ports of Argo CD v3.5.1's Rollout health.lua and actions (discovery.lua, <action>/action.lua)
 * against what upstream's own tests expect. test/fixtures/argocd-lua holds one case per upstream case (our own
 * inputs, upstream's expectations). With ARGOCD_RESOURCE_CUSTOMIZATIONS pointing at a checkout's
 * `resource_customizations` directory, the same checks also run on upstream's test files themselves.
 */

type Obj = Record<string, unknown>;
const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/argocd-lua');
const NOW = new Date('2024-06-01T12:34:56.789Z');
const ctx = { now: NOW, params: [] };

/** Actions as a comparable set: `disabled` false and an empty displayName are what omitempty leaves out. */
function normalized(actions: Partial<ResourceAction>[]): Obj[] {
  return actions
    .map((a) => ({
      name: a.name,
      disabled: a.disabled === true,
      ...(a.displayName ? { displayName: a.displayName } : {}),
      ...(a.iconClass ? { iconClass: a.iconClass } : {}),
      ...(a.params?.length ? { params: a.params } : {}),
    }))
    .sort((a, b) => String(a.name).localeCompare(String(b.name)));
}

/** A JSON merge patch's view of an object: a null field is an absent one. */
function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value)
        .filter(([, v]) => v !== null)
        .map(([k, v]) => [k, withoutNulls(v)]),
    );
  return value;
}

function error(run: () => unknown): string | undefined {
  try {
    run();
    return undefined;
  } catch (e) {
    if (e instanceof LuaError) return e.message;
    throw e;
  }
}

describe('Rollout health: health.lua as Argo CD runs it', () => {
  const file = YAML.parse(readFileSync(path.join(FIXTURES, 'rollout-health.yaml'), 'utf8')) as {
    cases: { mirrors: string; why?: string; expect: { status: string; message?: string }; rollout: Obj }[];
  };
  it.each(file.cases.map((c) => [c.why ?? c.mirrors, c] as const))('%s', (_name, c) => {
    const health = rolloutHealth(structuredClone(c.rollout));
    expect({ status: health.status, message: health.message ?? '' }).toEqual({
      status: c.expect.status,
      message: c.expect.message ?? '',
    });
  });

  it('reports an object being deleted as Pending deletion before any script runs', () => {
    expect(
      rolloutHealth({ metadata: { name: 'web', deletionTimestamp: '2024-01-01T00:00:00Z' }, spec: {}, status: {} }),
    ).toEqual({ status: 'Progressing', message: 'Pending deletion' });
  });
});

describe('Rollout resource actions: discovery.lua and the action scripts', () => {
  const file = YAML.parse(readFileSync(path.join(FIXTURES, 'rollout-actions.yaml'), 'utf8')) as {
    discovery: { mirrors: string; why?: string; disabled?: string[]; error?: string; rollout: Obj }[];
    actions: { mirrors: string; why?: string; action: string; rollout: Obj; after?: Obj; error?: string }[];
  };
  const ALL = ['abort', 'pause', 'promote-full', 'restart', 'resume', 'retry', 'skip-current-step'];

  it.each(file.discovery.map((c) => [c.why ?? c.mirrors, c] as const))('offers %s', (_name, c) => {
    if (c.error) {
      expect(error(() => discoverActions('argoproj.io', 'Rollout', structuredClone(c.rollout)))).toBe(c.error);
      return;
    }
    const actions = discoverActions('argoproj.io', 'Rollout', structuredClone(c.rollout));
    expect(normalized(actions)).toEqual(
      normalized(
        ALL.map((name) => ({
          name,
          disabled: c.disabled!.includes(name),
          ...(name === 'restart' ? { displayName: 'Restart Pods' } : {}),
        })),
      ),
    );
  });

  it.each(file.actions.map((c) => [`${c.action}: ${c.why ?? c.mirrors}`, c] as const))('runs %s', (_name, c) => {
    const input = structuredClone(c.rollout);
    if (c.error) {
      expect(error(() => runActionScript('argoproj.io', 'Rollout', c.action, input, ctx))).toBe(c.error);
      return;
    }
    const after = runActionScript('argoproj.io', 'Rollout', c.action, input, ctx);
    const expected = JSON.parse(JSON.stringify(c.after).replace('"$now"', '"2024-06-01T12:34:56Z"')) as Obj;
    expect(after).toEqual(expected);
    // The script works on a copy: the live object is only changed by the patch Argo CD sends.
    expect(input).toEqual(c.rollout);
  });

  it('has no script for an action the kind lacks, and no actions for a kind without discovery', () => {
    expect(() => runActionScript('argoproj.io', 'Rollout', 'promote', {}, ctx)).toThrow(
      'built-in script does not exist',
    );
    expect(() => runActionScript('argoproj.io', 'Rollout', 'constructor', {}, ctx)).toThrow(
      'built-in script does not exist',
    );
    expect(discoverActions('', 'ConfigMap', { metadata: { name: 'x' } })).toEqual([]);
  });
});

describe('CronJob resource actions: batch/CronJob discovery.lua and create-job, suspend, resume', () => {
  // batch/CronJob/actions/testdata/cronjob.yaml, as upstream's action tests read it.
  const cronJob = (): Obj => ({
    apiVersion: 'batch/v1',
    kind: 'CronJob',
    metadata: { name: 'hello', namespace: 'test-ns', uid: '123' },
    spec: {
      schedule: '* * * * *',
      jobTemplate: {
        metadata: { labels: { my: 'label' }, annotations: { my: 'annotation' } },
        spec: {
          ttlSecondsAfterFinished: 100,
          template: {
            metadata: { labels: { pod: 'label' }, annotations: { pod: 'annotation' } },
            spec: {
              containers: [{ name: 'hello', image: 'busybox:1.28', command: ['/bin/sh', '-c', 'date'], resources: {} }],
              restartPolicy: 'OnFailure',
            },
          },
        },
      },
    },
  });

  it('offers create-job always, and suspend or resume as spec.suspend says', () => {
    const names = (obj: Obj) => normalized(discoverActions('batch', 'CronJob', obj));
    expect(names(cronJob())).toEqual([
      { name: 'create-job', disabled: false, displayName: 'Create Job', iconClass: 'fa fa-fw fa-plus' },
      { name: 'suspend', disabled: false, iconClass: 'fa fa-fw fa-pause' },
    ]);
    const suspended = cronJob();
    (suspended.spec as Obj).suspend = true;
    expect(names(suspended).map((a) => a.name)).toEqual(['create-job', 'resume']);
    // discovery.lua reads obj.spec.suspend: an object without spec fails on its line 4.
    expect(error(() => discoverActions('batch', 'CronJob', { metadata: { name: 'x' } }))).toBe(
      "<string>:4: attempt to index a non-table object(nil) with key 'suspend'",
    );
  });

  it('create-job returns a Job to create, named after the CronJob and the UTC minute, owned by it', () => {
    const input = cronJob();
    const impacts = actionImpacts('batch', 'CronJob', 'create-job', input, ctx);
    expect(impacts).toEqual([
      {
        operation: 'create',
        resource: {
          apiVersion: 'batch/v1',
          kind: 'Job',
          metadata: {
            name: 'hello-2406011234',
            namespace: 'test-ns',
            labels: { my: 'label' },
            annotations: { my: 'annotation', 'cronjob.kubernetes.io/instantiate': 'manual' },
            ownerReferences: [
              {
                apiVersion: 'batch/v1',
                kind: 'CronJob',
                name: 'hello',
                uid: '123',
                blockOwnerDeletion: true,
                controller: true,
              },
            ],
          },
          // deepCopy drops the empty `resources: {}`, as upstream's expected job.yaml shows.
          spec: {
            ttlSecondsAfterFinished: 100,
            template: {
              metadata: { labels: { pod: 'label' }, annotations: { pod: 'annotation' } },
              spec: {
                containers: [{ name: 'hello', image: 'busybox:1.28', command: ['/bin/sh', '-c', 'date'] }],
                restartPolicy: 'OnFailure',
              },
            },
          },
        },
      },
    ]);
    expect(input).toEqual(cronJob());
    expect(() => runActionScript('batch', 'CronJob', 'create-job', cronJob(), ctx)).toThrow('does not patch');
  });

  it('create-job without a jobTemplate fails where the script indexes it', () => {
    expect(
      error(() => actionImpacts('batch', 'CronJob', 'create-job', { metadata: { name: 'x' }, spec: {} }, ctx)),
    ).toBe("<string>:35: attempt to index a non-table object(nil) with key 'metadata'");
  });

  it('suspend sets spec.suspend; resume clears it to false', () => {
    const suspended = runActionScript('batch', 'CronJob', 'suspend', cronJob(), ctx);
    expect((suspended.spec as Obj).suspend).toBe(true);
    expect((runActionScript('batch', 'CronJob', 'resume', suspended, ctx).spec as Obj).suspend).toBe(false);
  });
});

const UPSTREAM = process.env.ARGOCD_RESOURCE_CUSTOMIZATIONS;

describe.runIf(UPSTREAM && existsSync(UPSTREAM))("upstream's own test files (ARGOCD_RESOURCE_CUSTOMIZATIONS)", () => {
  const load = (file: string) => YAML.parse(readFileSync(file, 'utf8')) as unknown;
  const dirOf = (key: string) => path.join(UPSTREAM!, key);

  it('health_test.yaml of argoproj.io/Rollout', () => {
    const dir = dirOf('argoproj.io/Rollout');
    const tests = (
      load(path.join(dir, 'health_test.yaml')) as {
        tests: { inputPath: string; healthStatus: { status: string; message?: string } }[];
      }
    ).tests;
    for (const t of tests) {
      const health = rolloutHealth(load(path.join(dir, t.inputPath)) as Obj);
      expect({ input: t.inputPath, status: health.status, message: health.message ?? '' }).toEqual({
        input: t.inputPath,
        status: t.healthStatus.status,
        message: t.healthStatus.message ?? '',
      });
    }
  });

  for (const [group, kind] of [
    ['argoproj.io', 'Rollout'],
    ['apps', 'Deployment'],
    ['batch', 'CronJob'],
  ] as const) {
    it(`actions/action_test.yaml of ${group}/${kind}`, () => {
      const dir = path.join(dirOf(`${group}/${kind}`), 'actions');
      const spec = load(path.join(dir, 'action_test.yaml')) as {
        discoveryTests?: { inputPath: string; result: Partial<ResourceAction>[] }[];
        actionTests?: {
          action: string;
          inputPath: string;
          expectedOutputPath?: string;
          parameters?: Record<string, string>;
          expectedErrorMessage?: string;
        }[];
      };
      for (const t of spec.discoveryTests ?? []) {
        const actions = discoverActions(group, kind, load(path.join(dir, t.inputPath)) as Obj);
        expect({ input: t.inputPath, actions: normalized(actions) }).toEqual({
          input: t.inputPath,
          actions: normalized(t.result),
        });
      }
      for (const t of spec.actionTests ?? []) {
        const params = Object.entries(t.parameters ?? {}).map(([name, value]) => ({ name, value: String(value) }));
        const input = load(path.join(dir, t.inputPath)) as Obj;
        if (t.expectedErrorMessage) {
          expect(error(() => runActionScript(group, kind, t.action, input, { now: NOW, params }))).toBe(
            t.expectedErrorMessage,
          );
          continue;
        }
        const impacts = actionImpacts(group, kind, t.action, input, { now: NOW, params });
        const expectedFile = load(path.join(dir, t.expectedOutputPath!)) as Obj | { unstructuredObj: Obj }[];
        // A new-style action's expected output is the list of impacted resources; a created Job's name carries
        // the minute it ran, which upstream's test matches by prefix and then overwrites.
        const [after, expected] = Array.isArray(expectedFile)
          ? [
              { ...impacts[0].resource, metadata: { ...(impacts[0].resource.metadata as Obj), name: 'x' } },
              {
                ...expectedFile[0].unstructuredObj,
                metadata: { ...(expectedFile[0].unstructuredObj.metadata as Obj), name: 'x' },
              },
            ]
          : [normalizeUpstream(kind, impacts[0].resource), normalizeUpstream(kind, expectedFile)];
        if (Array.isArray(expectedFile)) expect(impacts.map((i) => i.operation)).toEqual(['create']);
        // gitops-engine's two-way diff ignores fields the expected object leaves out (server-set ones).
        expect({ test: `${t.action} ${t.inputPath}`, after: onlyFieldsOf(withoutNulls(expected), after) }).toEqual({
          test: `${t.action} ${t.inputPath}`,
          after: withoutNulls(expected),
        });
      }
    });
  }
});

/** `live` reduced to the fields `config` has (gitops-engine RemoveMapFields), nulls dropped. */
function onlyFieldsOf(config: unknown, live: unknown): unknown {
  if (Array.isArray(config) && Array.isArray(live) && config.length === live.length)
    return live.map((v, i) => onlyFieldsOf(config[i], v));
  if (config && live && typeof config === 'object' && typeof live === 'object' && !Array.isArray(config))
    return Object.fromEntries(
      Object.entries(live as Obj)
        .filter(([k, v]) => k in (config as Obj) && v !== null)
        .map(([k, v]) => [k, onlyFieldsOf((config as Obj)[k], v)]),
    );
  return live;
}

/** What upstream's testNormalizer (util/lua/custom_actions_test.go) drops before comparing: the time an action ran. */
function normalizeUpstream(kind: string, obj: Obj): Obj {
  const copy = structuredClone(obj) as Obj & { spec?: Obj; metadata?: Obj; status?: unknown };
  if (kind === 'Rollout' && copy.spec) delete copy.spec.restartAt;
  if (kind === 'Deployment') {
    delete copy.status;
    if (copy.metadata) {
      delete copy.metadata.creationTimestamp;
      delete copy.metadata.generation;
    }
    const annotations = (copy.spec?.template as { metadata?: { annotations?: Obj } } | undefined)?.metadata
      ?.annotations;
    if (annotations && 'kubectl.kubernetes.io/restartedAt' in annotations)
      annotations['kubectl.kubernetes.io/restartedAt'] = '0001-01-01T00:00:00Z';
  }
  return copy;
}
