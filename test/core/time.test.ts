import { afterEach, describe, expect, it } from 'vitest';
import { configSchema } from '../../src/infra/config/schema.js';
import { absoluteTime, setDisplayTimeZone, typedDuration, when } from '../../src/core/format.js';
import { auditReply, runListReply } from '../../src/domain/runbooks/replies.js';
import { renderText } from '../../src/views/text.js';

const now = new Date('2026-12-03T16:25:00Z');

afterEach(() => setDisplayTimeZone('UTC'));

describe('one way to show time', () => {
  it('shows the age first and the absolute time behind it, in the configured time zone', () => {
    expect(when('2026-12-03T14:19:59.454Z', now)).toBe('2h 5m ago (3 Dec, 14:19 UTC)');
    setDisplayTimeZone('Europe/Berlin');
    expect(when('2026-12-03T14:19:59.454Z', now)).toBe('2h 5m ago (3 Dec, 15:19 CET)');
    expect(absoluteTime('2026-12-03T14:19:59Z')).toBe('3 Dec, 15:19 CET');
  });

  it('refuses an unknown time zone in the config', () => {
    expect(() =>
      configSchema.parse({
        instances: [{ name: 'a', url: 'http://a', token: 't' }],
        display: { timeZone: 'Mars/Olympus' },
      }),
    ).toThrow(/IANA time zone/);
  });

  it('prints no raw ISO timestamps in runs and the audit log', () => {
    const at = new Date(Date.now() - 3 * 60_000).toISOString();
    const runs = renderText(
      runListReply([
        {
          id: 'r-1',
          runbook: 'bulk-sync',
          status: 'succeeded',
          requester: 'alice',
          createdAt: at,
          params: {},
        } as never,
      ]),
    );
    const audit = renderText(auditReply([{ at, who: 'alice', kind: 'run.start', runId: 'r-1' } as never]));
    for (const text of [runs, audit]) {
      expect(text).not.toMatch(/\d{4}-\d\d-\d\dT\d\d:\d\d/);
      expect(text).toMatch(/3m ago \(\d+ \w{3}, \d\d:\d\d UTC\)/);
    }
  });

  it('writes durations exactly, in one canonical spelling from the largest unit down', () => {
    expect([600_000, 90_000, 5_400_000, 250, 86_400_000, 93_784_005].map(typedDuration)).toEqual([
      '10m',
      '1m30s',
      '1h30m',
      '250ms',
      '1d',
      '1d2h3m4s5ms',
    ]);
  });
});
