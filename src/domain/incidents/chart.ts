import type { TopLevelSpec } from 'vega-lite';
import { absoluteTime, clockTime, displayZone, displayZoneOffsetMs } from '../../core/format.js';
import type { healthTracks, IncidentMetrics } from './metrics.js';
import { healthTracksByGroup, type GroupTracks } from './series.js';

/** The PNG's width: a slide, a wiki page or a Slack preview at full size. */
export const CHART_WIDTH_PX = 1600;

/** Health states bottom-up in each stack: the unhealthy apps sit on the axis, where their count reads directly. */
const HEALTH: { state: string; color: string }[] = [
  { state: 'Degraded', color: '#d62728' },
  { state: 'Missing', color: '#ff7f0e' },
  { state: 'Progressing', color: '#1f77b4' },
  { state: 'Suspended', color: '#9467bd' },
  { state: 'Unknown', color: '#9a9a9a' },
  { state: 'Healthy', color: '#9fd39a' },
];

const MILESTONES: { key: keyof IncidentMetrics; label: string; color: string }[] = [
  { key: 'impactStart', label: 'Impact', color: '#b2182b' },
  { key: 'detected', label: 'Detected', color: '#6a3d9a' },
  { key: 'acknowledged', label: 'Acknowledged', color: '#444444' },
  { key: 'mitigated', label: 'Mitigated', color: '#1b7837' },
  { key: 'resolved', label: 'Resolved', color: '#2166ac' },
];

/**
 * The font the chart is laid out for and rendered in (the Docker image installs it: font-dejavu). Label
 * placement estimates widths from its average advance, which resvg then honours.
 */
export const CHART_FONT = 'DejaVu Sans';
const FONT_STACK = `${CHART_FONT}, Verdana, Arial, sans-serif`;
/** DejaVu Sans' widest common glyphs are about 0.7 em; its average in a word about 0.6. */
const EM_PER_CHAR = 0.66;

const PLOT_WIDTH = 1280;
const ALL_HEIGHT = 190;
const GROUP_HEIGHT = 110;
const LABEL_SIZE = 15;
const LANE_HEIGHT = 22;
const LABEL_GAP = 6;
/** More points than this per panel are sampled evenly: the PNG has about as many columns. */
const MAX_POINTS = 800;

export interface ChartInput {
  title: string;
  start: number;
  end: number;
  tracks: ReturnType<typeof healthTracks>;
  metrics: IncidentMetrics;
  /** Panels beyond the whole scope: ApplicationSets (or clusters) that were unhealthy. @defaultValue 6 */
  maxGroups?: number;
}

export interface MilestoneLabel {
  key: keyof IncidentMetrics;
  text: string;
  color: string;
  at: number;
  /** Pixels from the plot's left edge. */
  x: number;
  /** 0 is the row nearest the plot. */
  lane: number;
  align: 'left' | 'right';
  /** The pixels the text covers, left to right. */
  from: number;
  to: number;
}

/**
 * Lanes for milestone labels so that no label covers another, nor (where the labels allow it) another milestone's
 * line: milestones a minute apart on an hour-wide axis are a few pixels apart. A label sits right of its line
 * (left of it near the right edge); a line runs from its label down to the plot, crossing the lanes below its
 * own, so of two close milestones the one whose label covers the other's line goes higher: left-aligned labels
 * are placed right to left, right-aligned ones left to right, each in the lowest lane that is clear.
 */
