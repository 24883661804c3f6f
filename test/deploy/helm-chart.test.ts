import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { parseConfig } from '../../src/infra/config/load.js';
import { ChartRenderer, renderChart, type RenderedObject } from '../support/helm-template.js';

const root = path.resolve(import.meta.dirname, '../..');
const chartDir = path.join(root, 'deploy/helm/rollcall');
const read = (p: string) => readFileSync(path.join(root, p), 'utf8');

/** Every optional part switched on, as a team running the sealed-secrets runbooks would install it. */
const FULL_VALUES = {
  image: { repository: 'registry.example.com/platform/rollcall', tag: '1.2.3' },
  imagePullSecrets: [{ name: 'registry-creds' }],
  kube: {
    inCluster: { enabled: true, name: 'ops' },
    kubeconfigSecrets: [
      { cluster: 'prod-eu-west-1', secretName: 'rollcall-kube-prod-eu-west-1', key: 'kubeconfig' },
      { cluster: 'prod-us-east-1', secretName: 'rollcall-kube-prod-us-east-1' },
    ],
  },
  runbooks: { 'bulk-sync.yaml': read('runbooks/bulk-sync.yaml') },
  serviceMonitor: { enabled: true, labels: { release: 'kube-prometheus-stack' } },
  ingress: { enabled: true, host: 'rollcall.example.com', className: 'nginx' },
  config: {
    access: { groups: { sre: ['U012ABC'] }, operators: ['group:sre'], admins: ['U0ADMIN'] },
    kube: {
      clusters: [
        { name: 'ops', inCluster: true },
        { name: 'prod-eu-west-1', kubeconfig: '/var/run/rollcall/kube/prod-eu-west-1/kubeconfig' },
        { name: 'prod-us-east-1', kubeconfig: '/var/run/rollcall/kube/prod-us-east-1/kubeconfig' },
      ],
    },
    sealedSecrets: {
      backup: { cluster: 'ops', namespace: 'sealed-secrets-backup' },
      schedules: [{ cluster: 'prod-eu-west-1', cron: '0 3 * * *' }],
    },
  },
};

const VARIANTS: [string, object][] = [
  ['default values', {}],
  ['every option on', FULL_VALUES],
  [
    'socket mode, one replica each, no PDB, node defaults',
    {
      bot: { replicas: 1, pdb: { enabled: false }, nodeFlags: [] },
      worker: { replicas: 1 },
      config: { slack: { mode: 'socket', appToken: '${SLACK_APP_TOKEN}', signingSecret: null } },
    },
  ],
  ['roles combined: bot pods that are workers too', { roles: 'combined' }],
];

type Obj = RenderedObject & { spec?: any };
const ofKind = (objs: Obj[], kind: string) => objs.filter((o) => o.kind === kind);
const matches = (selector: Record<string, string>, labels: Record<string, string> = {}) =>
  Object.entries(selector).every(([k, v]) => labels[k] === v);
const secretEnv = {
  ARGOCD_TOKEN: 't',
  SLACK_BOT_TOKEN: 'xoxb-1',
  SLACK_SIGNING_SECRET: 's',
  SLACK_APP_TOKEN: 'xapp-1',
  REDIS_URL: 'redis://redis:6379',
};

