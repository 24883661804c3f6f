import { describe, expect, it } from 'vitest';
import { dispatch } from '../../src/commands/index.js';
import { canOperate, canRead } from '../../src/core/access.js';
import { errorData, okAnswer, registerTestCommand } from '../support/replies.js';
import { renderText } from '../../src/views/text.js';
import { ctx, services, twoInstanceFleet } from './fixtures.js';
import { ArgoError } from '../../src/infra/argocd/errors.js';

let ran = 0;
registerTestCommand({
  name: 'test-mutate',
  summary: 'a mutating command for permission tests',
  usage: 'test-mutate',
  readOnly: false,
  run: async () => {
    ran++;
    return { ok: true, command: 'test-mutate', title: 'done', data: {}, blocks: [] };
  },
});
registerTestCommand({
  name: 'test-crash',
  summary: 'throws',
  usage: 'test-crash',
  readOnly: true,
  run: async () => {
    throw new TypeError("Cannot read properties of undefined (reading 'status')");
  },
});

const access = { groups: { oncall: ['U_ALICE', 'U_BOB'] }, operators: ['group:oncall'], admins: ['U_ADMIN'] };

describe('dispatch', () => {
  it('runs a read-only command for anyone when access.readers is empty', async () => {
    const reply = await dispatch('status', ctx(services(twoInstanceFleet(), access), 'U_ANYONE'));
    expect(reply.ok).toBe(true);
    expect(reply.command).toBe('status');
  });

  it('resolves aliases and is case-insensitive', async () => {
    expect((await dispatch('ST instance=west', ctx(services(twoInstanceFleet())))).command).toBe('status');
  });

  it('answers an unknown command with the closest commands', async () => {
    const reply = await dispatch('statsu prod', ctx(services(twoInstanceFleet())));
    expect(reply).toMatchObject({
      ok: false,
      command: 'statsu',
      error: { code: 'unknown_command', suggestions: ['status'] },
    });
    expect(renderText(reply)).toContain('Did you mean: status?');
  });

  it('answers an unknown target with close app, appset and cluster names', async () => {
    const reply = await dispatch('status prod-us3', ctx(services(twoInstanceFleet())));
    expect(reply.ok).toBe(false);
    expect(reply.error?.code).toBe('unknown_target');
    expect(reply.error?.suggestions).toEqual(expect.arrayContaining(['prod-us1 (cluster)', 'prod-us2 (cluster)']));
    // One ranking across kinds: the appset `auth` is closer to `aut` than its apps are.
    const closest = await dispatch('status aut', ctx(services(twoInstanceFleet())));
    expect(closest.error?.message).toBe('No app, ApplicationSet or cluster named `aut`.');
    expect(closest.error?.suggestions?.[0]).toBe('auth (appset)');
    const rollout = await dispatch('rollout auht', ctx(services(twoInstanceFleet())));
    expect(rollout.error).toMatchObject({ code: 'unknown_target', suggestions: expect.arrayContaining(['auth']) });
  });

  it("answers a malformed selector with invalid_selector and the parser's position", async () => {
    const reply = await dispatch('status -l "env in (prod"', ctx(services(twoInstanceFleet())));
    expect(reply.ok).toBe(false);
    expect(reply.error?.code).toBe('invalid_selector');
    expect(reply.error?.message).toMatch(/at \d+/);
  });

  it('answers a glob cluster filter that names nothing via the selector as unknown_target', async () => {
    const reply = await dispatch('status cluster=prod-us1,prod-xx', ctx(services(twoInstanceFleet())));
    expect(reply.error?.code).toBe('unknown_target');
    expect(reply.error?.message).not.toMatch(/Did you mean/);
  });

  it('answers a syntax error with a usage error', async () => {
    const reply = await dispatch('status selector="env=prod', ctx(services(twoInstanceFleet())));
    expect(reply.error).toMatchObject({ code: 'usage', message: expect.stringMatching(/unterminated/) });
  });

  it('refuses an unknown --flag rather than ignoring it, and lets --public through', async () => {
    const reply = await dispatch('status --prune', ctx(services(twoInstanceFleet())));
    expect(reply.error).toMatchObject({
      code: 'usage',
      message: expect.stringContaining('`status` does not take --prune'),
    });
    expect((await dispatch('status --public', ctx(services(twoInstanceFleet())))).ok).toBe(true);
  });

  it('refuses a mutating command to non-operators, naming who may run it', async () => {
    ran = 0;
    const recorded: Record<string, unknown>[] = [];
    const withAudit = {
      ...services(twoInstanceFleet(), access),
      audit: {
        record: async (e: Record<string, unknown>) => String(recorded.push(e)),
        read: async () => [],
        latest: async () => [],
      },
    };
    const reply = await dispatch('test-mutate', ctx(withAudit, 'U_EVE'));
    expect(reply.error?.code).toBe('forbidden');
    // The refused attempt is audited.
    expect(recorded).toEqual([
      expect.objectContaining({ kind: 'run.refused', who: 'U_EVE', target: 'test-mutate', result: 'forbidden' }),
    ]);
    expect(reply.error?.message).toMatch(/group:oncall \(U_ALICE, U_BOB\), U_ADMIN/);
    expect(ran).toBe(0);
    expect((await dispatch('test-mutate', ctx(services(twoInstanceFleet(), access), 'U_BOB'))).ok).toBe(true);
    expect((await dispatch('test-mutate', ctx(services(twoInstanceFleet(), access), 'U_ADMIN'))).ok).toBe(true);
    expect(ran).toBe(2);
  });

  it('says no one may operate when no operators or admins are configured', async () => {
    const reply = await dispatch('test-mutate', ctx(services(twoInstanceFleet()), 'U_BOB'));
    expect(reply.error?.code).toBe('forbidden');
    expect(reply.error?.message).toMatch(/access.operators and access.admins are empty/);
  });

  it('limits read-only commands to access.readers when configured (operators included)', async () => {
    const restricted = { ...access, readers: ['U_READER'] };
    expect((await dispatch('status', ctx(services(twoInstanceFleet(), restricted), 'U_EVE'))).error?.code).toBe(
      'forbidden',
    );
    expect((await dispatch('status', ctx(services(twoInstanceFleet(), restricted), 'U_READER'))).ok).toBe(true);
    expect((await dispatch('status', ctx(services(twoInstanceFleet(), restricted), 'U_ALICE'))).ok).toBe(true);
  });

  it('never throws: a crashing command becomes an internal_error reply', async () => {
    const reply = await dispatch('test-crash', ctx(services(twoInstanceFleet())));
    expect(reply).toMatchObject({ ok: false, command: 'test-crash', error: { code: 'internal_error' } });
    expect(reply.error?.message).toContain("reading 'status'");
  });

  it('answers an ambiguous app with the candidates in data and as buttons', async () => {
    const reply = await dispatch('app auth-prod-us1', ctx(services(twoInstanceFleet())));
    expect(reply.error?.code).toBe('ambiguous_target');
    expect((errorData(reply).matches as unknown[]).length).toBe(2);
    expect(renderText(reply)).toContain('→ try: app auth-prod-us1 instance=west');
  });

  it('maps Argo CD client errors to argocd_<kind>', async () => {
    registerTestCommand({
      name: 'test-argo',
      summary: 'fails like the client',
      usage: 'test-argo',
      readOnly: true,
      run: async () => {
        throw new ArgoError(
          'Argo CD is unreachable at https://east.example (ECONNREFUSED); check the URL and the network',
          { kind: 'network', instance: 'east' },
        );
      },
    });
    const reply = await dispatch('test-argo', ctx(services(twoInstanceFleet())));
    expect(reply.error).toMatchObject({
      code: 'argocd_network',
      message: expect.stringContaining('Argo CD instance east: Argo CD is unreachable'),
    });
  });
});

