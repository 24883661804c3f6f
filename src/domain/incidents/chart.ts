import type { healthTracks, IncidentMetrics } from './metrics.js';
import { healthTracksByGroup, type GroupTracks } from './series.js';
import { Raster, type Rgb } from './png.js';

const COLORS: Record<string, Rgb> = {
  Healthy: [46, 160, 67],
  Progressing: [56, 132, 220],
  Suspended: [150, 150, 150],
  Degraded: [214, 48, 49],
  Missing: [236, 140, 30],
  Unknown: [190, 190, 190],
};
const STACK = ['Healthy', 'Progressing', 'Suspended', 'Unknown', 'Missing', 'Degraded'];
const INK: Rgb = [40, 40, 40];
const GRID: Rgb = [225, 225, 225];
const MILESTONES: { key: keyof IncidentMetrics; label: string; color: Rgb }[] = [
  { key: 'impactStart', label: 'IMPACT', color: [214, 48, 49] },
  { key: 'detected', label: 'DETECTED', color: [120, 60, 200] },
  { key: 'acknowledged', label: 'ACK', color: [60, 60, 60] },
  { key: 'mitigated', label: 'MITIGATED', color: [30, 130, 60] },
  { key: 'resolved', label: 'RESOLVED', color: [20, 90, 160] },
];

export interface ChartInput {
  title: string;
  start: number;
  end: number;
  tracks: ReturnType<typeof healthTracks>;
  metrics: IncidentMetrics;
  /** Panels beyond the whole scope: ApplicationSets (or clusters) that were unhealthy. @defaultValue 6 */
  maxGroups?: number;
}

const WIDTH = 1000;
const LEFT = 170;
const RIGHT = 20;
const PANEL = 70;
const GAP = 22;
const TOP = 58;

/**
 * Apps by health over the incident: one panel for the whole scope, then one per ApplicationSet
 * (or cluster, for apps no ApplicationSet owns) that had unhealthy apps, each column a stack of
 * the apps' health at that moment; milestones drawn as labelled vertical lines.
 */
export function renderIncidentChart(input: ChartInput): Buffer {
  const groups = healthTracksByGroup(input.tracks, input.start, input.end, input.maxGroups ?? 6);
  const height = TOP + (groups.length || 1) * (PANEL + GAP) + 30 + 10 * MILESTONES.length;
  const img = new Raster(WIDTH, height);
  const plotW = WIDTH - LEFT - RIGHT;
  const span = Math.max(1, input.end - input.start);
  const xOf = (t: number) => LEFT + Math.round(((t - input.start) / span) * (plotW - 1));

  img.text(10, 10, input.title.slice(0, 80), INK, 2);
  let lx = 10;
  for (const state of ['Healthy', 'Progressing', 'Degraded', 'Missing', 'Unknown']) {
    img.fillRect(lx, 36, 10, 10, COLORS[state]);
    lx += 14 + img.text(lx + 14, 38, state, INK) + 10;
  }

  groups.forEach((g, i) => drawPanel(img, g, TOP + i * (PANEL + GAP), plotW, input, xOf));
  const axisY = TOP + (groups.length || 1) * (PANEL + GAP) - GAP + 4;
  for (let k = 0; k <= 6; k++) {
    const t = input.start + (span * k) / 6;
    const x = xOf(t);
    img.vline(x, axisY, axisY + 3, INK);
    const label = new Date(t).toISOString().slice(11, 16);
    img.text(Math.min(WIDTH - 34, Math.max(LEFT - 10, x - 15)), axisY + 6, label, INK);
  }
  img.text(LEFT, axisY + 20, 'UTC', INK);

  // Milestones over every panel; a label goes to the first row where it overwrites no other label
  // (mitigated and resolved are often a minute apart on an hour-wide axis).
  const rowsEnd: number[] = [];
  for (const m of MILESTONES) {
    const at = input.metrics[m.key];
    if (typeof at !== 'string') continue;
    const t = Date.parse(at);
    if (Number.isNaN(t) || t < input.start || t > input.end) continue;
    const x = xOf(t);
    img.vline(x, TOP - 4, axisY, m.color, 3);
    img.vline(x + 1, TOP - 4, axisY, m.color, 3);
    const width = Raster.textWidth(m.label);
    const lx = Math.max(LEFT + 30, Math.min(WIDTH - width - 2, x + 3));
    let row = rowsEnd.findIndex((end) => end < lx);
    if (row === -1) row = rowsEnd.length;
    rowsEnd[row] = lx + width + 4;
    img.text(lx, axisY + 20 + 10 * row, m.label, m.color);
  }
  return img.toPng();
}

function drawPanel(
  img: Raster,
  g: GroupTracks,
  y: number,
  plotW: number,
  input: ChartInput,
  xOf: (t: number) => number,
): void {
  img.text(8, y + 4, g.label.slice(0, 26), INK);
  img.text(8, y + 16, `${g.total} apps`, [110, 110, 110]);
  img.text(8, y + 28, `peak ${g.peakUnhealthy} unhealthy`, g.peakUnhealthy ? COLORS.Degraded : [110, 110, 110]);
  img.fillRect(LEFT, y, plotW, PANEL, [248, 248, 248]);
  img.hline(LEFT, LEFT + plotW - 1, y + PANEL, GRID);
  const columns = plotW;
  const span = input.end - input.start;
  for (let c = 0; c < columns; c++) {
    const t = input.start + (span * c) / Math.max(1, columns - 1);
    const counts = g.countsAt(t);
    const total = Math.max(1, g.total);
    let yy = y + PANEL;
    for (const state of STACK) {
      const n = counts.get(state) ?? 0;
      if (!n) continue;
      // At least a pixel for any unhealthy app: one Degraded app among 540 must still show.
      const h = Math.max(state === 'Healthy' ? 0 : 1, Math.round((n / total) * PANEL));
      img.fillRect(xOf(t), yy - h, 1, h, COLORS[state] ?? COLORS.Unknown);
      yy -= h;
    }
  }
}
