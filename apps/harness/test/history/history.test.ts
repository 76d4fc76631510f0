// `kubelet-harness history` over ten synthetic runs (synthetic.ts: what each row is made to be):
// every classification, the failure clusters, the alerts and the exit status of each flag, an
// earlier history extended, the window trimmed, the job summary.
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli.js';
import { runHistoryCommand } from '../../src/history/command.js';
import type { HistoryModel, HistoryRow } from '../../src/history/model.js';
import { mergeResults } from '../../src/results/merge.js';
import type { CaseResult, CellResult, RunResults } from '../../src/results/model.js';
import {
  commitOf,
  NOW,
  QUARANTINE,
  RUNS,
  runIdOf,
  startOf,
  syntheticRun,
  writeSyntheticRuns,
} from './synthetic.js';

let dir: string;
let runs: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kh-history-test-'));
  runs = join(dir, 'runs');
  await writeSyntheticRuns(runs);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function history(argv: string[], now = NOW) {
  let out = '';
  let err = '';
  const code = await runHistoryCommand(argv, {
    out: (s) => {
      out += s;
    },
    err: (s) => {
      err += s;
    },
    now: () => now,
  });
  return { code, out, err };
}

const read = async (out: string): Promise<HistoryModel> =>
  JSON.parse(await readFile(join(out, 'history.json'), 'utf8')) as HistoryModel;
const outcomes = (r: HistoryRow) =>
  r.results
    .map((x) => (x ? x.outcome[0]!.toUpperCase() : '-'))
    .reverse()
    .join('');

