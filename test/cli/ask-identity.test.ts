import { execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimProcess } from '../support/sim-process.js';
import { closeRedis, createRedis } from '../../src/infra/redis.js';
import { AuditLog } from '../../src/domain/audit/audit-log.js';
import { cleanPrefix } from '../runbooks/fake-argo.js';
import { parseConfig } from '../../src/infra/config/load.js';

const root = path.resolve(import.meta.dirname, '../..');
const bin = path.join(root, 'bin/rollcall.js');
const fixtureFile = path.join(root, 'test/fixtures/sim-multi-instance.json');
const exec = promisify(execFile);

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** One `rollcall ask` process; never throws on a non-zero exit. */
async function ask(args: string[], env: NodeJS.ProcessEnv): Promise<Result> {
  try {
    const { stdout, stderr } = await exec(process.execPath, [bin, 'ask', ...args], { env });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

/** stdout holds exactly one JSON object. */
function onlyJson(stdout: string): any {
  const lines = stdout.split('\n').filter((l) => l.trim());
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0]);
}

describe('rollcall ask: identity, --as and --json answers (processes)', () => {
  let sim: ChildProcess;
  let dir: string;
  let sandbox: string;
  let strict: string;
  const prefix = `rollcall-ask-id-${process.pid}-${Date.now()}`;
  const env = { ...process.env, ROLLCALL_USER: 'ask-tester', LOG_LEVEL: 'error' };
  const osUser = userInfo().username;
  const redis = createRedis(process.env.REDIS_URL!);
  const audit = new AuditLog(redis, prefix);

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'rollcall-ask-id-'));
    sandbox = path.join(dir, 'sandbox.yaml');
    sim = (
      await startSimProcess(['--fixture', fixtureFile, '--port', '0', '--frozen', '--write-config', sandbox], (out) =>
        out.includes('argocd staging'),
      )
    ).child;
    const written = readFileSync(sandbox, 'utf8');
    // The simulator's config is a sandbox: it lets --as pick anyone.
    expect(written).toContain('terminal: { allowActAs: true }');
    writeFileSync(sandbox, written.replace('prefix: rollcall', `prefix: ${prefix}`));
    // The same config as a real deployment would have it: --as off (the default).
    strict = path.join(dir, 'strict.yaml');
    writeFileSync(strict, readFileSync(sandbox, 'utf8').replace(/^.*terminal: \{ allowActAs: true \}\n/m, ''));
    expect(readFileSync(strict, 'utf8')).not.toContain('allowActAs');
  }, 40_000);

  afterAll(async () => {
    sim?.kill('SIGTERM');
    await cleanPrefix(process.env.REDIS_URL!, prefix);
    await closeRedis(redis);
  });

  it('refuses --as someone else unless access.terminal.allowActAs, so one person cannot request and approve alone; the refusal is audited', async () => {
    const request = await ask(
      ['sync ingress-prod-us1', '--yes', '--json', '--as', 'oncall-2', '--config', strict],
      env,
    );
    expect(request.code).toBe(1);
    expect(onlyJson(request.stdout).error).toMatchObject({
      code: 'forbidden',
      message: expect.stringContaining('access.terminal.allowActAs: true'),
    });
    const approve = await ask(['runs approve r-00000', '--json', '--as', 'oncall-2', '--config', strict], env);
    expect(approve.code).toBe(1);
    expect(onlyJson(approve.stdout).error.code).toBe('forbidden');

    const refusals = (await audit.latest(20)).filter((e) => e.kind === 'run.refused' && e.target === 'act-as');
    expect(refusals).toHaveLength(2);
    for (const e of refusals)
      expect(e).toMatchObject({
        who: 'ask-tester',
        surface: 'terminal',
        osUser,
        result: 'forbidden',
        params: { as: 'oncall-2' },
      });
    expect(refusals.map((e) => e.params!.command).sort()).toEqual(['runs approve r-00000', 'sync ingress-prod-us1']);
    expect((await audit.latest(20)).filter((e) => e.kind === 'run.start')).toEqual([]);

    // As yourself (--as yourself too) it goes on as usual.
    const self = await ask(['sync ingress-prod-us1', '--json', '--as', 'ask-tester', '--config', strict], env);
    expect(onlyJson(self.stdout)).toMatchObject({
      ok: true,
      data: { run: { status: 'awaiting-confirmation', requester: 'ask-tester' } },
    });
    const started = (await audit.latest(20)).find((e) => e.kind === 'run.start');
    expect(started).toMatchObject({ who: 'ask-tester', surface: 'terminal', osUser });
    expect(started!.actAs).toBeUndefined();
  }, 60_000);

  it('where the config allows --as, acts as that user and audits who really ran it', async () => {
    const preview = await ask(['sync ingress-prod-us1', '--json', '--as', 'oncall-2', '--config', sandbox], env);
    const reply = onlyJson(preview.stdout);
    expect(reply).toMatchObject({ ok: true, data: { run: { requester: 'oncall-2' } } });
    const started = (await audit.latest(50)).find((e) => e.kind === 'run.start' && e.runId === reply.data.runId);
    expect(started).toMatchObject({ who: 'oncall-2', surface: 'terminal', osUser, actAs: true });
    // The refusals of someone else's run carry the same origin.
    const abort = await ask([`runs cancel ${reply.data.runId}`, '--json', '--as', 'mallory', '--config', sandbox], env);
    expect(onlyJson(abort.stdout).error.code).toBe('forbidden');
    const refused = (await audit.latest(50)).find((e) => e.kind === 'run.refused' && e.runId === reply.data.runId);
    expect(refused).toMatchObject({
      who: 'mallory',
      target: 'run.cancel',
      surface: 'terminal',
      osUser,
      actAs: true,
      result: 'forbidden',
    });
  }, 60_000);

  it('answers a successful `runs abort` with ok:true and exit 0', async () => {
    const queued = await ask(['sync ingress-prod-us1', '--yes', '--json', '--config', sandbox], env);
    const runId = onlyJson(queued.stdout).data.runId;
    expect(onlyJson(queued.stdout).data.run.status).toBe('running');
    const aborted = await ask([`runs abort ${runId}`, '--json', '--config', sandbox], env);
    expect(aborted.code).toBe(0);
    expect(onlyJson(aborted.stdout)).toMatchObject({ ok: true, command: 'runs', data: { runId, status: 'aborted' } });
    // Aborting it again is refused: the run already ended.
    const again = await ask([`runs abort ${runId}`, '--json', '--config', sandbox], env);
    expect(again.code).toBe(1);
    expect(onlyJson(again.stdout)).toMatchObject({ ok: false, error: { code: 'invalid_state' } });
  }, 60_000);

  it('prints exactly one JSON object on stdout for every --json failure: a bad option, a missing argument, a bad config', async () => {
    const dashed = await ask(['-x foo', '--json', '--config', sandbox], env);
    expect(dashed.code).toBe(2);
    expect(onlyJson(dashed.stdout)).toEqual({
      ok: false,
      command: 'ask',
      title: 'Error',
      data: {},
      error: { code: 'usage', message: expect.stringContaining("unknown option '-x foo'") },
    });
    expect(onlyJson(dashed.stdout).error.message).toContain('rollcall ask --json -- "-x ...');

    const missing = await ask(['--json'], env);
    expect(missing.code).toBe(2);
    expect(onlyJson(missing.stdout)).toMatchObject({
      ok: false,
      error: { code: 'usage', message: expect.stringContaining('missing required argument') },
    });

    const bad = path.join(dir, 'bad.yaml');
    writeFileSync(bad, 'instances:\n  - name: prod\n    url: not-a-url\n    token: t\n');
    const config = await ask(['status', '--json', '--config', bad], env);
    expect(config.code).toBe(2);
    expect(onlyJson(config.stdout)).toEqual({
      ok: false,
      command: 'status',
      title: 'Error',
      data: {},
      error: { code: 'config_invalid', message: expect.stringContaining('instances[0].url: expected a URL (line 3)') },
    });

    const tooLong = await ask([`sync ${'a'.repeat(5000)}`, '--json', '--config', sandbox], env);
    expect(tooLong.code).toBe(2);
    expect(onlyJson(tooLong.stdout).error.code).toBe('command_too_long');
  }, 60_000);
});

