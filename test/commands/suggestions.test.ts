import { afterEach, describe, expect, it } from 'vitest';
import { dispatch } from '../../src/commands/index.js';
import type { CommandContext } from '../../src/commands/registry.js';
import { findAction } from '../../src/commands/registry.js';
import { renderBlocks } from '../../src/views/blocks.js';
import { renderText } from '../../src/views/text.js';
import { allText } from '../slack/limits.js';
import { makeApp } from '../runbooks/fake-argo.js';
import { harness, type Harness } from '../runbooks/harness.js';
import { ctx, services, twoInstanceFleet } from './fixtures.js';

const occurrences = (text: string, word: string) => text.split(word).length - 1;

describe('a mistyped pause target', () => {
  it('gets the same suggestions `rollout` gives, before any run exists', async () => {
    const s = services(twoInstanceFleet(), { operators: ['U_ONCALL'] });
    const pause = await dispatch('pause auht', ctx(s));
    expect(pause.error).toMatchObject({
      code: 'unknown_target',
      message: 'No ApplicationSet or app named `auht`: nothing to pause.',
    });
    expect(pause.error?.suggestions?.[0]).toBe('auth');
    const rollout = await dispatch('rollout auht', ctx(s));
    expect(rollout.error?.suggestions?.[0]).toBe(pause.error?.suggestions?.[0]);
    // A glob that matches nothing is answered the same way.
    expect((await dispatch('pause auht-*', ctx(s))).error).toMatchObject({
      code: 'unknown_target',
      suggestions: expect.arrayContaining(['auth']),
    });
  });
});

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const clusters = ['prod-eu1', 'prod-eu2', 'prod-us1'];
const fleet = () => clusters.flatMap((c) => [makeApp(`auth-config-${c}`, c), makeApp(`auth-service-${c}`, c)]);
const op = (): CommandContext => ({ services: h!.services, user: 'U_OP', surface: 'terminal', channel: 'terminal' });

describe('runbook params typed wrong', () => {
  it('offers an enum value only when it is close to what was typed', async () => {
    h = await harness(fleet());
    const far = await dispatch('sync auth-config-* gate=green onFailure=explode', op());
    expect(far.error?.code).toBe('invalid_params');
    expect(far.error?.suggestions).toBeUndefined();
    expect(renderText(far)).not.toMatch(/did you mean/i);
    const near = await dispatch('sync auth-config-* gate=helthy', op());
    expect(near.error?.suggestions).toEqual(['gate=healthy']);
    expect(occurrences(renderText(near), 'healthy?')).toBe(1);
    expect(await h.engine.runs!.list(10)).toEqual([]);
  });

  it('prints the suggestion for an unknown param once', async () => {
    h = await harness(fleet());
    const reply = await dispatch('sync auth-config-* prun=true', op());
    expect(reply.error).toMatchObject({ code: 'invalid_params', suggestions: ['prune=true'] });
    const text = renderText(reply);
    expect(occurrences(text, 'prune=true')).toBe(1);
    expect(text).toContain('Did you mean: prune=true?');
  });

  it('suggests a runbook only when one is close', async () => {
    h = await harness(fleet());
    expect((await dispatch('run bulk-synk selector=auth-*', op())).error).toMatchObject({
      code: 'unknown_runbook',
      suggestions: ['bulk-sync'],
    });
    const far = await dispatch('run explode selector=auth-*', op());
    expect(far.error?.code).toBe('unknown_runbook');
    expect(far.error?.suggestions).toBeUndefined();
  });
});

describe('a wave pattern that matches nothing', () => {
  it('is refused before the preview, naming the pattern, with a close pattern when there is one', async () => {
    h = await harness(fleet());
    const none = await dispatch('sync auth-* waves=a-*;zz-*', op());
    expect(none.ok).toBe(false);
    expect(none.error).toMatchObject({
      code: 'invalid_params',
      message: expect.stringMatching(/^wave patterns `a-\*`, `zz-\*` match none of the 6 selected apps/),
    });
    expect(none.error?.suggestions).toBeUndefined();
    const typo = await dispatch('sync auth-* waves=auth-confg-*;auth-service-*', op());
    expect(typo.error).toMatchObject({
      code: 'invalid_params',
      message: expect.stringContaining('`auth-confg-*` matches none'),
      suggestions: ['auth-config-*'],
    });
    // One glob of a wave's list counts on its own.
    const inList = await dispatch('sync auth-* waves=auth-config-*,auth-service-prod-eu3', op());
    expect(inList.error?.suggestions).toEqual(expect.arrayContaining(['auth-service-prod-eu1']));
    // Nothing was created to confirm.
    expect(await h.engine.runs!.list(10)).toEqual([]);
    expect((await dispatch('sync auth-* waves=auth-config-*;auth-service-*', op())).ok).toBe(true);
  });
});

describe('an unknown run id', () => {
  it('reads the same in Slack and in the terminal, from `runs show`, `runs confirm` and the Confirm button, with the closest recent id', async () => {
    h = await harness(fleet());
    const preview = await dispatch('sync auth-config-*', op());
    const runId = (preview.data as { runId: string }).runId;
    const typo = `${runId.slice(0, -1)}${runId.endsWith('z') ? 'y' : 'z'}`;
    const slack: CommandContext = { services: h.services, user: 'U_OP', surface: 'slack', channel: 'C_OPS' };
    const answers = [
      await dispatch(`runs show ${typo}`, op()),
      await dispatch(`runs show ${typo}`, slack),
      await dispatch(`runs confirm ${typo}`, op()),
      (await findAction('run.confirm')!.run(typo, slack))!,
      (await findAction('run.abort')!.run(typo, slack))!,
    ];
    const message = `No run ${typo}: \`runs\` lists recent runs.`;
    for (const reply of answers) expect(reply.error).toEqual({ code: 'run_not_found', message, suggestions: [runId] });
    // Slack renders the Reply as blocks, the terminal as text: the same words, each in its own markup.
    expect(allText(renderBlocks(answers[3]).blocks)).toBe(`:x: ${message}\nDid you mean: \`${runId}\`?`);
    expect(renderText(answers[0])).toBe(`✖ No run ${typo}: runs lists recent runs.\n\nDid you mean: ${runId}?\n`);
    expect(renderText(answers[3])).toBe(renderText(answers[0]));
  });
});

describe('`freeze list`', () => {
  it('points at `frozen` when no app or ApplicationSet has that name, and starts nothing', async () => {
    h = await harness(fleet());
    for (const text of ['freeze list', 'unfreeze show', 'freeze status']) {
      const reply = await dispatch(text, op());
      expect(reply.error, text).toMatchObject({ code: 'unknown_target', suggestions: ['frozen'] });
      expect(reply.error?.message).toMatch(
        /^No app or ApplicationSet named "(list|show|status)" to (un)?freeze; what is frozen is listed by `frozen`\.$/,
      );
    }
    expect(await h.engine.runs!.list(10)).toEqual([]);
  });

  it('goes to the freeze runbook when an app has that name', async () => {
    h = await harness([...fleet(), makeApp('list', 'prod-eu1')]);
    const reply = await dispatch('freeze list', op());
    // This harness records no freezes: the runbook itself refuses, which only a freeze of the app "list" reaches.
    expect(reply.error).toMatchObject({ code: 'unavailable', message: expect.stringMatching(/^freezing needs Redis/) });
    expect(reply.error?.suggestions).toBeUndefined();
  });
});