describe('help', () => {
  it('lists every command with its usage, the incident questions first', async () => {
    const reply = okAnswer(await dispatch('help', ctx(services(twoInstanceFleet()))), 'help');
    const names = 'commands' in reply.data ? reply.data.commands.map((c) => c.name) : [];
    expect(names.slice(0, 6)).toEqual(['status', 'app', 'rollout', 'plan', 'diagnose', 'clusters']);
    expect(names).toContain('help');
    expect(renderText(reply)).toContain('rollout APPSET [instance=X]');
  });

  it('shows one command with usage and examples, and suggests for a typo', async () => {
    const reply = await dispatch('help rollout', ctx(services(twoInstanceFleet())));
    expect(reply.data).toMatchObject({
      command: 'rollout',
      usage: 'rollout APPSET [instance=X] [detail=true]',
      readOnly: true,
    });
    expect(renderText(reply)).toContain('rollout progressive-infra');
    const typo = await dispatch('help rolout', ctx(services(twoInstanceFleet())));
    expect(typo.error).toMatchObject({ code: 'unknown_command', suggestions: ['rollout', 'rollouts'] });
  });

  it('answers empty text with the command list', async () => {
    expect((await dispatch('  ', ctx(services(twoInstanceFleet())))).command).toBe('help');
  });
});

