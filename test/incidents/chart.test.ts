import { Resvg } from '@resvg/resvg-js';
import { afterEach, describe, expect, it } from 'vitest';
import { displayZoneOffsetMs, setDisplayTimeZone } from '../../src/core/format.js';
import {
  CHART_FONT,
  CHART_WIDTH_PX,
  placeMilestoneLabels,
  renderIncidentChart,
  type ChartInput,
} from '../../src/domain/incidents/chart.js';
import type { IncidentMetrics } from '../../src/domain/incidents/metrics.js';

/** The test's clock: every time below is minutes after it. */
const T0 = Date.UTC(2030, 0, 1, 9, 0);
const at = (minutes: number) => T0 + minutes * 60_000;
const iso = (minutes: number) => new Date(at(minutes)).toISOString();

type Track = ChartInput['tracks'][number];

function track(app: string, appSet: string, transitions: [number, string][] = [], initial = 'Healthy'): Track {
  return {
    instance: 'prod',
    app,
    cluster: `cluster-${app}`,
    appSet,
    initial,
    transitions: transitions.map(([m, to]) => ({ at: at(m), to })),
    failedOperation: false,
  };
}

function metrics(m: Partial<Record<keyof IncidentMetrics, number>>): IncidentMetrics {
  const t = (k: keyof IncidentMetrics) => (m[k] === undefined ? null : iso(m[k]));
  return {
    impactStart: t('impactStart'),
    detected: t('detected'),
    acknowledged: t('acknowledged'),
    mitigated: t('mitigated'),
    resolved: t('resolved'),
    ttd: null,
    tta: null,
    ttm: null,
    ttr: null,
    warnings: [],
  };
}

/** Width and height of the PNG from its IHDR chunk, after checking the signature. */
function pngSize(png: Buffer): { width: number; height: number } {
  expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  expect(png.toString('ascii', 12, 16)).toBe('IHDR');
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

/** The texts of one kind of mark in Vega's SVG (`role-legend-label`, `role-axis-title`, ...). */
function textsOf(svg: string, role: string): string[] {
  const groups = svg.split(`class="mark-text role-${role}"`).slice(1);
  return groups.flatMap((g) =>
    [...g.slice(0, g.indexOf('</g>')).matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]),
  );
}

interface Box {
  text: string;
  left: number;
  right: number;
  top: number;
  bottom: number;
}

/** Each milestone label's box as drawn: its anchor from the SVG, its extent measured by resvg in the chart's font. */
function milestoneBoxes(svg: string): Box[] {
  const labels = [
    ...svg.matchAll(
      /<text [^>]*text-anchor="(start|end)" transform="translate\(([\d.]+),([\d.]+)\)"[^>]*font-size="(\d+)px"[^>]*>((?:Impact|Detected|Acknowledged|Mitigated|Resolved) [^<]*)<\/text>/g,
    ),
  ];
  return labels.map(([, anchor, x, y, size, text]) => {
    const alone = `<svg xmlns="http://www.w3.org/2000/svg" width="2000" height="100"><text x="1000" y="50" font-family="${CHART_FONT}" font-size="${size}" font-weight="bold">${text}</text></svg>`;
    const box = new Resvg(alone, { font: { loadSystemFonts: true, defaultFontFamily: CHART_FONT } }).getBBox()!;
    const left = Number(x) + (anchor === 'start' ? box.x - 1000 : box.x - 1000 - box.width);
    return {
      text,
      left,
      right: left + box.width,
      top: Number(y) + box.y - 50,
      bottom: Number(y) + box.y - 50 + box.height,
    };
  });
}

const overlaps = (a: Box, b: Box) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;