describe('one identity rule for `rollcall sim --write-config` and `rollcall ask` (processes)', () => {
  // Containers, cron and CI often run with no USER: both processes get an environment without it (nor ROLLCALL_USER).
  const { USER: _user, ROLLCALL_USER: _rollcallUser, ...rest } = process.env;
  const bare: NodeJS.ProcessEnv = { ...rest, LOG_LEVEL: 'error' };
  const osUser = userInfo().username;
  const prefix = `rollcall-ask-nouser-${process.pid}-${Date.now()}`;
  const redis = createRedis(process.env.REDIS_URL!);
  const audit = new AuditLog(redis, prefix);
  let sim: ChildProcess | undefined;

  afterAll(async () => {
    sim?.kill('SIGTERM');
    await cleanPrefix(process.env.REDIS_URL!, prefix);
    await closeRedis(redis);
  });

  it('with USER unset, the written config names as operator the OS account ask acts as, so `sync --yes` is permitted', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'rollcall-ask-nouser-'));
    const file = path.join(dir, 'sandbox.yaml');
    sim = (
      await startSimProcess(
        ['--fixture', fixtureFile, '--port', '0', '--frozen', '--write-config', file],
        (out) => out.includes('argocd staging'),
        bare,
      )
    ).child;
    writeFileSync(file, readFileSync(file, 'utf8').replace('prefix: rollcall', `prefix: ${prefix}`));
    expect(parseConfig(readFileSync(file, 'utf8'), file, bare).access.groups.oncall).toEqual([osUser, 'oncall-2']);

    const queued = await ask(['sync ingress-prod-us1', '--yes', '--json', '--config', file], bare);
    const reply = onlyJson(queued.stdout);
    // Queued with no worker connected (exit 1, no_worker), not refused: the requester is the OS account.
    expect(reply.error?.code).not.toBe('forbidden');
    expect(reply.data.run).toMatchObject({ status: 'running', requester: osUser });
    const started = (await audit.latest(20)).find((e) => e.kind === 'run.start');
    expect(started).toMatchObject({ who: osUser, surface: 'terminal', osUser });
    expect((await audit.latest(20)).filter((e) => e.kind === 'run.refused')).toEqual([]);
  }, 60_000);
});
