import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig, redactConfig } from '../../src/config/load.js';
import { parseDuration } from '../../src/config/schema.js';

const valid = `
instances:
  - name: prod
    url: https://cd.example.com/argocd
    token: \${ARGOCD_TOKEN}
  - name: staging
    url: http://127.0.0.1:8080
    token: literal-token
    uiUrl: https://staging.example.com
slack:
  mode: socket
  botToken: \${SLACK_BOT_TOKEN}
  appToken: xapp-1
diagnose:
  stuckAfter: 20m
`;

function problemsOf(text: string, env: NodeJS.ProcessEnv = {}) {
  try {
    parseConfig(text, 'rollcall.yaml', env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('config', () => {
  it('interpolates ${ENV} secrets and applies defaults', () => {
    const config = parseConfig(valid, 'rollcall.yaml', { ARGOCD_TOKEN: 'secret-1', SLACK_BOT_TOKEN: 'xoxb-2' });
    expect(config.instances[0].token).toBe('secret-1');
    expect(config.instances[0].url).toBe('https://cd.example.com/argocd');
    expect(config.instances[0].timeout).toBe(15_000);
    expect(config.instances[1].uiUrl).toBe('https://staging.example.com');
    expect(config.slack?.botToken).toBe('xoxb-2');
    expect(config.diagnose.stuckAfter).toBe(20 * 60_000);
    expect(config.redis.prefix).toBe('rollcall');
  });

  it('names the path and the problem of an invalid URL', () => {
    const problems = problemsOf(valid.replace('http://127.0.0.1:8080', 'not a url'), { ARGOCD_TOKEN: 'a', SLACK_BOT_TOKEN: 'b' });
    expect(problems).toEqual([{ path: 'instances[1].url', message: 'expected a URL', line: 7 }]);
  });

  it('reports an unset environment variable at the field that uses it', () => {
    const problems = problemsOf(valid, { SLACK_BOT_TOKEN: 'b' });
    // Once, at the line of the token inside the list (not at the top of the list), with no "empty token" echo.
    expect(problems).toEqual([{ path: 'instances[0].token', message: 'environment variable ARGOCD_TOKEN is not set', line: 5 }]);
  });

  it('requires an app token in socket mode and a signing secret in http mode', () => {
    const socket = problemsOf(valid.replace('  appToken: xapp-1\n', ''), { ARGOCD_TOKEN: 'a', SLACK_BOT_TOKEN: 'b' });
    expect(socket.map((p) => p.path)).toEqual(['slack.appToken']);
    const http = problemsOf(valid.replace('mode: socket', 'mode: http'), { ARGOCD_TOKEN: 'a', SLACK_BOT_TOKEN: 'b' });
    expect(http.map((p) => p.path)).toEqual(['slack.signingSecret']);
  });

  it('rejects duplicate instance names and an empty instance list', () => {
    const dup = problemsOf(valid.replace('name: staging', 'name: prod'), { ARGOCD_TOKEN: 'a', SLACK_BOT_TOKEN: 'b' });
    expect(dup).toEqual([expect.objectContaining({ path: 'instances[1].name', message: 'duplicate instance name "prod"' })]);
    expect(problemsOf('instances: []')[0]).toMatchObject({ path: 'instances', message: 'expected at least one Argo CD instance' });
  });

  it('reports YAML syntax errors with their line', () => {
    const problems = problemsOf('instances:\n  - name: [unclosed\n');
    expect(problems[0].message).toMatch(/^YAML: /);
    expect(problems[0].line).toBeGreaterThan(0);
  });

  it('treats an interpolated secret as data, not YAML', () => {
    const config = parseConfig(valid, 'rollcall.yaml', { ARGOCD_TOKEN: 'a: [b, {c', SLACK_BOT_TOKEN: 'b' });
    expect(config.instances[0].token).toBe('a: [b, {c');
  });

  it('masks every secret when printed', () => {
    const config = parseConfig(valid, 'rollcall.yaml', { ARGOCD_TOKEN: 'secret-1', SLACK_BOT_TOKEN: 'xoxb-2' });
    const printed = JSON.stringify(redactConfig(config));
    expect(printed).not.toContain('secret-1');
    expect(printed).not.toContain('xoxb-2');
    expect(printed).not.toContain('literal-token');
    expect(printed).toContain('https://cd.example.com/argocd');
  });

  it('masks a password inside a URL when printed', () => {
    const text = valid.replace('https://cd.example.com/argocd', 'https://bot:pw-123@cd.example.com/argocd') + 'redis:\n  url: redis://default:hunter2@redis.internal:6379\n';
    const printed = JSON.stringify(redactConfig(parseConfig(text, 'rollcall.yaml', { ARGOCD_TOKEN: 'a', SLACK_BOT_TOKEN: 'b' })));
    expect(printed).not.toContain('hunter2');
    expect(printed).not.toContain('pw-123');
    expect(printed).toContain('redis://default:***@redis.internal:6379');
  });

  it('parses durations people write', () => {
    expect(parseDuration('90s')).toBe(90_000);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    // A bare number has no unit: refused rather than guessed as seconds.
    expect(parseDuration('15')).toBeUndefined();
    expect(parseDuration('15 minutes')).toBeUndefined();
    expect(parseDuration('')).toBeUndefined();
  });
});
