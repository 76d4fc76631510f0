// The latency charts: inline SVG bar charts, each followed by its data as a table, for pod start-up
// per runtime and CRI calls per method, runtime and caller.
import type { CriMethodLatency, ReportModel, RuntimeLatency } from '../model.js';
import { byId, h, s } from './dom.js';
import { formatMs } from './format.js';

/** Okabe–Ito colours: distinguishable with the common colour-vision deficiencies. */
const SERIES_COLOURS = ['#0072B2', '#D55E00', '#009E73', '#CC79A7', '#E69F00', '#56B4E9'];

/** One colour per runtime, in the report's runtime order; the summary's swatches use it too. */
export function runtimeColours(runtimes: ReportModel['runtimes']): Map<string, string> {
  return new Map(runtimes.map((r, i) => [r.name, SERIES_COLOURS[i % SERIES_COLOURS.length]!]));
}

/** p50/p90/p99 shades of one runtime colour: same hue, lighter to darker. */
function shade(hex: string, step: number): string {
  const mix = [0.45, 0.2, 0][step] ?? 0;
  const channel = (i: number) => {
    const c = Number.parseInt(hex.slice(1 + i * 2, 3 + i * 2), 16);
    return Math.round(c + (255 - c) * mix)
      .toString(16)
      .padStart(2, '0');
  };
  return `#${channel(0)}${channel(1)}${channel(2)}`;
}

/** Axis ticks at 1, 2 or 5 times a power of ten, covering [0, max]. */
export function niceTicks(max: number, target = 5): number[] {
  if (!(max > 0)) return [0];
  const raw = max / target;
  const pow = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 5, 10].find((m) => m * pow >= raw) ?? 10) * pow;
  const ticks: number[] = [];
  for (let v = 0; v <= max + step / 2; v += step) ticks.push(Number(v.toPrecision(12)));
  if (ticks[ticks.length - 1]! < max) ticks.push(ticks[ticks.length - 1]! + step);
  return ticks;
}

/** Powers of ten covering [min, max], for a logarithmic axis. */
export function logTicks(min: number, max: number): number[] {
  const lo = Math.floor(Math.log10(Math.max(min, 1e-3)));
  const hi = Math.max(lo + 1, Math.ceil(Math.log10(Math.max(max, 1e-3))));
  const ticks: number[] = [];
  for (let e = lo; e <= hi; e++) ticks.push(Number((10 ** e).toPrecision(1)));
  return ticks;
}

interface BarRow {
  group: string;
  label: string;
  colour: string;
  /** Bar length. */
  value: number;
  /** Optional whisker end (e.g. p99 beyond a p50 bar) and tick (p90). */
  whisker?: number;
  tick?: number;
  text: string;
}

/**
 * A horizontal bar chart with rows grouped under labels. A log axis suits latencies that span
 * microsecond fakes and multi-second timeouts in one chart.
 */
