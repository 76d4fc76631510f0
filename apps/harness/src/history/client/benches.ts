// The benchmarks over time: one small line chart per benchmark figure (a point per bench run, the
// target dashed, a missed target drawn as a hollow red ring), each with its data as a table.
import { niceTicks } from '../../report/client/charts.js';
import { byId, h, headRow, s } from '../../report/client/dom.js';
import type { BenchSeries } from '../model.js';
import { runDate, shortCommit } from '../wording.js';

const W = 720;
const H = 170;
const M = { top: 12, right: 16, bottom: 28, left: 56 };

const fmt = (v: number, unit?: string) => `${Number(v.toPrecision(4))}${unit ? ` ${unit}` : ''}`;

/** `≤` when meeting the target means staying at or under it, `≥` when at or over; from the points. */
function direction(series: BenchSeries): '≤' | '≥' | undefined {
  const p = series.points.find((q) => q.met !== undefined && q.target !== undefined && q.value !== q.target);
  if (!p) return undefined;
  return p.value <= p.target! === p.met ? '≤' : '≥';
}

export function renderBenches(series: readonly BenchSeries[]): void {
  const container = byId('benches');
  if (series.length === 0) {
    container.replaceChildren(
      h('p', { class: 'empty' }, 'No benchmark results were given (history --bench <dir>).'),
    );
    return;
  }
  const byBench = new Map<string, BenchSeries[]>();
  for (const s of series) byBench.set(s.benchmark, [...(byBench.get(s.benchmark) ?? []), s]);
  let n = 0;
  container.replaceChildren(
    ...[...byBench].map(([bench, figures]) =>
      h('section', { 'data-bench': bench }, h('h3', {}, bench), ...figures.map((f) => figure(f, n++))),
    ),
  );
}

function figure(series: BenchSeries, index: number): HTMLElement {
  const { points, unit } = series;
  const dir = direction(series);
  const latest = points[points.length - 1]!;
  const target = latest.target;
  const headingId = `bench-${index}`;
  const latestText = `newest ${fmt(latest.value, unit)}${
    target !== undefined
      ? ` (target ${dir ?? ''}${dir ? ' ' : ''}${fmt(target, unit)}${latest.met === undefined ? '' : latest.met ? ': met' : ': not met'})`
      : ''
  }, ${points.length} run${points.length === 1 ? '' : 's'}`;
  return h(
    'div',
    { class: 'bench-figure', 'data-figure': series.figure },
    h('h4', { id: headingId }, series.figure),
    h('p', { class: 'latest' }, latestText),
    chart(series, headingId),
    h(
      'details',
      { class: 'data' },
      h('summary', {}, 'Data'),
      h(
        'table',
        { class: 'compact' },
        headRow('Run (UTC)', 'Value', 'Target', 'Commit', 'File'),
        h(
          'tbody',
          {},
          ...points.map((p) =>
            h(
              'tr',
              {},
              h('td', {}, runDate(p.at)),
              h('td', { class: 'num' }, fmt(p.value, unit)),
              h(
                'td',
                {},
                p.target === undefined ? '–' : `${dir ?? ''} ${fmt(p.target, unit)}`.trim(),
                p.met === undefined ? '' : p.met ? ' met' : ' not met',
              ),
              h('td', {}, p.commit ? shortCommit(p.commit) : '–'),
              h('td', { class: 'mono' }, p.source),
            ),
          ),
        ),
      ),
    ),
  );
}

function chart(series: BenchSeries, labelledBy: string): SVGElement {
  const { points, unit } = series;
  const top = Math.max(...points.map((p) => Math.max(p.value, p.target ?? 0)));
  const ticks = niceTicks(top, 4);
  const max = ticks[ticks.length - 1]!;
  const plotW = W - M.left - M.right;
  const plotH = H - M.top - M.bottom;
  const x = (i: number) => M.left + (points.length === 1 ? plotW / 2 : (i / (points.length - 1)) * plotW);
  const y = (v: number) => M.top + plotH - (max > 0 ? (v / max) * plotH : 0);
  const path = points
    .map((p, i) => `${i === 0 ? 'M' : 'L'}${x(i).toFixed(1)},${y(p.value).toFixed(1)}`)
    .join(' ');
  const target = points[points.length - 1]!.target;
  return s(
    'svg',
    { class: 'trend', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-labelledby': labelledBy },
    ...ticks.map((t) =>
      s(
        'g',
        {},
        s('line', { class: 'grid', x1: M.left, x2: W - M.right, y1: y(t), y2: y(t) }),
        s('text', { x: M.left - 6, y: y(t) + 4, 'text-anchor': 'end' }, fmt(t, unit)),
      ),
    ),
    target !== undefined
      ? s('line', { class: 'target', x1: M.left, x2: W - M.right, y1: y(target), y2: y(target) })
      : null,
    s('path', { class: 'line', d: path }),
    ...points.map((p, i) =>
      s(
        'circle',
        { class: p.met === false ? 'point--missed' : 'point--met', cx: x(i), cy: y(p.value), r: 4 },
        s(
          'title',
          {},
          `${runDate(p.at)}: ${fmt(p.value, unit)}${p.met === false ? ' (target not met)' : ''}`,
        ),
      ),
    ),
    s('text', { x: M.left, y: H - 8 }, runDate(points[0]!.at)),
    points.length > 1
      ? s('text', { x: W - M.right, y: H - 8, 'text-anchor': 'end' }, runDate(points[points.length - 1]!.at))
      : null,
  );
}
