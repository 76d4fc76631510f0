// The latency charts: inline SVG bar charts, each followed by its data as a table, for pod start-up
// per runtime, its breakdown into stages, and CRI calls per method, runtime and caller.
import type { CriMethodLatency, ReportModel, RuntimeLatency, RuntimeStartupBreakdown } from '../model.js';
import { byId, h, headRow, s } from './dom.js';
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
  xAxis(svg, { ticks, x, top, plotBottom, labelW, plotW }, axisLabel);
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
      headRow(...head),
      h('tbody', {}, ...rows.map((r) => h('tr', {}, ...r.map((v) => h('td', {}, v))))),
    ),
  );
}

/** Draws the charts, limited to one runtime when the runtime filter is set. */
export function renderCharts(
  model: Pick<ReportModel, 'podStartup' | 'startupBreakdown' | 'criLatency'>,
  colours: Map<string, string>,
  runtime: string | undefined,
): void {
  const keep = <T extends { runtime: string }>(rows: T[]) =>
    rows.filter((r) => !runtime || r.runtime === runtime);
  renderPodStartup(keep(model.podStartup), colours);
  renderStartupBreakdown(keep(model.startupBreakdown));
  renderCriLatency(keep(model.criLatency), colours);
}

/** One colour per start-up stage (Okabe–Ito, then Tol's indigo and a grey for the ninth). */
const STAGE_COLOURS = [
  '#56B4E9',
  '#0072B2',
  '#332288',
  '#CC79A7',
  '#E69F00',
  '#F0E442',
  '#009E73',
  '#D55E00',
  '#888888',
];

/**
 * One stacked bar per runtime: each segment is a stage's p50, in order; a tick marks the p50 of
 * the whole start-up (medians do not add up, so the bar's end and the tick differ a little) and a
 * dashed line the runtime's bare floor, when the run measured one.
 */