describe('the incident chart', () => {
  afterEach(() => setDisplayTimeZone('UTC'));

  it('is a PNG 1600 px wide with a count axis, a time axis and a legend of only the states drawn', async () => {
    const tracks = [
      ...Array.from({ length: 12 }, (_, i) =>
        track(`auth-service-${i}`, 'auth-service', [
          [10 + i / 4, 'Degraded'],
          [40 + i, 'Healthy'],
        ]),
      ),
      ...Array.from({ length: 20 }, (_, i) => track(`payments-${i}`, 'payments')),
    ];
    const { svg, png, textDrawn } = await renderIncidentChart({
      title: 'INC-7: auth-service crash-looping',
      start: at(0),
      end: at(70),
      tracks,
      metrics: metrics({ impactStart: 10, detected: 14, acknowledged: 16, mitigated: 52, resolved: 60 }),
    });
    expect(pngSize(png).width).toBe(CHART_WIDTH_PX);
    expect(textDrawn, 'a font was found: the PNG has its labels').toBe(true);
    expect(png.length).toBeGreaterThan(20_000);
    // The whole scope counts the apps not Healthy (12 of 32 would be a sliver); each ApplicationSet all its apps.
    expect(textsOf(svg, 'axis-title').sort()).toEqual(['Apps', 'Apps not Healthy', 'Time (UTC)']);
    // Minutes of the test's clock on the time axis, read in the display time zone (UTC here).
    expect(textsOf(svg, 'axis-label')).toEqual(expect.arrayContaining(['09:00', '09:30', '10:00']));
    expect(textsOf(svg, 'legend-label')).toEqual(['Degraded', 'Healthy']);
    // The whole scope, then the one ApplicationSet that had unhealthy apps; payments never did.
    const titles = textsOf(svg, 'title-text');
    expect(titles.sort()).toEqual([
      'All apps in scope · 32 apps · at most 12 unhealthy at once',
      'ApplicationSet auth-service · 12 apps · at most 12 unhealthy at once',
      'INC-7: auth-service crash-looping',
    ]);
  }, 30_000);

  it('reads its times in the display time zone, as the rest of rollcall does', async () => {
    setDisplayTimeZone('Asia/Tokyo');
    const { svg } = await renderIncidentChart({
      title: 'INC-10: auth',
      start: at(0),
      end: at(60),
      tracks: [track('a', 'auth', [[10, 'Degraded']])],
      metrics: metrics({ impactStart: 10, detected: 14 }),
    });
    // 09:00 UTC is 18:00 in Tokyo.
    expect(textsOf(svg, 'axis-title')).toContain('Time (Asia/Tokyo)');
    expect(textsOf(svg, 'axis-label')).toEqual(expect.arrayContaining(['18:00', '18:30', '19:00']));
    expect(milestoneBoxes(svg).map((b) => b.text)).toEqual(['Impact 18:10', 'Detected 18:14']);
  }, 30_000);

  it('shifts by the offset of each instant: Berlin is an hour ahead in January, two in July', () => {
    setDisplayTimeZone('Europe/Berlin');
    expect(displayZoneOffsetMs(new Date(Date.UTC(2030, 0, 15)))).toBe(3_600_000);
    expect(displayZoneOffsetMs(new Date(Date.UTC(2030, 6, 15)))).toBe(7_200_000);
    setDisplayTimeZone('America/St_Johns');
    expect(displayZoneOffsetMs(new Date(Date.UTC(2030, 0, 15)))).toBe(-(3 * 3_600_000 + 30 * 60_000));
  });

  it('adds Progressing and Missing to the legend once an app is in them', async () => {
    const { svg } = await renderIncidentChart({
      title: 'INC-8: rollout',
      start: at(0),
      end: at(30),
      tracks: [
        track('a', 'web', [
          [5, 'Progressing'],
          [8, 'Missing'],
          [20, 'Healthy'],
        ]),
        track('b', 'web'),
      ],
      metrics: metrics({ detected: 6 }),
    });
    expect(textsOf(svg, 'legend-label')).toEqual(['Missing', 'Progressing', 'Healthy']);
  }, 30_000);

  it('labels milestones that fall within a minute of each other without any two labels overlapping', async () => {
    const tracks = Array.from({ length: 5 }, (_, i) =>
      track(`api-${i}`, 'api', [
        [20, 'Degraded'],
        [59.5, 'Healthy'],
      ]),
    );
    // Detected and acknowledged 20 s apart mid-chart; mitigated and resolved 30 s apart at the right edge.
    const cases = [
      metrics({ impactStart: 20, detected: 30, acknowledged: 30.33, mitigated: 59.5, resolved: 60 }),
      metrics({ impactStart: 59.2, detected: 59.4, acknowledged: 59.6, mitigated: 59.8, resolved: 60 }),
      metrics({ impactStart: 0, detected: 0.2, acknowledged: 0.4, mitigated: 0.6, resolved: 0.8 }),
    ];
    for (const m of cases) {
      const { svg } = await renderIncidentChart({ title: 'INC-9: api', start: at(0), end: at(60), tracks, metrics: m });
      const boxes = milestoneBoxes(svg);
      expect(boxes.map((b) => b.text.split(' ')[0]).sort()).toEqual(
        ['Acknowledged', 'Detected', 'Impact', 'Mitigated', 'Resolved'].sort(),
      );
      for (const a of boxes)
        for (const b of boxes) if (a !== b) expect(overlaps(a, b), `${a.text} over ${b.text}`).toBe(false);
      // Nothing is cut off at the image's edges.
      const width = Number(/<svg[^>]* width="([\d.]+)"/.exec(svg)![1]);
      for (const b of boxes) expect(b.left >= 0 && b.right <= width, b.text).toBe(true);
    }
  }, 60_000);
});

describe('placeMilestoneLabels', () => {
  const ms = (key: keyof IncidentMetrics, minute: number) => ({
    key,
    text: `${key} 10:00`,
    color: '#000',
    at: at(minute),
  });

  it('stacks labels a second apart into separate lanes, and keeps far-apart labels on the first lane', () => {
    const placed = placeMilestoneLabels(
      [ms('impactStart', 1), ms('detected', 30), ms('acknowledged', 30.02), ms('resolved', 59.99)],
      at(0),
      at(60),
      1000,
    );
    const lane = Object.fromEntries(placed.map((p) => [p.key, p.lane]));
    expect(lane.impactStart).toBe(0);
    expect(lane.detected).not.toBe(lane.acknowledged);
    expect(placed.find((p) => p.key === 'resolved')).toMatchObject({ align: 'right' });
    expect(placed.find((p) => p.key === 'resolved')!.to).toBeLessThanOrEqual(1000);
  });

  it('places five milestones at the same instant at the right edge, each on its own lane', () => {
    const keys = ['impactStart', 'detected', 'acknowledged', 'mitigated', 'resolved'] as const;
    const placed = placeMilestoneLabels(
      keys.map((k) => ms(k, 60)),
      at(0),
      at(60),
      1000,
    );
    expect(new Set(placed.map((p) => p.lane)).size).toBe(5);
    expect(placed.every((p) => p.align === 'right')).toBe(true);
  });
});