export function placeMilestoneLabels(
  milestones: { key: keyof IncidentMetrics; text: string; color: string; at: number }[],
  start: number,
  end: number,
  plotWidth: number,
  fontSize = LABEL_SIZE,
): MilestoneLabel[] {
  const span = Math.max(1, end - start);
  const sized = milestones.map((m) => {
    const x = ((m.at - start) / span) * plotWidth;
    const width = m.text.length * fontSize * EM_PER_CHAR;
    const align: 'left' | 'right' = x + LABEL_GAP + width > plotWidth ? 'right' : 'left';
    const from = align === 'left' ? x + LABEL_GAP : x - LABEL_GAP - width;
    return { ...m, x, align, from, to: from + width, lane: 0 };
  });
  const order = [
    ...sized.filter((m) => m.align === 'right').sort((a, b) => a.x - b.x),
    ...sized.filter((m) => m.align === 'left').sort((a, b) => b.x - a.x),
  ];
  const placed: MilestoneLabel[] = [];
  const within = (px: number, l: MilestoneLabel) => px >= l.from - 2 && px <= l.to + 2;
  for (const m of order) {
    const textClash = (lane: number) =>
      placed.some((p) => p.lane === lane && p.from < m.to + LABEL_GAP && m.from < p.to + LABEL_GAP);
    const lineClash = (lane: number) =>
      placed.some((p) => (p.lane > lane && within(p.x, m)) || (p.lane < lane && within(m.x, p)));
    const lanes = Array.from({ length: placed.length + 1 }, (_, i) => i);
    // Text never overlaps; a line through a label is the last resort (two labels that each cover the other's line).
    m.lane = lanes.find((l) => !textClash(l) && !lineClash(l)) ?? lanes.find((l) => !textClash(l))!;
    placed.push(m);
  }
  return placed.sort((a, b) => a.at - b.at);
}

interface SeriesRow {
  panel: string;
  t: number;
  state: string;
  rank: number;
  apps: number;
}

function pointsOf(g: GroupTracks, start: number, end: number): number[] {
  const all = [start, ...g.changes.filter((t) => t > start && t < end), end];
  if (all.length <= MAX_POINTS) return all;
  return Array.from({ length: MAX_POINTS }, (_, i) => start + ((end - start) * i) / (MAX_POINTS - 1));
}

/** The chart's time axis reads in the display time zone: instants shifted by its offset on a UTC scale. */
const shown = (t: number) => t + displayZoneOffsetMs(new Date(t));

function panelTitle(g: GroupTracks): string {
  const apps = `${g.total} app${g.total === 1 ? '' : 's'}`;
  return `${g.label} · ${apps}${g.peakUnhealthy ? ` · at most ${g.peakUnhealthy} unhealthy at once` : ''}`;
}

type TimeEncoding = { field: 't'; type: 'temporal'; scale: { type: 'utc'; domain: number[] } };
type ColorEncoding = { field: 'state'; type: 'nominal'; title: string; scale: { domain: string[]; range: string[] } };

/** Each band's apps by health at the window's ends and at every change between (sampled past MAX_POINTS). */
function seriesRows(groups: GroupTracks[], start: number, end: number): { rows: SeriesRow[]; present: Set<string> } {
  const rows: SeriesRow[] = [];
  const present = new Set<string>();
  for (const g of groups) {
    for (const t of pointsOf(g, start, end)) {
      const counts = g.countsAt(t);
      for (const [state, apps] of counts) if (apps) present.add(KNOWN.has(state) ? state : 'Unknown');
      HEALTH.forEach(({ state }, rank) => {
        const apps = state === 'Unknown' ? unknownCount(counts) : (counts.get(state) ?? 0);
        rows.push({ panel: g.label, t: shown(t), state, rank, apps });
      });
    }
  }
  return { rows, present };
}

/** How a band counts: every app up to the group's size, or (the whole scope) only the apps not Healthy. */
interface BandScale {
  withoutHealthy: boolean;
  max: number;
}

/**
 * The whole scope's band, above the ApplicationSets' own, counts the apps that were not Healthy: 12 Degraded
 * apps of 540 are a 4-pixel sliver on a scale to 540, and the bands below show each group's share anyway.
 */
function bandScale(g: GroupTracks, index: number, rows: SeriesRow[]): BandScale {
  if (index > 0 || !rows.some((r) => r.panel !== g.label)) return { withoutHealthy: false, max: g.total };
  const notHealthy = new Map<number, number>();
  for (const r of rows)
    if (r.panel === g.label && r.state !== 'Healthy') notHealthy.set(r.t, (notHealthy.get(r.t) ?? 0) + r.apps);
  return { withoutHealthy: true, max: Math.max(1, ...notHealthy.values()) };
}