describe('history over ten runs', () => {
  let model: HistoryModel;
  let out: string;
  const row = (id: string) => model.rows.find((r) => r.id === id)!;
  beforeAll(async () => {
    out = join(dir, 'all');
    const r = await history([runs, '--out', out]);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toContain('10 runs, 11 rows; 2 new failures, 1 new flakes, 1 fixed, 2 still failing');
    model = await read(out);
  });

  it('has a column per run, newest first, with its commit, date and runtime versions', () => {
    expect(model.runs.map((r) => r.runId)).toEqual(Array.from({ length: RUNS }, (_, i) => runIdOf(RUNS - i)));
    expect(model.runs[0]).toMatchObject({
      startedAt: startOf(10),
      commit: commitOf(10),
      report: 'runs/nightly-10.html',
    });
    expect(model.runs.map((r) => r.runtimes.find((x) => x.name === 'docker-26')!.runtimeVersion)).toEqual([
      ...Array(5).fill('26.1.6'),
      ...Array(5).fill('26.1.5'),
    ]);
  });

  it('has a row per cell, in matrix order, with its squares', () => {
    expect(model.rows.map((r) => `${r.id} ${outcomes(r)}`)).toEqual([
      'containerd-1.7/node-registration PPPPPPPPPP',
      'docker-26/node-registration PPPPPPPPPP',
      'containerd-1.7/probes PPFPPPFPPP',
      'docker-26/probes PPPPPPPPFP',
      'containerd-1.7/kubectl PPPPPPFFFF',
      'docker-26/kubectl FFFFFFFFFP',
      'containerd-1.7/eviction PPPPPPPPPF',
      'docker-26/eviction PPPPPPPPPP',
      'containerd-1.7/gc PPPPFFFFFF',
      'docker-26/gc SSSSSSSSSS',
      'containerd-1.7/pod-lifecycle -------PPF',
    ]);
    expect(row('docker-26/kubectl').results[1]).toMatchObject({
      outcome: 'failed',
      reason: expect.stringMatching(/^kubectl logs --previous: pod kh-ns-\d+a\/logs-9 answered 400/),
    });
  });

  it('names the flaky rows with the rule that caught each, and which are new', () => {
    const flaky = Object.fromEntries(model.rows.filter((r) => r.flaky.length).map((r) => [r.id, r.flaky]));
    expect(flaky).toEqual({
      'containerd-1.7/probes': ['changed outcome 4 times in the last 10 runs'],
      'docker-26/probes': ['changed outcome 2 times in the last 10 runs'],
      'docker-26/eviction': ['passed only on try 2 in run nightly-08'],
      'containerd-1.7/gc': [`passed and failed at the same commit ${commitOf(4).slice(0, 7)}`],
    });
    expect(model.rows.filter((r) => r.newFlake).map((r) => r.id)).toEqual(['docker-26/probes']);
  });

  it('counts failing streaks back from the newest run and names the commit each began at', () => {
    const streaks = model.rows
      .filter((r) => r.failingFor > 0)
      .map((r) => [
        r.id,
        r.failingFor,
        r.failingSince?.runId,
        r.failingSince?.commit,
        r.failingSince?.beforeWindow,
      ]);
    expect(streaks).toEqual([
      ['containerd-1.7/kubectl', 4, runIdOf(7), commitOf(7), false],
      ['containerd-1.7/eviction', 1, runIdOf(10), commitOf(10), false],
      ['containerd-1.7/gc', 6, runIdOf(5), commitOf(5), false],
      ['containerd-1.7/pod-lifecycle', 1, runIdOf(10), commitOf(10), false],
    ]);
    expect(row('docker-26/kubectl').failingFor).toBe(0);
    expect(row('containerd-1.7/gc').quarantine).toEqual(QUARANTINE);
  });

  it('says where each row stands in the newest run (a flaky row that flipped is no fix), and sums that up', () => {
    expect(Object.fromEntries(model.rows.map((r) => [r.id, r.status]))).toEqual({
      'containerd-1.7/node-registration': 'passing',
      'docker-26/node-registration': 'passing',
      'containerd-1.7/probes': 'passing',
      'docker-26/probes': 'flaky',
      'containerd-1.7/kubectl': 'still-failing',
      'docker-26/kubectl': 'fixed',
      'containerd-1.7/eviction': 'new-failure',
      'docker-26/eviction': 'passing',
      'containerd-1.7/gc': 'still-failing',
      'docker-26/gc': 'skipped',
      'containerd-1.7/pod-lifecycle': 'new-failure',
    });
    expect(model.summary).toEqual({
      newFailures: ['containerd-1.7/eviction', 'containerd-1.7/pod-lifecycle'],
      newFlakes: ['docker-26/probes'],
      fixed: ['docker-26/kubectl'],
      stillFailing: ['containerd-1.7/kubectl', 'containerd-1.7/gc'],
    });
  });

  it('groups failures by their message with numbers, ids and names stripped', () => {
    expect(model.clusters.map((c) => [c.failures, c.runs, c.rows, c.signature])).toEqual([
      [
        13,
        10,
        ['containerd-1.7/kubectl', 'docker-26/kubectl'],
        'kubectl logs --previous: pod <name>/<name> answered <n> after <n> ms',
      ],
      [6, 6, ['containerd-1.7/gc'], 'image registry:<n>/kh/busybox:<name> still present after <n> s'],
      [
        3,
        3,
        ['containerd-1.7/probes', 'docker-26/probes'],
        'pod <name>/liveness-exec not restarted within <n> s',
      ],
      [
        2,
        1,
        ['containerd-1.7/eviction', 'containerd-1.7/pod-lifecycle'],
        'pod <name> not Running within <n> s: container app waiting (ImagePullBackOff)',
      ],
    ]);
    // The newest failure's own message is kept as the example.
    expect(model.clusters[0]!.example).toMatch(/logs-10 answered 400/);
  });

  it('writes each run report, which the squares link into at their cell', async () => {
    expect((await readdir(join(out, 'runs'))).sort()).toEqual(
      Array.from({ length: RUNS }, (_, i) => `${runIdOf(i + 1)}.html`),
    );
    const html = await readFile(join(out, 'runs', 'nightly-07.html'), 'utf8');
    expect(html).toContain('id="report-data"');
    expect(html).toContain('"runId":"nightly-07"');
  });
});

