import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig, redactConfig } from '../../src/infra/config/load.js';
import { configSchema, parseDuration } from '../../src/infra/config/schema.js';

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
    const problems = problemsOf(valid.replace('http://127.0.0.1:8080', 'not a url'), {
      ARGOCD_TOKEN: 'a',
      SLACK_BOT_TOKEN: 'b',
    });
    expect(problems).toEqual([{ path: 'instances[1].url', message: 'expected a URL', line: 7 }]);
  });

  it('reports an unset environment variable at the field that uses it', () => {
    const problems = problemsOf(valid, { SLACK_BOT_TOKEN: 'b' });
    // Once, at the line of the token inside the list (not at the top of the list), with no "empty token" echo.
    expect(problems).toEqual([
      { path: 'instances[0].token', message: 'environment variable ARGOCD_TOKEN is not set', line: 5 },
    ]);
  });

  it('requires an app token in socket mode and a signing secret in http mode', () => {
    const socket = problemsOf(valid.replace('  appToken: xapp-1\n', ''), { ARGOCD_TOKEN: 'a', SLACK_BOT_TOKEN: 'b' });
    expect(socket.map((p) => p.path)).toEqual(['slack.appToken']);
    const http = problemsOf(valid.replace('mode: socket', 'mode: http'), { ARGOCD_TOKEN: 'a', SLACK_BOT_TOKEN: 'b' });
    expect(http.map((p) => p.path)).toEqual(['slack.signingSecret']);
  });

  it('rejects duplicate instance names and an empty instance list', () => {
    const dup = problemsOf(valid.replace('name: staging', 'name: prod'), { ARGOCD_TOKEN: 'a', SLACK_BOT_TOKEN: 'b' });
    expect(dup).toEqual([
      expect.objectContaining({ path: 'instances[1].name', message: 'duplicate instance name "prod"' }),
    ]);
    expect(problemsOf('instances: []')[0]).toMatchObject({
      path: 'instances',
      message: 'expected at least one Argo CD instance',
    });
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
    const text =
      valid.replace('https://cd.example.com/argocd', 'https://bot:pw-123@cd.example.com/argocd') +
      'redis:\n  url: redis://default:hunter2@redis.internal:6379\n';
    const printed = JSON.stringify(
      redactConfig(parseConfig(text, 'rollcall.yaml', { ARGOCD_TOKEN: 'a', SLACK_BOT_TOKEN: 'b' })),
    );
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

  describe('strict: a key rollcall does not know is an error, never ignored', () => {
    const base = 'instances:\n  - name: prod\n    url: https://cd.example.com\n    token: t\n';

    it('names a misspelt top-level section with its line and the section meant (diagnoze)', () => {
      expect(problemsOf(base + 'diagnoze:\n  stuckAfter: 15m\n')).toEqual([
        {
          path: 'diagnoze',
          message: 'unknown key "diagnoze" (did you mean diagnose?)',
          line: 5,
          suggestion: 'diagnose',
        },
      ]);
    });

    it('refuses redis.prefx rather than sharing the default prefix, at the line of the typo', () => {
      const problems = problemsOf(base + 'redis:\n  url: redis://127.0.0.1:6379\n  prefx: team-a\n');
      expect(problems).toEqual([
        { path: 'redis.prefx', message: 'unknown key "prefx" (did you mean prefix?)', line: 7, suggestion: 'prefix' },
      ]);
      const error = (() => {
        try {
          parseConfig(base + 'redis:\n  prefx: team-a\n', 'rollcall.yaml', {});
        } catch (e) {
          return e as ConfigError;
        }
      })();
      expect(error).toBeInstanceOf(ConfigError);
      expect(error!.suggestions).toEqual(['prefix']);
      expect(error!.message).toContain('redis.prefx: unknown key "prefx" (did you mean prefix?) (line 6)');
    });

    it('refuses alerts.holdDwn, and lists the keys of a section when nothing is close', () => {
      expect(problemsOf(base + 'alerts:\n  holdDwn: 30s\n  pager: yes\n')).toEqual([
        {
          path: 'alerts.holdDwn',
          message: 'unknown key "holdDwn" (did you mean holdDown?)',
          line: 6,
          suggestion: 'holdDown',
        },
        {
          path: 'alerts.pager',
          message: expect.stringMatching(
            /^unknown key "pager" \(known keys here: channel, stuckAfter, holdDown, .*rules\)$/,
          ),
          line: 7,
        },
      ]);
    });

    it('keeps sections keyed by names the team chooses open, and strict inside each value', () => {
      const text =
        base +
        '    tls: { insecureSkipVerfy: true }\n' +
        'access:\n  groups: { sre-emea: [U1], night-shift: [U2] }\n' +
        'alerts:\n  rules:\n    out-of-sync: { after: 1h, windw: 2m }\n' +
        'kube:\n  clusters:\n    - { name: prod-1, inCluster: true, contxt: prod }\n';
      expect(problemsOf(text)).toEqual([
        expect.objectContaining({
          path: 'instances[0].tls.insecureSkipVerfy',
          line: 5,
          suggestion: 'insecureSkipVerify',
        }),
        expect.objectContaining({ path: 'alerts.rules.out-of-sync.windw', line: 10, suggestion: 'window' }),
        expect.objectContaining({ path: 'kube.clusters[0].contxt', line: 13, suggestion: 'context' }),
      ]);
      const fixed = text
        .replace('insecureSkipVerfy', 'insecureSkipVerify')
        .replace('windw: 2m', 'channel: C1')
        .replace('contxt', 'context');
      expect(parseConfig(fixed, 'rollcall.yaml', {}).access.groups).toEqual({
        'sre-emea': ['U1'],
        'night-shift': ['U2'],
      });
    });

    it('lists every problem of a file in file order, not just the first', () => {
      const text =
        base + '    timout: 15s\ndiagnoze: {}\nalerts:\n  stuckAfter: 15\n  holdDwn: 30s\nredis:\n  prefx: a\n';
      expect(problemsOf(text).map((p) => [p.path, p.line])).toEqual([
        ['instances[0].timout', 5],
        ['diagnoze', 6],
        ['alerts.stuckAfter', 8],
        ['alerts.holdDwn', 9],
        ['redis.prefx', 11],
      ]);
    });
  });

  describe('durations in a config file need a unit, as in commands', () => {
    const base = 'instances:\n  - name: prod\n    url: https://cd.example.com\n    token: t\n';

    it('refuses a bare number and shows how to write it, wherever a duration goes', () => {
      const text =
        base +
        '    timeout: 15\n    rateLimit: { per: 1000 }\nalerts:\n  stuckAfter: 15\n  rules:\n    out-of-sync: { after: "90" }\nshutdown:\n  grace: 2.5\n';
      expect(problemsOf(text)).toEqual([
        {
          path: 'instances[0].timeout',
          message: '15 needs a unit: 15s, 15m or 15h (a bare number is not a duration)',
          line: 5,
        },
        {
          path: 'instances[0].rateLimit.per',
          message: '1000 needs a unit: 1000s, 1000m or 1000h (a bare number is not a duration)',
          line: 6,
        },
        {
          path: 'alerts.stuckAfter',
          message: '15 needs a unit: 15s, 15m or 15h (a bare number is not a duration)',
          line: 8,
        },
        {
          path: 'alerts.rules.out-of-sync.after',
          message: '90 needs a unit: 90s, 90m or 90h (a bare number is not a duration)',
          line: 10,
        },
        {
          path: 'shutdown.grace',
          message: '2.5 needs a unit: 2.5s, 2.5m or 2.5h (a bare number is not a duration)',
          line: 12,
        },
      ]);
    });

    it('reads a duration with its unit, and 0 (which needs none)', () => {
      const config = parseConfig(
        base + '    timeout: 15s\nalerts:\n  stuckAfter: 15m\n  holdDown: 0\nchanges:\n  retention: 1h30m\n',
        'rollcall.yaml',
        {},
      );
      expect([
        config.instances[0].timeout,
        config.alerts.stuckAfter,
        config.alerts.holdDown,
        config.changes.retention,
      ]).toEqual([15_000, 900_000, 0, 5_400_000]);
    });

    it('takes milliseconds only from code: a parsed config read back is the same config', () => {
      const config = parseConfig(base + 'alerts:\n  stuckAfter: 15m\n', 'rollcall.yaml', {});
      expect(configSchema.parse(config)).toEqual(config);
      expect(() => parseConfig(base + 'alerts:\n  stuckAfter: 900000\n', 'rollcall.yaml', {})).toThrow(
        /900000 needs a unit/,
      );
    });
  });
});