describe.each(VARIANTS)('helm chart rendered with %s', (_name, values) => {
  const objects = renderChart(chartDir, { release: 'oncall', namespace: 'rollcall', values }) as Obj[];
  const deployments = ofKind(objects, 'Deployment');
  const pods = deployments.map((d) => d.spec.template);
  const combined = (values as { roles?: string }).roles === 'combined';
  /** Every Deployment the values ask for: no worker pods when the bot pods do their work. */
  const expectedDeployments = combined ? ['oncall-bot'] : ['oncall-bot', 'oncall-worker'];

  it('renders objects Kubernetes accepts the shape of: apiVersion, kind, a DNS name', () => {
    expect(deployments.map((d) => d.metadata.name).sort()).toEqual(expectedDeployments);
    for (const o of objects) {
      expect(o.apiVersion, o.source).toMatch(/^([a-z0-9.-]+\/)?v\d/);
      expect(o.metadata.name, `${o.kind} in ${o.source}`).toMatch(/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/);
    }
  });

  it('runs as a numeric non-root user with a read-only root filesystem and a writable /tmp emptyDir', () => {
    const dockerUser = /^USER (\d+):(\d+)$/m.exec(read('Dockerfile'));
    for (const pod of pods) {
      const sc = pod.spec.securityContext;
      expect(sc.runAsNonRoot).toBe(true);
      // The kubelet can only verify runAsNonRoot for a numeric user; the image's USER is the same one.
      expect(Number.isInteger(sc.runAsUser) && sc.runAsUser > 0).toBe(true);
      expect(Number.isInteger(sc.runAsGroup) && Number.isInteger(sc.fsGroup)).toBe(true);
      expect([String(sc.runAsUser), String(sc.runAsGroup)]).toEqual([dockerUser![1], dockerUser![2]]);
      const [container] = pod.spec.containers;
      expect(container.securityContext).toMatchObject({
        readOnlyRootFilesystem: true,
        allowPrivilegeEscalation: false,
        capabilities: { drop: ['ALL'] },
      });
      const tmp = container.volumeMounts.find((m: any) => m.mountPath === '/tmp');
      expect(pod.spec.volumes.find((v: any) => v.name === tmp.name)).toHaveProperty('emptyDir');
      expect(tmp.readOnly).not.toBe(true);
    }
  });

  it('mounts only volumes the pod declares, from ConfigMaps the chart renders and the Secrets in values', () => {
    const configMaps = new Set(ofKind(objects, 'ConfigMap').map((c) => c.metadata.name));
    const kubeSecrets = new Set(
      ((values as typeof FULL_VALUES).kube?.kubeconfigSecrets ?? []).map((s) => s.secretName),
    );
    for (const pod of pods) {
      const volumes = new Map<string, any>(pod.spec.volumes.map((v: any) => [v.name, v]));
      for (const m of pod.spec.containers[0].volumeMounts) expect(volumes.has(m.name), m.name).toBe(true);
      for (const v of volumes.values()) {
        if (v.configMap) expect(configMaps.has(v.configMap.name), v.configMap.name).toBe(true);
        if (v.secret) expect(kubeSecrets.has(v.secret.secretName), v.secret.secretName).toBe(true);
      }
    }
  });

  it('reads its config from the mounted ConfigMap, which rollcall accepts with the Secret as its environment', () => {
    const [configMap] = ofKind(objects, 'ConfigMap').filter((c) => c.metadata.name === 'oncall-config');
    for (const pod of pods) {
      const [container] = pod.spec.containers;
      const file = container.args[container.args.indexOf('--config') + 1];
      const mount = container.volumeMounts.find((m: any) => file.startsWith(`${m.mountPath}/`));
      const volume = pod.spec.volumes.find((v: any) => v.name === mount.name);
      expect(volume.configMap.name).toBe('oncall-config');
      expect(Object.keys((configMap as any).data)).toContain(path.basename(file));
      const env = {
        ...secretEnv,
        ...Object.fromEntries(container.env.filter((e: any) => 'value' in e).map((e: any) => [e.name, e.value])),
      };
      const config = parseConfig((configMap as any).data[path.basename(file)], 'values.yaml', env);
      // The runbooks the chart mounts are the ones rollcall reads.
      const runbooksMount = container.volumeMounts.find((m: any) => m.name === 'runbooks');
      expect(config.runbooksDir).toBe(runbooksMount ? runbooksMount.mountPath : 'runbooks');
      // Every kubeconfig the config names is a file of a mounted Secret; in-cluster access has its token.
      for (const cluster of config.kube.clusters) {
        if (cluster.inCluster) expect(pod.spec.automountServiceAccountToken).toBe(true);
        else
          expect(
            container.volumeMounts.some((m: any) => cluster.kubeconfig === `${m.mountPath}/kubeconfig`),
            cluster.kubeconfig,
          ).toBe(true);
      }
      expect(container.ports.find((p: any) => p.name === 'http').containerPort).toBe(config.http.port);
      if (config.slack?.mode === 'http' && pod.metadata.labels['app.kubernetes.io/component'] === 'bot') {
        expect(container.ports.find((p: any) => p.name === 'slack').containerPort).toBe(config.slack.port);
      }
    }
  });

  it('takes REDIS_URL and the tokens from the Secret', () => {
    for (const pod of pods) {
      const [container] = pod.spec.containers;
      expect(container.env.find((e: any) => e.name === 'REDIS_URL').valueFrom.secretKeyRef).toEqual({
        name: 'rollcall-secrets',
        key: 'REDIS_URL',
      });
      expect(container.envFrom).toEqual([{ secretRef: { name: 'rollcall-secrets' } }]);
      // No secret value is ever written into the chart's objects.
      expect(JSON.stringify(objects)).not.toMatch(/xoxb-|xapp-/);
    }
  });

  it('starts each role with probes on the health endpoints of its http port', () => {
    for (const d of deployments) {
      const component = d.metadata.labels!['app.kubernetes.io/component'];
      const [container] = d.spec.template.spec.containers;
      // Combined, the bot pods run every role: one process, one mirror of the fleet for the bot's and the worker's work.
      expect(container.args.slice(0, 3)).toEqual(['start', '--role', combined ? 'all' : component]);
      expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'http' });
      expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'http' });
      expect(container.startupProbe.httpGet).toEqual({ path: '/healthz', port: 'http' });
      // Liveness waits out a slow start instead of restarting it.
      expect(container.startupProbe.periodSeconds * container.startupProbe.failureThreshold).toBeGreaterThanOrEqual(60);
    }
  });

  it("runs the image's entry point, for the bot with node's flags from values in front", () => {
    const entrypoint = JSON.parse(/^ENTRYPOINT (\[.*\])$/m.exec(read('Dockerfile'))![1]) as string[];
    const chartValues = parse(read('deploy/helm/rollcall/values.yaml'));
    for (const d of deployments) {
      const role = d.metadata.labels!['app.kubernetes.io/component'] as 'bot' | 'worker';
      const flags: string[] =
        (values as Record<string, { nodeFlags?: string[] }>)[role]?.nodeFlags ?? chartValues[role].nodeFlags;
      const [container] = d.spec.template.spec.containers;
      // No flags: the image's ENTRYPOINT as built. Flags: the same program and script, with the flags between.
      expect(container.command ?? entrypoint).toEqual([entrypoint[0], ...flags, ...entrypoint.slice(1)]);
      if (!flags.length) expect(container.command).toBeUndefined();
    }
  });

  it("caps each role's V8 heap below its memory limit, leaving room for what lives outside the heap", () => {
    const chartValues = parse(read('deploy/helm/rollcall/values.yaml'));
    for (const role of ['bot', 'worker'] as const) {
      const { nodeFlags, resources } = chartValues[role] as {
        nodeFlags: string[];
        resources: { limits: { memory: string } };
      };
      const cap = nodeFlags.map((f) => /^--max-old-space-size=(\d+)$/.exec(f)?.[1]).find(Boolean);
      expect(cap, `${role}: no --max-old-space-size`).toBeDefined();
      const limitMi = Number(/^(\d+)Mi$/.exec(resources.limits.memory)![1]);
      // Node's own code, buffers and the young generation live outside the old space: at least 96 MiB of them.
      expect(Number(cap)).toBeLessThanOrEqual(limitMi - 96);
      expect(Number(cap)).toBeGreaterThanOrEqual(limitMi / 2);
    }
  });

  it('gives the kubelet time to let rollcall finish its in-flight steps', () => {
    const grace = parse(read('deploy/helm/rollcall/values.yaml')).config.shutdown.grace as string;
    for (const pod of pods)
      expect(pod.spec.terminationGracePeriodSeconds).toBeGreaterThan(Number(grace.replace(/s$/, '')));
  });

  it('has selectors that match the labels of the pods they mean, and only those', () => {
    const podsOf = (selector: Record<string, string>) =>
      deployments.filter((d) => matches(selector, d.spec.template.metadata.labels)).map((d) => d.metadata.name);
    for (const d of deployments) {
      expect(matches(d.spec.selector.matchLabels, d.spec.template.metadata.labels)).toBe(true);
      expect(podsOf(d.spec.selector.matchLabels)).toEqual([d.metadata.name]);
    }
    for (const pdb of ofKind(objects, 'PodDisruptionBudget'))
      expect(podsOf(pdb.spec.selector.matchLabels)).toEqual([pdb.metadata.name]);
    const services = ofKind(objects, 'Service');
    const metrics = services.find((s) => s.metadata.name === 'oncall-metrics')!;
    expect(podsOf(metrics.spec.selector).sort()).toEqual(expectedDeployments);
    for (const s of services) {
      for (const port of s.spec.ports) {
        for (const name of podsOf(s.spec.selector)) {
          const container = deployments.find((d) => d.metadata.name === name)!.spec.template.spec.containers[0];
          expect(
            container.ports.map((p: any) => p.name),
            `${s.metadata.name} -> ${name}`,
          ).toContain(port.targetPort);
        }
      }
    }
    const slack = services.find((s) => s.metadata.name === 'oncall');
    if (slack) expect(podsOf(slack.spec.selector)).toEqual(['oncall-bot']);
    for (const ingress of ofKind(objects, 'Ingress')) {
      const backend = ingress.spec.rules[0].http.paths[0].backend.service;
      expect(services.find((s) => s.metadata.name === backend.name)?.spec.ports.map((p: any) => p.name)).toContain(
        backend.port.name,
      );
    }
    for (const monitor of ofKind(objects, 'ServiceMonitor')) {
      expect(matches(monitor.spec.selector.matchLabels, metrics.metadata.labels)).toBe(true);
      expect(services.filter((s) => matches(monitor.spec.selector.matchLabels, s.metadata.labels))).toHaveLength(1);
      expect(monitor.spec.endpoints[0]).toMatchObject({ port: 'http', path: '/metrics' });
    }
  });

  it('grants the ServiceAccount exactly the rules of deploy/rbac, and only with in-cluster access on', () => {
    const inCluster = !!(values as typeof FULL_VALUES).kube?.inCluster?.enabled;
    const roles = [...ofKind(objects, 'Role'), ...ofKind(objects, 'ClusterRole')];
    const pod = pods[0];
    expect(pod.spec.automountServiceAccountToken).toBe(inCluster);
    if (!inCluster) return expect(roles).toEqual([]);
    const reference = parseAllDocuments(read('deploy/rbac/sealed-secrets-keys.yaml')).map((d) => d.toJS());
    expect(
      roles.map((r) => [r.kind, r.metadata.name.replace(/^oncall-/, 'rollcall-'), r.metadata.namespace, r.rules]),
    ).toEqual(expect.arrayContaining(reference.map((r) => [r.kind, r.metadata.name, r.metadata.namespace, r.rules])));
    expect(roles).toHaveLength(reference.length);
    const account = ofKind(objects, 'ServiceAccount')[0];
    expect(pod.spec.serviceAccountName).toBe(account.metadata.name);
    const bindings = [...ofKind(objects, 'RoleBinding'), ...ofKind(objects, 'ClusterRoleBinding')];
    expect(bindings).toHaveLength(roles.length);
    for (const b of bindings) {
      const roleRef = b.roleRef as { kind: string; name: string };
      const role = roles.find((r) => r.kind === roleRef.kind && r.metadata.name === roleRef.name);
      expect(role, b.metadata.name).toBeTruthy();
      if (b.kind === 'RoleBinding') expect(b.metadata.namespace).toBe(role!.metadata.namespace);
      expect((b as any).subjects).toEqual([
        { kind: 'ServiceAccount', name: account.metadata.name, namespace: 'rollcall' },
      ]);
    }
    // The backup namespace holds the key backups: it must outlive an uninstall.
    const ns = ofKind(objects, 'Namespace')[0];
    expect(ns.metadata.annotations).toEqual({ 'helm.sh/resource-policy': 'keep' });
  });
});

