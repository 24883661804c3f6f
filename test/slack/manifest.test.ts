import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { BOT_SCOPES, WEB_API_METHODS } from '../../src/surfaces/slack/scopes.js';

const root = path.resolve(import.meta.dirname, '../..');
const manifest = parse(readFileSync(path.join(root, 'deploy/slack/manifest.yaml'), 'utf8'));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    return statSync(p).isDirectory() ? sourceFiles(p) : p.endsWith('.ts') ? [p] : [];
  });
}

describe('deploy/slack/manifest.yaml', () => {
  it('asks for exactly the bot scopes the code needs', () => {
    expect([...manifest.oauth_config.scopes.bot].sort()).toEqual([...BOT_SCOPES].sort());
    expect(manifest.oauth_config.scopes.user).toBeUndefined();
  });

  it('calls no Web API method that scopes.ts does not know (so a new call cannot miss its scope)', () => {
    const called = new Set<string>();
    for (const file of [
      ...sourceFiles(path.join(root, 'src/surfaces/slack')),
      path.join(root, 'src/views/blocks.ts'),
    ]) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(
        /client\.(chat|views|conversations|users|files|reactions|apps|auth|usergroups)\.(\w+)\(/g,
      ))
        called.add(`${m[1]}.${m[2]}`);
    }
    expect(called.size).toBeGreaterThan(3);
    for (const method of called)
      expect(Object.keys(WEB_API_METHODS), `${method} is called in src/slack`).toContain(method);
  });

  it('declares /argo, interactivity, the Home tab and app_home_opened on the same request URL', () => {
    const url = 'https://rollcall.example.com/slack/events';
    expect(manifest.features.slash_commands).toEqual([
      expect.objectContaining({ command: '/argo', url, should_escape: false }),
    ]);
    expect(manifest.features.slash_commands[0].usage_hint.length).toBeGreaterThan(10);
    expect(manifest.settings.interactivity).toEqual({ is_enabled: true, request_url: url });
    expect(manifest.features.app_home).toMatchObject({ home_tab_enabled: true, messages_tab_enabled: false });
    expect(manifest.settings.event_subscriptions).toEqual({ request_url: url, bot_events: ['app_home_opened'] });
    expect(manifest.settings.socket_mode_enabled).toBe(false);
    expect(manifest._metadata.major_version).toBe(1);
  });
});
