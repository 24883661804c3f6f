import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const bin = path.resolve(import.meta.dirname, '../../bin/rollcall.js');
const exec = promisify(execFile);

/** One `rollcall ARGS` process; never throws on a non-zero exit. */
async function rollcall(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(process.execPath, [bin, ...args], {
      env: { ...process.env, LOG_LEVEL: 'error' },
    });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

const typos = `instances:
  - name: prod
    url: https://argocd.example.com
    token: t
redis:
  url: redis://127.0.0.1:6379
  prefx: team-a
diagnoze:
  stuckAfter: 15m
alerts:
  holdDwn: 30s
  stuckAfter: 15
`;

describe('rollcall config check (process)', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'rollcall-config-check-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('exits 2 and lists every problem with its path, line and the key meant; nothing reads as ok', async () => {
    const file = path.join(dir, 'typos.yaml');
    writeFileSync(file, typos);
    const result = await rollcall(['config', 'check', file]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr.split('\n').filter(Boolean)).toEqual([
      `${file}: 4 problem(s)`,
      '  redis.prefx: unknown key "prefx" (did you mean prefix?) (line 7)',
      '  diagnoze: unknown key "diagnoze" (did you mean diagnose?) (line 8)',
      '  alerts.holdDwn: unknown key "holdDwn" (did you mean holdDown?) (line 11)',
      '  alerts.stuckAfter: 15 needs a unit: 15s, 15m or 15h (a bare number is not a duration) (line 12)',
    ]);
  }, 30_000);

  it('accepts the same file once fixed, and reports the prefix it will use', async () => {
    const file = path.join(dir, 'fixed.yaml');
    writeFileSync(
      file,
      typos
        .replace('prefx', 'prefix')
        .replace('diagnoze', 'diagnose')
        .replace('holdDwn', 'holdDown')
        .replace('stuckAfter: 15\n', 'stuckAfter: 15m\n'),
    );
    const result = await rollcall(['config', 'check', file]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`${file}: ok`);
    expect(result.stdout).toContain('redis redis://127.0.0.1:6379 prefix=team-a');
  }, 30_000);

  it('refuses to run a command on such a config: `ask --json` answers config_invalid with exit 2', async () => {
    const file = path.join(dir, 'typos.yaml');
    writeFileSync(file, typos);
    const result = await rollcall(['ask', 'status', '--json', '--config', file]);
    expect(result.code).toBe(2);
    const reply = JSON.parse(result.stdout);
    expect(reply).toMatchObject({ ok: false, error: { code: 'config_invalid' } });
    expect(reply.error.message).toContain('redis.prefx: unknown key "prefx" (did you mean prefix?) (line 7)');
  }, 30_000);

  const withChecks = (query: string) => `instances:
  - name: prod
    url: https://argocd.example.com
    token: t
  - name: edge
    url: https://argocd-edge.example.com
    token: t
    prometheus: { url: 'https://prom-edge.example.com', basicAuth: { username: rollcall, password: s3cret-pw } }
prometheus:
  url: http://prometheus.example.com:9090
  token: prom-s3cret-token
checks:
  error-rate:
    query: '${query}'
    failAbove: 0.05
    window: 2m
  success-rate:
    query: 'sum(rate(ok{app="{{app}}"}[{{window}}]))'
    failBelow: 0.95
    noData: inconclusive
`;

  it('lists each Prometheus (secrets masked) and each check with its threshold, window and noData', async () => {
    const file = path.join(dir, 'checks.yaml');
    writeFileSync(file, withChecks('sum(rate(errors{app="{{app}}",team="{{labels.team}}"}[{{window}}]))'));
    const result = await rollcall(['config', 'check', file]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout.split('\n').filter((l) => /^ {2}(prometheus|check) /.test(l))).toEqual([
      '  prometheus http://prometheus.example.com:9090 token=*** scrapeInterval=15s',
      '  prometheus https://prom-edge.example.com basicAuth=rollcall:*** scrapeInterval=15s (instance edge)',
      '  check error-rate failAbove 0.05 window=2m noData=fail',
      '  check success-rate failBelow 0.95 window=1m noData=inconclusive',
    ]);
    expect(result.stdout).not.toMatch(/s3cret/);
  }, 30_000);

  it('refuses a check whose query names an unknown placeholder, naming the check, the line and the one meant', async () => {
    const file = path.join(dir, 'bad-placeholder.yaml');
    writeFileSync(file, withChecks('sum(rate(errors{app="{{ap}}"}[{{window}}]))'));
    const result = await rollcall(['config', 'check', file]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr.split('\n').filter(Boolean)).toEqual([
      `${file}: 1 problem(s)`,
      '  checks.error-rate.query: unknown placeholder {{ap}} (did you mean {{app}}?); known: {{app}}, {{cluster}}, {{namespace}}, {{instance}}, {{project}}, {{window}}, {{labels.KEY}} (line 14)',
    ]);
  }, 30_000);
});