describe('helm chart templates', () => {
  it('are written in the template subset the renderer implements (it throws on anything else)', () => {
    const files = Object.fromEntries(
      readdirSync(path.join(chartDir, 'templates')).map((f) => [
        f,
        readFileSync(path.join(chartDir, 'templates', f), 'utf8'),
      ]),
    );
    expect(Object.keys(files).filter((f) => f.endsWith('.yaml')).length).toBeGreaterThanOrEqual(9);
    expect(() =>
      new ChartRenderer({ 'x.yaml': '{{ lookup "v1" "Secret" "a" "b" }}' }).render('x.yaml', {
        Values: {},
        Release: {},
        Chart: {},
      }),
    ).toThrow(/unsupported function "lookup"/);
    expect(() =>
      new ChartRenderer({ 'x.yaml': '{{ if .Values.a }}x' }).render('x.yaml', { Values: {}, Release: {}, Chart: {} }),
    ).toThrow(/missing \{\{ end \}\}/);
  });

  it('refuse a value of roles the chart does not know, naming it', () => {
    expect(() =>
      renderChart(chartDir, { release: 'oncall', namespace: 'rollcall', values: { roles: 'both' } }),
    ).toThrow(/roles must be split or combined \(got both\)/);
  });

  it('render Go template whitespace control and pipelines as Helm does', () => {
    const r = new ChartRenderer({
      '_h.tpl': '{{- define "n" -}}\n{{ .a | default "z" | quote }}\n{{- end -}}',
      'x.yaml':
        'a:\n  {{- include "n" .Values | nindent 2 }}\n{{- range $k, $v := .Values.m }}\n{{ $k }}: {{ $v }}\n{{- end }}\n{{ if and .Values.t (not .Values.f) }}yes{{ else }}no{{ end }}',
    });
    expect(r.render('x.yaml', { Values: { m: { b: 2, a: 1 }, t: true, f: false }, Release: {}, Chart: {} })).toBe(
      'a:\n  "z"\na: 1\nb: 2\nyes',
    );
  });
});