describe('history of cells that report named cases', () => {
  // Three runs of one cell with upstream's cases (issue 34): a row per case, each drilling into the
  // cell; the cell's quarantine holds each of its cases.
  const probes = (run: number, cases: CaseResult[], extra: Partial<CellResult> = {}): RunResults => {
    const base = syntheticRun(run);
    const cell: CellResult = {
      runtime: 'containerd-1.7',
      scenario: 'probes-upstream',
      outcome: cases.some((c) => c.outcome === 'failed') ? 'failed' : 'passed',
      startedAt: startOf(run),
      durationMs: 60_000,
      assertions: [],
      timeline: [],
      logs: [],
      cases,
      ...extra,
    };
    return { ...base, scenarios: ['probes-upstream'], cells: [cell] };
  };
  const pass = (name: string, more: Partial<CaseResult> = {}): CaseResult => ({
    name,
    outcome: 'passed',
    durationMs: 4000,
    ...more,
  });
  const fail = (name: string, run: number): CaseResult => ({
    name,
    outcome: 'failed',
    durationMs: 9000,
    reason: `pod liveness-http-${run}7 restarted ${run} times`,
  });

  it('keeps a row per case with its own verdicts; a whole-cell quarantine holds each case', async () => {
    const at = join(dir, 'cases');
    const write = async (run: number, results: RunResults) => {
      await mkdir(join(at, `run-${run}`), { recursive: true });
      await writeFile(join(at, `run-${run}`, 'results.json'), JSON.stringify(results));
    };
    await write(1, probes(1, [pass('liveness-exec'), fail('liveness-http', 1), pass('readiness-exec')]));
    await write(
      2,
      probes(2, [pass('liveness-exec', { attempts: 2 }), fail('liveness-http', 2), pass('readiness-exec')]),
    );
    await write(
      3,
      probes(3, [pass('liveness-exec'), fail('liveness-http', 3), fail('readiness-exec', 3)], {
        quarantine: QUARANTINE,
      }),
    );
    const out = join(dir, 'cases-out');
    const r = await history([at, '-o', out, '--fail-after', '3']);
    const m = await read(out);
    const id = 'containerd-1.7/probes-upstream';
    expect(m.rows.map((row) => [row.id, row.cell, row.case, outcomes(row)])).toEqual([
      [`${id} › liveness-exec`, id, 'liveness-exec', 'PPP'],
      [`${id} › liveness-http`, id, 'liveness-http', 'FFF'],
      [`${id} › readiness-exec`, id, 'readiness-exec', 'PPF'],
    ]);
    const row = (name: string) => m.rows.find((x) => x.case === name)!;
    expect(row('liveness-exec').flaky).toEqual([`passed only on try 2 in run ${runIdOf(2)}`]);
    expect(row('liveness-exec').results.map((x) => x?.durationMs)).toEqual([4000, 4000, 4000]);
    expect(row('liveness-http')).toMatchObject({
      failingFor: 3,
      status: 'still-failing',
      quarantine: QUARANTINE,
    });
    expect(row('readiness-exec')).toMatchObject({
      failingFor: 1,
      status: 'new-failure',
      quarantine: QUARANTINE,
    });
    // The held case fails three runs in a row without an alert; failures group by case message.
    expect(r.code).toBe(0);
    expect(m.clusters.map((c) => [c.failures, c.rows.length, c.signature])).toEqual([
      [4, 2, 'pod <name> restarted <n> times'],
    ]);
  });
});