describe('access helpers', () => {
  const config = { access: { groups: { sre: ['U1'] }, operators: ['group:sre'], admins: [], readers: [] } };
  it('matches users, groups and *', () => {
    expect(canOperate('U1', config)).toBe(true);
    expect(canOperate('U2', config)).toBe(false);
    expect(canOperate('U2', { access: { ...config.access, operators: ['*'] } })).toBe(true);
    expect(canRead('U2', config)).toBe(true);
  });
});

describe('mirror health', () => {
  it('says which instances the answer is missing when the mirror is not in sync', async () => {
    const fleet = Object.assign(twoInstanceFleet(), {
      health: () => [
        { instance: 'east', synced: true },
        { instance: 'west', synced: false, error: 'Cannot reach Argo CD instance west: ECONNREFUSED' },
      ],
    });
    const ok = await dispatch('status', ctx(services(fleet)));
    expect(ok.ok).toBe(true);
    expect(ok.blocks[1]).toEqual({
      kind: 'context',
      text: ':warning: Not in sync with Argo CD instance west (Cannot reach Argo CD instance west: ECONNREFUSED): this answer may be incomplete or stale.',
    });
    // The JSON of `ask --json` says it too: data only, no blocks.
    expect(ok.data.unsyncedInstances).toEqual([
      { instance: 'west', error: 'Cannot reach Argo CD instance west: ECONNREFUSED' },
    ]);
    expect(ok.data.warnings).toEqual([expect.stringContaining('Not in sync with Argo CD instance west')]);
    const missing = await dispatch('rollout platfrm', ctx(services(fleet)));
    expect(missing.error?.code).toBe('unknown_target');
    expect(missing.error?.message).toMatch(/Note: Not in sync with Argo CD instance west/);
    expect(
      (await dispatch('help', ctx(services(fleet)))).blocks.some(
        (b) => b.kind === 'context' && b.text.includes('Not in sync'),
      ),
    ).toBe(false);
  });
});

describe('suggestions', () => {
  const ask = (text: string) =>
    dispatch(text, { services: services(twoInstanceFleet()), user: 'U1', surface: 'terminal' });
  it('offers canonical command names, never an alias, and maps argocd verbs to the command that answers them', async () => {
    expect((await ask('get auth-prod-us1')).error?.suggestions).toEqual(['app']);
    expect((await ask('list')).error?.suggestions).toEqual(['status']);
    const typo = await ask('stat');
    expect(typo.error?.suggestions).toContain('status');
    for (const s of [...(typo.error?.suggestions ?? []), ...((await ask('dia')).error?.suggestions ?? [])])
      expect(['st', 'diag', 'why', 'ro', 'h', '?']).not.toContain(s);
  });

  it("maps the argocd CLI's operation verbs to rollback, terminate-op and refresh, which help explains", async () => {
    expect((await ask('terminate checkout-prod-eu')).error?.suggestions).toEqual(['terminate-op']);
    expect((await ask('hard-refresh checkout-prod-eu')).error?.suggestions).toEqual(['refresh']);
    expect((await ask('revert checkout-prod-eu 41')).error?.suggestions).toEqual(['rollback']);
    expect((await ask('rolback checkout-prod-eu')).error?.suggestions).toContain('rollback');
    const help = okAnswer(await ask('help rollback'), 'help');
    expect(help.data).toMatchObject({
      command: 'rollback',
      readOnly: false,
      usage: expect.stringContaining('rollback APP [ID]'),
    });
    expect('help' in help.data && help.data.help).toContain('auto-sync');
  });
});
