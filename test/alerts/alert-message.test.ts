import { afterEach, describe, expect, it } from 'vitest';
import { alertJson, alertReply } from '../../src/commands/alerts.js';
import { setDisplayTimeZone } from '../../src/core/format.js';
import type { AlertRecord } from '../../src/domain/alerts/lifecycle.js';
import { renderText } from '../../src/views/text.js';

const NOW = new Date('2026-12-05T18:17:22Z');
const minutesBefore = (m: number) => new Date(NOW.getTime() - m * 60_000).toISOString();

function record(extra: Partial<AlertRecord> = {}): AlertRecord {
  return {
    id: 'a-k3m9x',
    key: 'degraded-after-sync|prod|appset:auth-service||7da8a4c|',
    rule: 'degraded-after-sync',
    severity: 'critical',
    instance: 'prod',
    appSet: 'auth-service',
    revision: '7da8a4c19c10f40fcec8e51feb73a1edb4acad3a',
    apps: ['auth-service-prod-eu-west-1', 'auth-service-prod-us-east-1'],
    since: minutesBefore(41),
    summary: '2 apps of appset auth-service Degraded after a successful sync of 7da8a4c.',
    details: [],
    state: 'firing',
    firstSeenAt: minutesBefore(40),
    firedAt: minutesBefore(40),
    updatedAt: minutesBefore(40),
    flaps: 0,
    version: 1,
    rendered: 1,
    notifiedApps: 2,
    ...extra,
  };
}

afterEach(() => setDisplayTimeZone('UTC'));

describe('the alert message shows times as the rest of the product does', () => {
  it('says since when relative first, then the time in display.timeZone, never a raw ISO time', () => {
    setDisplayTimeZone('Europe/Berlin');
    const text = renderText(alertReply(record(), NOW));
    expect(text).toMatch(/Began: +41m ago \(5 Dec, 18:36 CET\)/);
    expect(text).toContain('Firing since 40m ago (5 Dec, 18:37 CET)');
    expect(text).not.toMatch(/\d{4}-\d\d-\d\dT\d\d:\d\d/);
  });

  it('says a clearing alert is clearing, since when and when it resolves, and lists it so', () => {
    const clearing = record({
      clearedAt: minutesBefore(1),
      resolvesAt: new Date(NOW.getTime() + 60_000).toISOString(),
    });
    const text = renderText(alertReply(clearing, NOW));
    expect(text).toContain(
      'Clearing: not seen since 1m ago (5 Dec, 18:16 UTC); resolves at 5 Dec, 18:18 UTC unless it comes back.',
    );
    expect(text).not.toContain('Firing');
    expect(alertJson(clearing)).toMatchObject({
      state: 'firing',
      clearedAt: clearing.clearedAt,
      resolvesAt: clearing.resolvesAt,
    });
  });
});