function renderStartupBreakdown(rows: RuntimeStartupBreakdown[]) {
  const container = byId('chart-startup-breakdown');
  if (rows.length === 0) {
    container.replaceChildren(h('p', { class: 'empty' }, 'No start-up breakdown was recorded.'));
    return;
  }
  const stages: string[] = rows.find((r) => r.stages.length > 0)?.stages.map((st) => st.stage) ?? [];
  const colour = (stage: string) => STAGE_COLOURS[stages.indexOf(stage) % STAGE_COLOURS.length]!;
  const legend = h(
    'ul',
    { class: 'legend' },
    ...stages.map((stage) => {
      const sw = h('span', { class: 'swatch', 'aria-hidden': 'true' });
      sw.style.background = colour(stage);
      return h('li', {}, sw, stage);
    }),
    h('li', { class: 'legend-note' }, 'segments: each stage’s p50 · tick: total p50 · dashed: bare floor'),
  );
  // The same plot area as the other charts, so their time axes line up.
  const labelW = 190;
  const plotW = 460;
  const textW = 200;
  const rowH = 28;
  const top = 8;
  const plotBottom = top + rows.length * rowH + 4;
  const height = plotBottom + 30;
  const ends = rows.map((r) => Math.max(stageSum(r), r.total.p50, r.floor?.singleMs ?? 0));
  const ticks = niceTicks(Math.max(...ends, 1));
  const hi = ticks[ticks.length - 1]! || 1;
  const x = (v: number) => labelW + (v / hi) * plotW;
  const svg = s('svg', {
    viewBox: `0 0 ${labelW + plotW + textW} ${height}`,
    role: 'img',
    class: 'chart',
    'aria-label': `Pod start-up by stage. ${rows.map(describeBreakdown).join('; ')}`,
  });
  svg.append(s('title', {}, 'Pod start-up by stage'));
  xAxis(svg, { ticks, x, top, plotBottom, labelW, plotW }, 'API create to status written (p50 per stage)');
  for (const [i, r] of rows.entries()) {
    const y = top + i * rowH;
    const cy = y + rowH / 2;
    svg.append(s('text', { x: 0, y: cy + 4, class: 'group-label' }, truncate(r.runtime, 26)));
    let at = 0;
    for (const st of r.stages) {
      if (st.p50 > 0)
        svg.append(
          s(
            'rect',
            {
              x: x(at),
              y: y + 5,
              width: Math.max(0.5, x(at + st.p50) - x(at)),
              height: rowH - 10,
              fill: colour(st.stage),
            },
            s('title', {}, `${r.runtime} ${st.stage}: p50 ${formatMs(st.p50)}`),
          ),
        );
      at += st.p50;
    }
    if (r.pods > 0)
      svg.append(
        s('line', {
          x1: x(r.total.p50),
          x2: x(r.total.p50),
          y1: y + 1,
          y2: y + rowH - 1,
          stroke: '#1f2328',
          class: 'whisker',
        }),
      );
    if (r.floor)
      svg.append(
        s('line', {
          x1: x(r.floor.singleMs),
          x2: x(r.floor.singleMs),
          y1: y + 1,
          y2: y + rowH - 1,
          stroke: '#1f2328',
          'stroke-dasharray': '3 2',
          class: 'whisker',
        }),
      );
    const text = r.pods > 0 ? `p50 ${formatMs(r.total.p50)} · ${r.pods} pods` : 'no pods';
    svg.append(s('text', { x: Math.max(x(at), x(r.total.p50)) + 6, y: cy + 4, class: 'value' }, text));
  }
  const targets = rows.flatMap((r) => {
    if (!r.target) return [];
    const burst = r.floor?.burst;
    const context = burst ? ` (${burst.pods} bare pods at once: p50 ${formatMs(burst.p50)})` : '';
    return [h('li', {}, `${targetText(r.runtime, r.target)}${context}`)];
  });
  container.replaceChildren(
    legend,
    svg,
    targets.length > 0
      ? h('ul', { class: 'targets' }, ...targets)
      : h(
          'p',
          { class: 'empty' },
          'No bare floor was measured in this run (the startup scenario measures it).',
        ),
    dataTable(
      'Pod start-up by stage',
      ['Runtime', 'Pods', 'Stage', 'p50', 'p90', 'p99'],
      rows.flatMap((r) => [
        ...r.stages.map((st) => [
          r.runtime,
          r.pods,
          st.stage,
          formatMs(st.p50),
          formatMs(st.p90),
          formatMs(st.p99),
        ]),
        ...(r.pods > 0
          ? [
              [
                r.runtime,
                r.pods,
                'total',
                formatMs(r.total.p50),
                formatMs(r.total.p90),
                formatMs(r.total.p99),
              ],
            ]
          : []),
        ...(r.floor
          ? [
              [r.runtime, 1, 'bare floor (CRI, one pod)', formatMs(r.floor.singleMs), '', ''],
              ...(r.floor.burst
                ? [
                    [
                      r.runtime,
                      r.floor.burst.pods,
                      'bare floor (CRI, at once)',
                      formatMs(r.floor.burst.p50),
                      formatMs(r.floor.burst.p90),
                      formatMs(r.floor.burst.p99),
                    ],
                  ]
                : []),
            ]
          : []),
      ]),
    ),
  );
}

const stageSum = (r: RuntimeStartupBreakdown) => r.stages.reduce((a, st) => a + st.p50, 0);

function describeBreakdown(r: RuntimeStartupBreakdown): string {
  const stages = r.stages.map((st) => `${st.stage} ${formatMs(st.p50)}`).join(', ');
  const floor = r.floor ? `, bare floor ${formatMs(r.floor.singleMs)}` : '';
  return `${r.runtime}: ${r.pods} pods, total p50 ${formatMs(r.total.p50)}${stages ? ` (${stages})` : ''}${floor}`;
}

/** Issue 21's target in words, met or not. */
export function targetText(runtime: string, t: NonNullable<RuntimeStartupBreakdown['target']>): string {
  return `${runtime}: pod start-up p50 ${formatMs(t.p50Ms)} is ${t.ratio}× the bare floor ${formatMs(t.floorMs)}; target ≤ ${t.limit}×: ${t.met ? 'met' : 'not met'}`;
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

/** Grid lines and tick labels at `ticks`, and the axis label centred under the plot. */
function xAxis(
  svg: SVGElement,
  g: {
    ticks: number[];
    x: (v: number) => number;
    top: number;
    plotBottom: number;
    labelW: number;
    plotW: number;
  },
  label: string,
): void {
  const { ticks, x, top, plotBottom, labelW, plotW } = g;
  for (const t of ticks) {
    svg.append(s('line', { x1: x(t), x2: x(t), y1: top, y2: plotBottom, class: 'grid' }));
    svg.append(
      s('text', { x: x(t), y: plotBottom + 14, 'text-anchor': 'middle', class: 'tick' }, formatTick(t)),
    );
  }
  svg.append(
    s('text', { x: labelW + plotW / 2, y: plotBottom + 28, 'text-anchor': 'middle', class: 'axis' }, label),
  );
}
