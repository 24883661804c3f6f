import { readFileSync } from 'node:fs';
import type { Application, Cluster } from '../infra/argocd/types.js';
import type { Fixture } from './fixture-types.js';
import type { SimState } from './store.js';

export class FixtureError extends Error {
  readonly code = 'fixture_invalid';
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(`${file}: invalid simulator fixture\n${problems.map((p) => `  ${p}`).join('\n')}`);
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** Checks the parts the simulator relies on; everything else is served exactly as written. */
export function validateFixture(value: unknown, file = 'fixture'): Fixture {
  const problems: string[] = [];
  if (!isObject(value))
    throw new FixtureError(file, ['(root): expected an object {"instances": [...], "kube"?: [...]}']);
  if (!Array.isArray(value.instances) || !value.instances.length)
    problems.push('instances: expected a non-empty array');
  const names = new Set<string>();
  (Array.isArray(value.instances) ? value.instances : []).forEach((inst: unknown, i: number) => {
    const at = `instances[${i}]`;
    if (!isObject(inst)) return problems.push(`${at}: expected an object`);
    if (typeof inst.name !== 'string' || !/^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$/i.test(inst.name))
      problems.push(`${at}.name: expected a name of letters, digits, "-", "_" or "."`);
    else if (names.has(inst.name)) problems.push(`${at}.name: duplicate instance "${inst.name}"`);
    else names.add(inst.name);
    if (inst.token !== undefined && (typeof inst.token !== 'string' || !inst.token))
      problems.push(`${at}.token: expected a non-empty string`);
    if (inst.applications !== undefined && inst.applications !== null && !Array.isArray(inst.applications))
      problems.push(`${at}.applications: expected an array (may be empty or left out)`);
    const appNames = new Set<string>();
    (Array.isArray(inst.applications) ? inst.applications : []).forEach((app: unknown, j: number) => {
      const aat = `${at}.applications[${j}]`;
      if (!isObject(app) || !isObject(app.metadata) || typeof app.metadata.name !== 'string' || !app.metadata.name)
        return problems.push(`${aat}.metadata.name: expected a non-empty string`);
      // Apps in any namespace may share a name; within one namespace a name is unique.
      const key = `${typeof app.metadata.namespace === 'string' ? app.metadata.namespace : 'argocd'}/${app.metadata.name}`;
      if (appNames.has(key)) problems.push(`${aat}.metadata.name: duplicate app "${key}"`);
      appNames.add(key);
      if (!isObject(app.spec)) return problems.push(`${aat}.spec: expected an object`);
      const dest = app.spec.destination;
      if (!isObject(dest) || (typeof dest.server !== 'string' && typeof dest.name !== 'string'))
        problems.push(`${aat}.spec.destination: expected {server} or {name}`);
      if (app.status !== undefined && !isObject(app.status)) problems.push(`${aat}.status: expected an object`);
    });
    if (inst.applicationSets !== undefined && !Array.isArray(inst.applicationSets))
      problems.push(`${at}.applicationSets: expected an array`);
    (Array.isArray(inst.applicationSets) ? inst.applicationSets : []).forEach((set: unknown, j: number) => {
      const sat = `${at}.applicationSets[${j}]`;
      if (!isObject(set) || !isObject(set.metadata) || typeof set.metadata.name !== 'string')
        return problems.push(`${sat}.metadata.name: expected a string`);
      if (!isObject(set.spec) || !isObject(set.spec.template))
        problems.push(`${sat}.spec.template: expected an object`);
    });
    if (inst.accounts !== undefined && !Array.isArray(inst.accounts))
      problems.push(`${at}.accounts: expected an array`);
    (Array.isArray(inst.accounts) ? inst.accounts : []).forEach((acct: unknown, j: number) => {
      const ok =
        isObject(acct) &&
        typeof acct.name === 'string' &&
        typeof acct.token === 'string' &&
        Array.isArray(acct.allow) &&
        acct.allow.every((g: unknown) => typeof g === 'string' && g.split(',').length === 3);
      if (!ok)
        problems.push(
          `${at}.accounts[${j}]: expected {name, token, allow: ["applications, sync, <project>/<app>", ...]}`,
        );
    });
    if (inst.clusters !== undefined && !Array.isArray(inst.clusters))
      problems.push(`${at}.clusters: expected an array`);
    (Array.isArray(inst.clusters) ? inst.clusters : []).forEach((c: unknown, j: number) => {
      if (!isObject(c) || typeof c.server !== 'string' || typeof c.name !== 'string')
        problems.push(`${at}.clusters[${j}]: expected {server, name, ...}`);
    });
  });
  if (value.kube !== undefined) {
    if (!Array.isArray(value.kube)) problems.push('kube: expected an array');
    else
      value.kube.forEach((k: unknown, i: number) => {
        if (!isObject(k) || typeof k.cluster !== 'string' || !Array.isArray(k.objects))
          problems.push(`kube[${i}]: expected {cluster, objects: [...]}`);
      });
  }
  if (problems.length) throw new FixtureError(file, problems);
  for (const inst of value.instances as Record<string, unknown>[]) inst.applications ??= [];
  return value as unknown as Fixture;
}

export function loadFixture(file: string): Fixture {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new FixtureError(file, [`cannot read: ${(error as Error).message}`]);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new FixtureError(file, [`not JSON: ${(error as Error).message}`]);
  }
  return validateFixture(value, file);
}

