import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { parseConfig } from '../../src/config/load.js';
import { stringify } from 'yaml';

const root = path.resolve(import.meta.dirname, '../..');
const read = (p: string) => readFileSync(path.join(root, p), 'utf8');

/** Go-template actions replaced by a scalar placeholder, so the skeleton can be parsed as YAML. */
function skeleton(template: string): string {
  return template
    .split('\n')
    .filter((line) => !/^\s*\{\{-?\s*(if|end|else|with|range|define)\b.*\}\}\s*$/.test(line))
    .map((line) => (/^\s*\{\{-?\s*(include|toYaml)\b.*\|\s*nindent/.test(line) ? line.replace(/\{\{.*\}\}/, 'placeholder: x') : line))
    .map((line) => line.replace(/\{\{.*?\}\}/g, 'X'))
    .join('\n');
}

function valuePaths(template: string): string[] {
  return [...template.matchAll(/\.Values\.([A-Za-z0-9_.]+)/g)].map((m) => m[1]);
}

describe('docker-compose.yml', () => {
  const compose = parse(read('docker-compose.yml'));

  it('runs Redis with persistence so runs survive a restart', () => {
    const redis = compose.services.redis;
    expect(redis.command).toEqual(expect.arrayContaining(['--appendonly', 'yes']));
    expect(redis.command).toEqual(expect.arrayContaining(['--maxmemory-policy', 'noeviction']));
    expect(redis.volumes.some((v: string) => v.endsWith(':/data'))).toBe(true);
    expect(compose.volumes).toHaveProperty('redis-data');
  });

  it('starts rollcall against that Redis once it is healthy', () => {
    const bot = compose.services.rollcall;
    expect(bot.command[0]).toBe('start');
    expect(bot.environment.REDIS_URL).toBe('redis://redis:6379');
    expect(bot.depends_on.redis.condition).toBe('service_healthy');
    expect(compose.services.redis.healthcheck.test).toContain('ping');
  });
});

describe('helm chart', () => {
  const chartDir = 'deploy/helm/rollcall';
  const values = parse(read(`${chartDir}/values.yaml`));
  const templates = readdirSync(path.join(root, chartDir, 'templates')).filter((f) => f.endsWith('.yaml'));

  it('has a valid Chart.yaml', () => {
    const chart = parse(read(`${chartDir}/Chart.yaml`));
    expect(chart).toMatchObject({ apiVersion: 'v2', name: 'rollcall', type: 'application' });
    expect(chart.version).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it.each(templates)('%s parses as Kubernetes YAML and only references values that exist', (file) => {
    const text = read(`${chartDir}/templates/${file}`);
    for (const doc of parseAllDocuments(skeleton(text))) {
      expect(doc.errors).toEqual([]);
      const obj = doc.toJS();
      expect(obj.apiVersion).toBeTruthy();
      expect(obj.kind).toBeTruthy();
    }
    for (const p of valuePaths(text)) {
      const found = p.split('.').reduce<any>((v, k) => (v == null ? undefined : v[k]), values);
      expect(found, `.Values.${p}`).not.toBeUndefined();
    }
  });

  it('ships a config that rollcall accepts', () => {
    const env = { ARGOCD_TOKEN: 't', SLACK_BOT_TOKEN: 'xoxb', SLACK_SIGNING_SECRET: 's', REDIS_URL: values.redis.url };
    const config = parseConfig(stringify(values.config), 'values.yaml', env);
    expect(config.slack?.port).toBe(3000);
    expect(config.http.port).toBe(8080);
  });

  it('runs the bot and worker roles with probes on the health endpoints', () => {
    for (const role of ['bot', 'worker']) {
      const deployment = parse(skeleton(read(`${chartDir}/templates/deployment-${role}.yaml`)));
      const container = deployment.spec.template.spec.containers[0];
      expect(container.args.slice(0, 3)).toEqual(['start', '--role', role]);
      expect(container.readinessProbe.httpGet.path).toBe('/readyz');
      expect(container.livenessProbe.httpGet.path).toBe('/healthz');
      expect(container.ports.map((p: { containerPort: number }) => p.containerPort)).toContain(values.config.http.port);
    }
  });
});