/** One band: the group's apps stacked by health, its own count axis, the milestones' lines across it. */
function healthPanel(
  g: GroupTracks,
  band: BandScale,
  place: { first: boolean; last: boolean },
  x: TimeEncoding,
  color: ColorEncoding,
) {
  const { first, last } = place;
  const panel = [{ filter: { field: 'panel', equal: g.label } }];
  return {
    title: { text: panelTitle(g), anchor: 'start' as const, fontSize: first ? 17 : 15, fontWeight: 'bold' as const },
    width: PLOT_WIDTH,
    height: first ? ALL_HEIGHT : GROUP_HEIGHT,
    layer: [
      {
        data: { name: 'series' },
        transform: band.withoutHealthy ? [...panel, { filter: "datum.state !== 'Healthy'" }] : panel,
        mark: { type: 'area' as const, interpolate: 'step-after' as const },
        encoding: {
          x: { ...x, axis: { title: last ? `Time (${displayZone()})` : null, format: '%H:%M', tickCount: 12 } },
          y: {
            field: 'apps',
            type: 'quantitative' as const,
            stack: 'zero' as const,
            title: band.withoutHealthy ? 'Apps not Healthy' : 'Apps',
            scale: { domain: [0, Math.max(1, band.max)], nice: band.withoutHealthy },
            axis: { tickMinStep: 1, format: 'd', tickCount: 4 },
          },
          color,
          order: { field: 'rank', type: 'quantitative' as const },
        },
      },
      {
        data: { name: 'milestones' },
        mark: { type: 'rule' as const, strokeWidth: 2, strokeDash: [6, 4] },
        encoding: { x, color: { field: 'color', type: 'nominal' as const, scale: null } },
      },
    ],
  };
}

/** The milestones' labels in their lanes above the bands, each with the top of its line. */
function milestoneStrip(height: number, x: TimeEncoding) {
  const unaxed = { ...x, axis: null };
  const colorField = { field: 'color', type: 'nominal' as const, scale: null };
  return {
    width: PLOT_WIDTH,
    height,
    view: { stroke: null },
    data: { name: 'milestones' },
    layer: [
      {
        mark: { type: 'rule' as const, strokeWidth: 2, strokeDash: [6, 4] },
        encoding: {
          x: unaxed,
          y: { field: 'ruleTop', type: 'quantitative' as const, scale: null },
          y2: { value: height },
          color: colorField,
        },
      },
      ...(['left', 'right'] as const).map((align) => ({
        transform: [{ filter: { field: 'align', equal: align } }],
        mark: {
          type: 'text' as const,
          align,
          dx: align === 'left' ? LABEL_GAP : -LABEL_GAP,
          fontSize: LABEL_SIZE,
          fontWeight: 'bold' as const,
        },
        encoding: {
          x: unaxed,
          y: { field: 'textY', type: 'quantitative' as const, scale: null },
          text: { field: 'text', type: 'nominal' as const },
          color: colorField,
        },
      })),
    ],
  };
}

/** The milestones inside the window, labelled with their time of day and placed in lanes. */
function milestoneLabels(input: ChartInput): MilestoneLabel[] {
  const { start, end } = input;
  const inWindow = MILESTONES.flatMap((m) => {
    const iso = input.metrics[m.key];
    const at = typeof iso === 'string' ? Date.parse(iso) : NaN;
    if (!(at >= start && at <= end)) return [];
    return [{ key: m.key, color: m.color, at, text: `${m.label} ${clockTime(new Date(at), { seconds: false })}` }];
  });
  return placeMilestoneLabels(inWindow, start, end, PLOT_WIDTH);
}

/**
 * The Vega-Lite spec of the incident chart: apps by health over the window as stacked step areas, the whole
 * scope on top and one band per ApplicationSet (or cluster) that had unhealthy apps below, each with its own
 * count axis; the milestones as lines through every band, labelled once above them.
 */