describe("history over a nightly's downloaded artifacts", () => {
  // What `gh run download` leaves of one nightly: each shard's results beside the merged ones.
  const shards = (run: number) => {
    const whole = syntheticRun(run);
    const matrix = whole.cells.map((c) => `${c.runtime}/${c.scenario}`);
    return [1, 2].map((index): RunResults => {
      const cells = whole.cells.filter((_, i) => i % 2 === index - 1);
      return {
        ...whole,
        runId: `${whole.runId}-shard-${index}`,
        cells,
        shard: { index, total: 2, cells: cells.map((c) => `${c.runtime}/${c.scenario}`), matrix },
      };
    });
  };
  const download = async (at: string, run: number, { merged = true } = {}) => {
    const parts = shards(run);
    const files: [string, RunResults][] = parts.map((p, i) => [`kh-shard-containerd-${i + 1}`, p]);
    if (merged) files.push(['kubelet-harness-merged', mergeResults(parts).results]);
    for (const [name, results] of files) {
      await mkdir(join(at, name), { recursive: true });
      await writeFile(join(at, name, 'results.json'), JSON.stringify(results));
    }
  };

  it('takes each night once, as its merged results, leaving out the shards it was made from', async () => {
    const at = join(dir, 'downloaded');
    await download(join(at, 'night-9'), 9);
    await download(join(at, 'night-10'), 10);
    const out = join(dir, 'downloaded-out');
    expect((await history([at, '-o', out])).code).toBe(0);
    const m = await read(out);
    expect(m.runs.map((r) => r.runId)).toEqual([
      `${runIdOf(10)}-shard-1+${runIdOf(10)}-shard-2`,
      `${runIdOf(9)}-shard-1+${runIdOf(9)}-shard-2`,
    ]);
    expect(m.rows.map((r) => `${r.id} ${outcomes(r)}`)).toContain('docker-26/probes FP');
    expect(m.rows).toHaveLength(11);
  });

  it('reads a checkout that ran the matrix: the run in .reports, not the results.json of vitest under node_modules', async () => {
    const at = join(dir, 'checkout');
    await mkdir(join(at, 'e2e/.reports/e2e'), { recursive: true });
    await writeFile(join(at, 'e2e/.reports/e2e/results.json'), JSON.stringify(syntheticRun(3)));
    const cache = join(at, 'apps/harness/node_modules/.vite/vitest/da39a3ee');
    await mkdir(cache, { recursive: true });
    await writeFile(join(cache, 'results.json'), JSON.stringify({ version: '3.2.4', results: [] }));
    const out = join(dir, 'checkout-out');
    const r = await history([at, '-o', out]);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect((await read(out)).runs.map((run) => run.runId)).toEqual([runIdOf(3)]);
  });

  it('refuses a shard no merged results were made from, and a directory without results', async () => {
    const at = join(dir, 'shards-only');
    await download(at, 10, { merged: false });
    const r = await history([at, '-o', join(dir, 'shards-only-out')]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(
      /kh-shard-containerd-1\/results\.json: shard 1\/2 of a run, not a whole run; merge its shards first \(kubelet-harness merge\)/,
    );
    const empty = join(dir, 'empty');
    await mkdir(empty, { recursive: true });
    const e = await history([empty, '-o', join(dir, 'empty-out')]);
    expect(e.code).toBe(2);
    expect(e.err).toContain(`${empty}: no results.json in this directory`);
  });
});

describe('history flags', () => {
  const out = () => join(dir, `flags-${Math.random().toString(36).slice(2)}`);

  it('--fail-after n: exit 1 when a row failed the newest n runs in a row; a quarantined one does not count', async () => {
    const at4 = await history([runs, '-o', out(), '--fail-after', '4']);
    expect(at4.code).toBe(1);
    expect(at4.err).toBe(
      'alert (fail-after): 1 row has failed 4 or more runs in a row: containerd-1.7/kubectl (4)\n',
    );
    // containerd-1.7/gc failed 6 in a row, but its newest failure is quarantined.
    const at5 = await history([runs, '-o', out(), '--fail-after', '5']);
    expect(at5.code).toBe(0);
    expect(at5.err).toBe('');
  });

  it('--stale-hours h: exit 1 when the newest run started more than h hours ago', async () => {
    const stale = await history([runs, '-o', out(), '--stale-hours', '24']);
    expect(stale.code).toBe(1);
    expect(stale.err).toBe(
      'alert (stale): the newest run, nightly-10, started 30.0 hours ago (more than 24)\n',
    );
    expect((await history([runs, '-o', out(), '--stale-hours', '36'])).code).toBe(0);
    // Both alerts at once; the model keeps them for the page.
    const both = join(dir, 'both');
    expect((await history([runs, '-o', both, '--stale-hours', '24', '--fail-after', '4'])).code).toBe(1);
    expect((await read(both)).alerts.map((a) => a.kind)).toEqual(['fail-after', 'stale']);
  });

  it('--bench-regression pct: exit 1 when a bench figure is that much worse than the median of the runs before', async () => {
    const trend = join(dir, 'bench-trend.jsonl');
    const night = (d: number, value: number) =>
      JSON.stringify({
        benchmark: 'dockershim',
        at: `2026-11-${10 + d}T03:00:00.000Z`,
        figures: [{ name: 'ContainerStatus p50 ×', value, target: 1.5, met: value <= 1.5 }],
      });
    await writeFile(trend, [1.2, 1.3, 1.2, 1.25, 1.2, 1.6].map((v, d) => night(d, v)).join('\n'));
    const r = await history([runs, '-o', out(), '--bench', trend, '--bench-regression', '25']);
    expect(r.code).toBe(1);
    expect(r.err).toBe(
      'alert (bench-regression): 1 bench figure is more than 25% worse than the median of 5 runs before: dockershim · ContainerStatus p50 × 1.6 (median 1.2, 33% worse)\n',
    );
    expect((await history([runs, '-o', out(), '--bench', trend, '--bench-regression', '40'])).code).toBe(0);
    // A window of 2 takes the median of 1.25 and 1.2.
    const narrow = join(dir, 'bench-narrow');
    expect(
      (
        await history([
          runs,
          '-o',
          narrow,
          '--bench',
          trend,
          '--bench-regression',
          '25',
          '--bench-window',
          '2',
        ])
      ).code,
    ).toBe(1);
    expect((await read(narrow)).settings).toMatchObject({ benchRegression: 0.25, benchWindow: 2 });
    // Bench figures alone (`npx turbo run bench` on a laptop): a trend with no matrix run, judged the same way.
    const benchOnly = join(dir, 'bench-only');
    const alone = await history(['-o', benchOnly, '--bench', trend, '--bench-regression', '25']);
    expect(alone.code).toBe(1);
    expect(alone.err).toMatch(/dockershim · ContainerStatus p50 × 1\.6 \(median 1\.2, 33% worse\)/);
    const model = await read(benchOnly);
    expect(model.runs).toEqual([]);
    expect(model.benches.map((b) => [b.figure, b.points.length])).toEqual([['ContainerStatus p50 ×', 6]]);
  });

  it('--flaky-window n: only the newest n runs count for flakiness', async () => {
    const o = out();
    expect((await history([runs, '-o', o, '--flaky-window', '3'])).code).toBe(0);
    const m = await read(o);
    expect(m.rows.filter((r) => r.flaky.length).map((r) => r.id)).toEqual([
      'docker-26/probes',
      'docker-26/eviction',
    ]);
    expect(m.settings.flakyWindow).toBe(3);
  });

  it('--runs n keeps the newest n runs, and their reports only', async () => {
    const o = out();
    await history([runs, '-o', o]);
    expect((await history(['--from', o, '-o', o, '--runs', '4'])).code).toBe(0);
    const m = await read(o);
    expect(m.runs.map((r) => r.runId)).toEqual([runIdOf(10), runIdOf(9), runIdOf(8), runIdOf(7)]);
    expect((await readdir(join(o, 'runs'))).sort()).toEqual([
      'nightly-07.html',
      'nightly-08.html',
      'nightly-09.html',
      'nightly-10.html',
    ]);
    // The streak now reaches the oldest run kept: it began earlier still, as far as this history knows.
    expect(m.rows.find((r) => r.id === 'containerd-1.7/gc')!.failingSince).toMatchObject({
      runId: runIdOf(7),
      beforeWindow: true,
    });
  });

  it('--reports n keeps the reports of the newest n runs; 0 writes none', async () => {
    const o = out();
    expect((await history([runs, '-o', o, '--reports', '3'])).code).toBe(0);
    const m = await read(o);
    expect(m.runs.map((r) => r.report ?? '-')).toEqual([
      'runs/nightly-10.html',
      'runs/nightly-09.html',
      'runs/nightly-08.html',
      ...Array(7).fill('-'),
    ]);
    expect((await readdir(join(o, 'runs'))).sort()).toEqual([
      'nightly-08.html',
      'nightly-09.html',
      'nightly-10.html',
    ]);
    const none = out();
    expect((await history([runs, '-o', none, '--reports', '0'])).code).toBe(0);
    expect((await read(none)).runs.every((r) => r.report === undefined)).toBe(true);
    expect(await readdir(join(none, 'runs'))).toEqual([]);
  });

  it('--from extends an earlier history, as the nightly does each night: the same as reading every run at once', async () => {
    const first = join(dir, 'nights-1-7');
    const seven = join(dir, 'runs-1-7');
    const three = join(dir, 'runs-8-10');
    await writeSyntheticRuns(seven, 1, 7);
    await writeSyntheticRuns(three, 8, 10);
    expect((await history([seven, '-o', first])).code).toBe(0);
    const next = join(dir, 'nights-1-10');
    expect((await history([three, '--from', first, '-o', next])).code).toBe(0);
    const all = join(dir, 'all');
    const strip = (m: HistoryModel) => ({ ...m, generatedAt: '' });
    expect(strip(await read(next))).toEqual(strip(await read(all)));
    expect((await readdir(join(next, 'runs'))).length).toBe(RUNS);
  });

  it('--summary appends the job summary: alerts, new failures, new flakes, fixed, still failing', async () => {
    const summary = join(dir, 'step-summary.md');
    await writeFile(summary, 'earlier step\n');
    await history([runs, '-o', out(), '--fail-after', '4', '--summary', summary]);
    const md = await readFile(summary, 'utf8');
    expect(
      md.startsWith(
        'earlier step\n### kubelet-harness history: 2 new failures, 1 new flakes, 1 fixed, 2 still failing\n',
      ),
    ).toBe(true);
    expect(md).toContain(
      '> **Alert (fail-after):** 1 row has failed 4 or more runs in a row: containerd-1.7/kubectl (4)',
    );
    expect(md).toContain(
      '- `containerd-1.7/eviction`: pod eviction-73 not Running within 90 s: container app waiting (ImagePullBackOff)',
    );
    expect(md).toContain('**New flakes**\n\n- `docker-26/probes`: changed outcome 2 times');
    expect(md).toContain('**Fixed**\n\n- `docker-26/kubectl`\n');
    expect(md).toContain(
      `- \`containerd-1.7/gc\` (quarantined until 2026-12-31, sig-node-oncall): failing for 6 runs, since ${commitOf(5).slice(0, 7)} (2026-11-23 02:17)`,
    );
  });

  it('bad arguments and unreadable input exit 2 with the reason', async () => {
    const cases: [string[], RegExp][] = [
      [[], /nothing to read/],
      [[runs, '--fail-after', '0'], /--fail-after must be a positive integer/],
      [[runs, '--stale-hours', 'soon'], /--stale-hours must be a positive number/],
      [[runs, '--bench-regression', 'lots'], /--bench-regression must be a positive percentage/],
      [[runs, '--bench-window', '0'], /--bench-window must be a positive integer/],
      [[runs, '--runs', '2.5'], /--runs must be a positive integer/],
      [[runs, '--reports', 'all'], /--reports must be a whole number/],
      [[runs, '--bogus'], /Unknown option '--bogus'/],
      [[join(dir, 'absent')], /absent: no such file or directory/],
      [['--from', runs], /history\.json: ENOENT/],
    ];
    for (const [argv, message] of cases) {
      const r = await history([...argv, '-o', out()]);
      expect(r.code, argv.join(' ')).toBe(2);
      expect(r.err).toMatch(message);
    }
  });

  it('is a subcommand of kubelet-harness, with its help', async () => {
    let text = '';
    const code = await main(['history', '--help'], {
      out: (s) => {
        text += s;
      },
      err: () => {},
    });
    expect(code).toBe(0);
    expect(text).toContain('Usage: kubelet-harness history');
    expect(text).toContain('--flaky-window <n>');
  });
});