export const defaultToken = (instance: string) => `sim-${instance}-token`;

/**
 * Loads the fixture into a fresh store. By default its objects are copied, so the fixture is never
 * mutated; `copy: false` adopts them (a fixture just loaded or generated: 10,000 apps clone in seconds).
 */
export function seedState(state: SimState, fixture: Fixture, opts: { copy?: boolean } = {}): void {
  const own = opts.copy === false ? <T>(o: T) => o : <T>(o: T) => structuredClone(o);
  for (const inst of fixture.instances) {
    const store = state.addInstance(inst.name, inst.token ?? defaultToken(inst.name));
    for (const cluster of inst.clusters ?? []) store.putCluster(own(cluster));
    const local = localCluster(inst.clusters ?? [], inst.applications);
    if (local) store.putCluster(local);
    const apps = [...inst.applications].sort((a, b) =>
      a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0,
    );
    for (const app of apps) store.putApp(own(app));
    for (const appSet of inst.applicationSets ?? []) store.putAppSet(own(appSet));
    for (const project of inst.projects ?? []) store.putProject(own(project));
  }
}

/** The API server address of the cluster Argo CD runs in; Argo CD names it `in-cluster`. */
export const IN_CLUSTER_SERVER = 'https://kubernetes.default.svc';

/**
 * Argo CD lists its own cluster (`in-cluster`) even without a cluster Secret for it. A fixture that
 * deploys there but lists no such cluster gets it, as the real API would serve it.
 */
function localCluster(clusters: Cluster[], apps: Application[]): Cluster | undefined {
  if (clusters.some((c) => c.server.replace(/\/+$/, '') === IN_CLUSTER_SERVER || c.name === 'in-cluster'))
    return undefined;
  const used = apps.some(
    (a) =>
      a.spec?.destination?.server?.replace(/\/+$/, '') === IN_CLUSTER_SERVER ||
      a.spec?.destination?.name === 'in-cluster',
  );
  if (!used) return undefined;
  const connectionState = { status: 'Successful', message: '', attemptedAt: new Date().toISOString() };
  return {
    server: IN_CLUSTER_SERVER,
    name: 'in-cluster',
    config: { tlsClientConfig: { insecure: false } },
    connectionState,
    info: { connectionState, serverVersion: '1.31', cacheInfo: {}, applicationsCount: 0 },
  } as Cluster;
}