describe('Dockerfile', () => {
  const dockerfile = read('Dockerfile');
  const stages = dockerfile.split(/^FROM /m).slice(1);
  const runtime = stages[stages.length - 1];

  it('builds in one stage and runs compiled JavaScript with production dependencies only in another', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(dockerfile).toMatch(/RUN npm run build/);
    expect(dockerfile).toMatch(/npm ci --omit=dev/);
    expect(runtime).toMatch(/ENTRYPOINT \["node", "dist\/main\.js"\]/);
    expect(runtime).not.toMatch(/tsx|COPY src/);
    expect(runtime).toMatch(/ENV NODE_ENV=production HOME=\/tmp TMPDIR=\/tmp/);
  });

  it("installs the incident chart's font in the runtime image: alpine has none, and resvg draws no text without one", () => {
    expect(runtime).toMatch(/^RUN apk add --no-cache font-dejavu$/m);
  });

  it('keeps local configs and dependencies out of the build context', () => {
    const ignore = read('.dockerignore').split('\n');
    expect(ignore[ignore.findIndex((l) => !l.startsWith('#') && l.trim())]).toBe('*');
    const copied = [...dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((m) => m[1].split(/\s+/));
    for (const file of copied)
      expect(ignore, file).toContain(
        `!${file.replace(/\/$/, '')}${['scripts', 'src', 'bin', 'runbooks'].includes(file) ? '/' : ''}`,
      );
  });
});