export function incidentChartSpec(input: ChartInput): TopLevelSpec {
  const { start, end } = input;
  let groups = healthTracksByGroup(input.tracks, start, end, input.maxGroups ?? 6);
  // One ApplicationSet that holds the whole scope: its band is the scope's, drawn once, under its name.
  if (groups.length === 2 && groups[1].total === groups[0].total) groups = [groups[1]];
  const { rows, present } = seriesRows(groups, start, end);
  // Only the states some app was in: the legend lists what is drawn.
  const health = HEALTH.filter((h) => present.has(h.state));
  const labels = milestoneLabels(input);
  const stripHeight = labels.reduce((n, l) => Math.max(n, l.lane + 1), 0) * LANE_HEIGHT + 4;
  const milestones = labels.map((l) => ({
    ...l,
    t: shown(l.at),
    textY: stripHeight - 6 - l.lane * LANE_HEIGHT,
    // From the label's cap height down: the line runs beside its own label into the plot.
    ruleTop: stripHeight - 6 - l.lane * LANE_HEIGHT - LABEL_SIZE * 0.75,
  }));
  const x: TimeEncoding = { field: 't', type: 'temporal', scale: { type: 'utc', domain: [shown(start), shown(end)] } };
  const color: ColorEncoding = {
    field: 'state',
    type: 'nominal',
    title: 'Health',
    scale: { domain: health.map((h) => h.state), range: health.map((h) => h.color) },
  };
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: {
      text: input.title,
      subtitle: `Apps by health since ${absoluteTime(new Date(start).toISOString())}${groups.length > 1 ? ': the apps not Healthy in the whole scope, then each ApplicationSet that had unhealthy apps' : ''}`,
      anchor: 'start',
      fontSize: 22,
      subtitleFontSize: 15,
      subtitleColor: '#555555',
      offset: 14,
    },
    background: 'white',
    padding: 16,
    datasets: { series: rows.filter((r) => present.has(r.state)), milestones },
    vconcat: [
      ...(labels.length ? [milestoneStrip(stripHeight, x)] : []),
      ...groups.map((g, i) =>
        healthPanel(g, bandScale(g, i, rows), { first: i === 0, last: i === groups.length - 1 }, x, color),
      ),
    ],
    resolve: { scale: { x: 'shared' } },
    config: {
      font: FONT_STACK,
      view: { stroke: '#cccccc' },
      axis: {
        labelFontSize: 14,
        titleFontSize: 15,
        labelColor: '#333333',
        titleColor: '#333333',
        gridColor: '#eeeeee',
      },
      legend: { labelFontSize: 15, titleFontSize: 15, symbolSize: 220, symbolType: 'square', orient: 'right' },
      concat: { spacing: 26 },
    },
  } as TopLevelSpec;
}

const KNOWN = new Set(HEALTH.map((h) => h.state));

/** Apps in a state Argo CD may add later are drawn as Unknown rather than dropped from the count. */
function unknownCount(counts: Map<string, number>): number {
  let n = 0;
  for (const [state, apps] of counts) if (state === 'Unknown' || !KNOWN.has(state)) n += apps;
  return n;
}

export interface RenderedChart {
  svg: string;
  png: Buffer;
  /** False when no font could be loaded: the PNG has its areas and lines but no text. */
  textDrawn: boolean;
}

/** A word in the chart's font: resvg draws text only in a font it found, and measures nothing otherwise. */
const FONT_PROBE = `<svg xmlns="http://www.w3.org/2000/svg" width="60" height="30"><text x="4" y="20" font-family="${FONT_STACK}" font-size="15">Apps</text></svg>`;

/**
 * The chart as SVG and as a PNG CHART_WIDTH_PX wide. Vega, Vega-Lite and resvg load here, on the first report,
 * not with the commands: an answer that draws nothing does not pay for them.
 */
export async function renderIncidentChart(input: ChartInput): Promise<RenderedChart> {
  const [vl, vega, { Resvg }] = await Promise.all([import('vega-lite'), import('vega'), import('@resvg/resvg-js')]);
  const view = new vega.View(vega.parse(vl.compile(incidentChartSpec(input)).spec), { renderer: 'none' });
  try {
    const svg = await view.toSVG();
    const font = { loadSystemFonts: true, defaultFontFamily: CHART_FONT };
    const png = new Resvg(svg, { fitTo: { mode: 'width', value: CHART_WIDTH_PX }, background: 'white', font })
      .render()
      .asPng();
    return { svg, png, textDrawn: new Resvg(FONT_PROBE, { font }).getBBox() !== undefined };
  } finally {
    view.finalize();
  }
}