function barChart(
  title: string,
  desc: string,
  rows: BarRow[],
  axisLabel: string,
  scale: 'linear' | 'log' = 'linear',
): SVGElement {
  const labelW = 190;
  const textW = 200;
  const plotW = 460;
  const rowH = 20;
  const groupGap = 14;
  const top = 8;
  const groups = [...new Set(rows.map((r) => r.group))];
  const height = top + rows.length * rowH + groups.length * groupGap + 36;
  const max = Math.max(...rows.map((r) => r.whisker ?? r.value), 0);
  const ticks = scale === 'log' ? logTicks(Math.min(...rows.map((r) => r.value)), max) : niceTicks(max);
  const lo = ticks[0]!;
  const hi = ticks[ticks.length - 1]! || 1;
  const x =
    scale === 'log'
      ? (v: number) =>
          labelW +
          ((Math.log10(Math.max(v, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) * plotW
      : (v: number) => labelW + (v / hi) * plotW;
  const width = labelW + plotW + textW;
  const svg = s('svg', {
    viewBox: `0 0 ${width} ${height}`,
    role: 'img',
    class: 'chart',
    'aria-label': `${title}. ${desc}`,
  });
  svg.append(s('title', {}, title));
  const plotBottom = height - 30;
  for (const t of ticks) {
    svg.append(s('line', { x1: x(t), x2: x(t), y1: top, y2: plotBottom, class: 'grid' }));
    svg.append(
      s('text', { x: x(t), y: plotBottom + 14, 'text-anchor': 'middle', class: 'tick' }, formatTick(t)),
    );
  }
  svg.append(
    s(
      'text',
      { x: labelW + plotW / 2, y: plotBottom + 28, 'text-anchor': 'middle', class: 'axis' },
      axisLabel,
    ),
  );
  let y = top;
  for (const group of groups) {
    y += groupGap / 2;
    const members = rows.filter((r) => r.group === group);
    svg.append(
      s('text', { x: 0, y: y + (members.length * rowH) / 2 + 4, class: 'group-label' }, truncate(group, 26)),
    );
    for (const r of members) {
      const cy = y + rowH / 2;
      svg.append(
        s('rect', {
          x: labelW,
          y: y + 3,
          width: Math.max(1, x(r.value) - labelW),
          height: rowH - 6,
          fill: r.colour,
          rx: 2,
        }),
      );
      if (r.whisker !== undefined) {
        svg.append(
          s('line', { x1: x(r.value), x2: x(r.whisker), y1: cy, y2: cy, stroke: r.colour, class: 'whisker' }),
        );
        svg.append(
          s('line', {
            x1: x(r.whisker),
            x2: x(r.whisker),
            y1: cy - 5,
            y2: cy + 5,
            stroke: r.colour,
            class: 'whisker',
          }),
        );
      }
      if (r.tick !== undefined) {
        svg.append(
          s('line', {
            x1: x(r.tick),
            x2: x(r.tick),
            y1: cy - 4,
            y2: cy + 4,
            stroke: r.colour,
            class: 'whisker',
          }),
        );
      }
      const end = Math.max(x(r.whisker ?? r.value), x(r.value));
      svg.append(s('text', { x: end + 6, y: cy + 4, class: 'value' }, `${r.label} ${r.text}`));
      y += rowH;
    }
    y += groupGap / 2;
  }
  return svg;
}

function formatTick(v: number): string {
  return v >= 1000 ? `${Number((v / 1000).toPrecision(3))} s` : `${Number(v.toPrecision(3))} ms`;
}

function truncate(text: string, n: number): string {
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}

/** The chart's numbers, for screen readers and for copying. */
function dataTable(caption: string, head: string[], rows: (string | number)[][]): HTMLElement {
  return h(
    'details',
    { class: 'data' },
    h('summary', {}, `${caption}: data table`),
    h(
      'table',
      { class: 'compact' },
      h('caption', { class: 'visually-hidden' }, caption),
      h('thead', {}, h('tr', {}, ...head.map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, ...rows.map((r) => h('tr', {}, ...r.map((v) => h('td', {}, v))))),
    ),
  );
}

/** Draws both charts, limited to one runtime when the runtime filter is set. */
export function renderCharts(
  model: Pick<ReportModel, 'podStartup' | 'criLatency'>,
  colours: Map<string, string>,
  runtime: string | undefined,
): void {
  const keep = <T extends { runtime: string }>(rows: T[]) =>
    rows.filter((r) => !runtime || r.runtime === runtime);
  renderPodStartup(keep(model.podStartup), colours);
  renderCriLatency(keep(model.criLatency), colours);
}

function renderPodStartup(rows: RuntimeLatency[], colours: Map<string, string>) {
  const container = byId('chart-pod-startup');
  if (rows.length === 0) {
    container.replaceChildren(h('p', { class: 'empty' }, 'No pod start-up latencies were recorded.'));
    return;
  }
  const bars: BarRow[] = rows.flatMap((r) =>
    (['p50', 'p90', 'p99'] as const).map((p, i) => ({
      group: r.runtime,
      label: p,
      colour: shade(colours.get(r.runtime)!, i),
      value: r[p],
      text: formatMs(r[p]),
    })),
  );
  container.replaceChildren(
    barChart(
      'Pod start-up latency by runtime',
      rows
        .map((r) => `${r.runtime}: p50 ${formatMs(r.p50)}, p90 ${formatMs(r.p90)}, p99 ${formatMs(r.p99)}`)
        .join('; '),
      bars,
      'creation to all containers started',
    ),
    dataTable(
      'Pod start-up latency',
      ['Runtime', 'Pods', 'min', 'p50', 'p90', 'p99', 'max'],
      rows.map((r) => [
        r.runtime,
        r.count,
        formatMs(r.min),
        formatMs(r.p50),
        formatMs(r.p90),
        formatMs(r.p99),
        formatMs(r.max),
      ]),
    ),
  );
}

function renderCriLatency(rows: CriMethodLatency[], colours: Map<string, string>) {
  const container = byId('chart-cri');
  if (rows.length === 0) {
    container.replaceChildren(h('p', { class: 'empty' }, 'No CRI calls were recorded.'));
    return;
  }
  // The caller is in every label: colour (the runtime's, lighter for the harness) only repeats it.
  const bars: BarRow[] = rows.map((r) => ({
    group: r.method,
    label: `${r.runtime} · ${r.source}`,
    colour: shade(colours.get(r.runtime) ?? '#666666', r.source === 'harness' ? 0 : 2),
    value: r.p50,
    tick: r.p90,
    whisker: r.p99,
    text: `p50 ${formatMs(r.p50)} · p99 ${formatMs(r.p99)}`,
  }));
  const legend = h(
    'ul',
    { class: 'legend' },
    ...[...new Set(rows.map((r) => r.runtime))].map((rt) => {
      const sw = h('span', { class: 'swatch', 'aria-hidden': 'true' });
      sw.style.background = colours.get(rt) ?? '#666';
      return h('li', {}, sw, rt);
    }),
    h('li', { class: 'legend-note' }, 'bar: p50 · tick: p90 · whisker end: p99'),
    h(
      'li',
      { class: 'legend-note' },
      'agent: our node agent’s calls to its runtime · harness: the harness’s own checks',
    ),
  );
  container.replaceChildren(
    legend,
    barChart(
      'CRI call latency by method and runtime',
      `${rows.length} method, runtime and caller rows; bars show p50, whiskers p99`,
      bars,
      'latency (log scale)',
      'log',
    ),
    dataTable(
      'CRI call latency',
      ['Method', 'Runtime', 'Caller', 'Calls', 'Errors', 'p50', 'p90', 'p99', 'max'],
      rows.map((r) => [
        r.method,
        r.runtime,
        r.source,
        r.count,
        r.errors,
        formatMs(r.p50),
        formatMs(r.p90),
        formatMs(r.p99),
        formatMs(r.max),
      ]),
    ),
  );
}
