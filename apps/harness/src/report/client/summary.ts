// The sections drawn once from the model, which no filter changes: the run's header, the summary
// (counts, runtimes, the baseline comparison) and the benchmarks.
import type { CpuSummary, ReportModel } from '../model.js';
import { byId, h } from './dom.js';
import { comparisonText, countsText, formatCpu, formatMs, STATUS } from './format.js';

export function renderHeader(model: ReportModel): void {
  const { run } = model;
  document.title = `kubelet-harness report · ${run.runId}`;
  const meta = byId('run-meta');
  meta.replaceChildren(
    h('span', {}, 'Run ', h('code', {}, run.runId)),
    h('span', {}, `started ${new Date(run.startedAt).toISOString().replace('T', ' ').slice(0, 19)} UTC`),
    h('span', {}, `took ${formatMs(run.durationMs)}`),
    h('span', {}, `host ${run.host.node} (${run.host.platform}, ${run.host.cpus} CPUs)`),
    ...(model.cpu ? [h('span', { class: 'cpu' }, matrixCpuText(model.cpu))] : []),
  );
  byId('generated-at').textContent = `Generated ${model.generatedAt}`;
}

/** The matrix's CPU: the total, then where it went, then the host's. */
function matrixCpuText({ run, byRuntime }: CpuSummary): string {
  const world = run.world.reduce((sum, c) => sum + c.seconds, 0);
  const where = [
    ...byRuntime.map((r) => `${r.runtime} nodes ${formatCpu(r.nodeSeconds)}`),
    `apiserver and registries ${formatCpu(world)}`,
    `harness ${formatCpu(run.harnessSeconds)}`,
  ];
  const host = run.hostSeconds === undefined ? '' : `; host busy ${formatCpu(run.hostSeconds)}`;
  return `used ${formatCpu(run.totalSeconds)} (${where.join(', ')})${host}`;
}

/**
 * `open` opens a cell's drill-down (the baseline's regressions and fixes link to theirs);
 * `colours` gives each runtime's swatch the colour it has in the charts.
 */
export function renderSummary(
  model: ReportModel,
  colours: Map<string, string>,
  open: (cellId: string) => void,
): void {
  const { counts, baseline } = model;
  const tile = (kind: string, label: string, value: number, icon?: string) =>
    h(
      'div',
      { class: `tile tile--${kind}`, 'data-count': kind },
      h('span', { class: 'tile-value' }, value),
      h(
        'span',
        { class: 'tile-label' },
        icon ? h('span', { 'aria-hidden': 'true' }, `${icon} `) : null,
        label,
      ),
    );
  const tiles = h(
    'div',
    { class: 'tiles' },
    tile('total', 'cells', counts.total),
    tile('passed', 'passed', counts.passed, STATUS.passed.icon),
    tile('failed', 'failed', counts.failed, STATUS.failed.icon),
    tile('skipped', 'skipped', counts.skipped, STATUS.skipped.icon),
  );
  const runtimes = h(
    'ul',
    { class: 'runtimes' },
    ...model.runtimes.map((r) =>
      h(
        'li',
        {},
        h('span', { class: 'swatch', 'data-runtime': r.name, 'aria-hidden': 'true' }),
        h('strong', {}, r.name),
        ` ${r.runtimeName} ${r.runtimeVersion}`,
        r.startupMs !== undefined ? ` · ready in ${formatMs(r.startupMs)}` : '',
        ` · ${countsText(model.countsByRuntime[r.name]!)}`,
        r.nodeImage
          ? h(
              'span',
              { class: 'node-image' },
              ` · node image Debian ${r.nodeImage.release}: `,
              Object.entries(r.nodeImage.packages)
                .map(([pkg, version]) => `${pkg} ${version}`)
                .join(', '),
            )
          : '',
        ...(r.warnings ?? []).map((w) => h('span', { class: 'runtime-warning' }, ` · warning: ${w}`)),
      ),
    ),
  );
  const children: Node[] = [tiles, runtimes];
  if (baseline) {
    const list = (ids: string[], label: string, cls: string) =>
      ids.length === 0
        ? null
        : h(
            'div',
            { class: `changes ${cls}` },
            h('h3', {}, `${label} (${ids.length})`),
            h(
              'ul',
              {},
              ...ids.map((id) => {
                const cell = model.cells.find((c) => c.id === id)!;
                const link = h('button', { type: 'button', class: 'linklike' }, id);
                link.addEventListener('click', () => open(id));
                return h('li', {}, link, ` — ${comparisonText(cell)}`);
              }),
            ),
          );
    const t = baseline.thresholds;
    children.push(
      h(
        'section',
        { class: 'baseline', id: 'baseline', 'aria-labelledby': 'baseline-heading' },
        h('h3', { id: 'baseline-heading' }, 'Compared with baseline'),
        h(
          'p',
          {},
          'Baseline run ',
          h('code', {}, baseline.runId),
          ` (${countsText(baseline.counts)}). Duration regressions: slower by at least ${t.durationPct}% and ${formatMs(t.durationMinMs)}; CRI regressions: p99 at least ${t.criP99Ratio}× and ${formatMs(t.criMinMs)} higher.`,
        ),
        baseline.regressions.length + baseline.criRegressions.length === 0
          ? h('p', { class: 'no-regressions' }, h('span', { 'aria-hidden': 'true' }, '✓ '), 'No regressions.')
          : list(baseline.regressions, 'Regressions', 'changes--regressed'),
        baseline.criRegressions.length === 0
          ? null
          : h(
              'div',
              { class: 'changes changes--cri' },
              h('h3', {}, `CRI latency regressions (${baseline.criRegressions.length})`),
              h(
                'ul',
                {},
                ...baseline.criRegressions.map((r) =>
                  h(
                    'li',
                    {},
                    `${r.method} on ${r.runtime} (${r.source}): p99 ${formatMs(r.p99)}, was ${formatMs(r.baselineP99)}`,
                  ),
                ),
              ),
            ),
        list(baseline.fixed, 'Fixed', 'changes--fixed'),
        baseline.missing.length > 0 ? h('p', {}, `Not run this time: ${baseline.missing.join(', ')}.`) : null,
      ),
    );
  }
  byId('summary').replaceChildren(...children);
  // Swatch colours are per runtime, set through CSSOM (allowed by the page's CSP, unlike style attributes).
  for (const sw of document.querySelectorAll<HTMLElement>('.swatch')) {
    sw.style.background = colours.get(sw.dataset.runtime ?? '') ?? '#888';
  }
}

export function renderBenchmarks(model: ReportModel): void {
  const section = byId('benchmarks-section');
  const { benchmarks } = model;
  if (benchmarks.length === 0) {
    section.hidden = true;
    return;
  }
  const keys = [...new Set(benchmarks.flatMap((b) => Object.keys(b.metrics)))];
  byId('benchmarks').replaceChildren(
    h(
      'div',
      { class: 'scroll' },
      h(
        'table',
        { class: 'compact', 'aria-labelledby': 'benchmarks-heading' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            h('th', { scope: 'col' }, 'Benchmark'),
            ...keys.map((k) => h('th', { scope: 'col' }, k)),
          ),
        ),
        h(
          'tbody',
          {},
          ...benchmarks.map((b) =>
            h(
              'tr',
              {},
              h('th', { scope: 'row' }, b.name),
              ...keys.map((k) => {
                const v = b.metrics[k];
                return h(
                  'td',
                  { class: typeof v === 'number' ? 'num' : '' },
                  v === undefined ? '—' : String(v),
                );
              }),
            ),
          ),
        ),
      ),
    ),
  );
}
