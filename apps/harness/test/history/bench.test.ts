// The benches' history: the contract (figures, .json or .jsonl) and the figures of the bench files
// written today (every object with a boolean `met`), as series over time.
import { mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  benchRecord,
  benchRegressionAlert,
  benchRegressions,
  benchSeries,
  legacyFigures,
  lowerIsBetter,
  readBenchRecords,
} from '../../src/history/bench.js';
import { normalizeMessage } from '../../src/history/clusters.js';
import type { BenchSeries } from '../../src/history/model.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kh-history-bench-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

// The shapes of today's bench files, cut down to what the reader looks at.
const NODE_AGENT = {
  label: 'agent-bench',
  at: '2026-11-27T10:00:00.000Z',
  targets: {
    note: 'issue 21',
    overheadP99: { figure: 41.5, target: 50, unit: 'ms', met: true },
    rss: { figure: 130.2, target: 120, unit: 'MiB', met: false },
  },
  podStartup: { p50Ms: 900, p99Ms: 1400 },
};
const RUNTIME_MANAGER = {
  benchmark: 'runtime-manager overhead per pod create',
  target: { figure: 'create.overheadMs.p99', targetMs: 25, valueMs: 18.4, met: true },
  at: '2026-11-27T11:00:00.000Z',
};
const STREAMING = {
  benchmark: 'streaming',
  at: '2026-11-28T09:00:00.000Z',
  results: [
    {
      runtime: 'containerd',
      exec: { ratio: 1.25, targetRatio: 1.5, met: true },
      portForward: { share: 0.08, targetShare: 0.5, met: false },
    },
    {
      runtime: 'docker',
      exec: { ratio: 1.17, targetRatio: 1.5, met: true },
      portForward: { error: 'refused', targetShare: 0.5 },
    },
  ],
};
const APISERVER = {
  benchmark: 'fake-apiserver at Kubernetes scalability thresholds (kwok-style load)',
  date: '2026-11-26T08:00:00.000Z',
  runs: [{ nodes: 1000, targets: { writeP99Ms: { measured: 12, target: 100, met: true } } }],
};

describe('bench figures', () => {
  it('reads every object with a boolean met from the files written today', () => {
    expect(legacyFigures(NODE_AGENT)).toEqual([
      { name: 'targets · overheadP99', value: 41.5, target: 50, unit: 'ms', met: true },
      { name: 'targets · rss', value: 130.2, target: 120, unit: 'MiB', met: false },
    ]);
    expect(legacyFigures(RUNTIME_MANAGER)).toEqual([
      { name: 'create.overheadMs.p99', value: 18.4, target: 25, unit: 'ms', met: true },
    ]);
    // A path that failed has no value and no figure.
    expect(legacyFigures(STREAMING)).toEqual([
      { name: 'results · containerd · exec', value: 1.25, target: 1.5, met: true },
      { name: 'results · containerd · portForward', value: 0.08, target: 0.5, met: false },
      { name: 'results · docker · exec', value: 1.17, target: 1.5, met: true },
    ]);
    expect(legacyFigures(APISERVER)).toEqual([
      { name: 'runs · #1 · targets · writeP99Ms', value: 12, target: 100, met: true },
    ]);
  });

  it('takes the contract when a record has figures, and says which one is bad', () => {
    const r = benchRecord(
      {
        benchmark: 'b',
        at: '2026-11-28T00:00:00Z',
        commit: 'abc',
        figures: [{ name: 'f', value: 2, unit: '×', target: 1.5, met: false }],
      },
      'x.json',
      new Date(0),
    );
    expect(r).toEqual({
      benchmark: 'b',
      at: '2026-11-28T00:00:00Z',
      commit: 'abc',
      figures: [{ name: 'f', value: 2, unit: '×', target: 1.5, met: false }],
      source: 'x.json',
    });
    expect(() => benchRecord({ benchmark: 'b', figures: [{ name: 'f' }] }, 'y.json', new Date(0))).toThrow(
      'y.json: figures[0] needs a name (string) and a value (number)',
    );
  });

  it('reads directories (not the *latest.json copies) and .jsonl trends into series, oldest first', async () => {
    const bench = join(dir, 'pkg', '.reports', 'bench');
    await mkdir(bench, { recursive: true });
    await writeFile(join(bench, 'agent-bench-2026-11-27T10-00-00-000Z.json'), JSON.stringify(NODE_AGENT));
    await writeFile(join(bench, 'latest.json'), JSON.stringify(NODE_AGENT));
    await writeFile(join(bench, 'apiserver.json'), JSON.stringify(APISERVER));
    const noTime = join(bench, 'dockershim-2026-11-20T01-02-03-004Z.json');
    await writeFile(noTime, JSON.stringify({ figures: [{ name: 'lifecycle ratio', value: 1.4 }] }));
    await utimes(noTime, new Date('2026-11-20T01:02:03Z'), new Date('2026-11-20T01:02:03Z'));
    const trend = join(dir, 'trend.jsonl');
    await writeFile(
      trend,
      [3, 1, 2]
        .map((d) =>
          JSON.stringify({
            benchmark: 'agent-bench',
            at: `2026-11-2${d}T10:00:00.000Z`,
            figures: [{ name: 'targets · rss', value: 100 + d, unit: 'MiB', target: 120, met: true }],
          }),
        )
        .join('\n'),
    );
    const records = await readBenchRecords([join(dir, 'pkg'), trend]);
    expect(records.map((r) => r.benchmark)).toEqual([
      'agent-bench',
      APISERVER.benchmark,
      'dockershim',
      'agent-bench',
      'agent-bench',
      'agent-bench',
    ]);
    expect(records[2]!.at).toBe('2026-11-20T01:02:03.000Z');
    expect(records[3]!.source).toBe(`${trend}:1`);
    const series = benchSeries(records);
    const rss = series.find((s) => s.benchmark === 'agent-bench' && s.figure === 'targets · rss')!;
    expect(rss.points.map((p) => [p.at.slice(0, 10), p.value, p.met])).toEqual([
      ['2026-11-21', 101, true],
      ['2026-11-22', 102, true],
      ['2026-11-23', 103, true],
      ['2026-11-27', 130.2, false],
    ]);
    // Read again on top of an earlier history: each bench run counts once.
    expect(benchSeries(records, series)).toEqual(series);
    await expect(readBenchRecords([join(dir, 'absent')])).rejects.toThrow('no such file or directory');
  });
});

/** A series of one figure over nights 1..n, with the target each point was judged by. */
function nights(values: number[], target?: { value: number; lowerIsBetter: boolean }): BenchSeries {
  return {
    benchmark: 'agent-bench',
    figure: 'rss',
    unit: 'MiB',
    points: values.map((value, i) => ({
      at: `2026-11-${String(i + 1).padStart(2, '0')}T03:00:00.000Z`,
      value,
      source: `night-${i + 1}.json`,
      ...(target
        ? {
            target: target.value,
            met: target.lowerIsBetter ? value <= target.value : value >= target.value,
          }
        : {}),
    })),
  };
}

describe('bench regressions against the median of the runs before', () => {
  const lower = { value: 200, lowerIsBetter: true };
  const higher = { value: 50, lowerIsBetter: false };

  it('learns which way is better from the points that met or missed their target', () => {
    expect(lowerIsBetter(nights([100, 120], lower))).toBe(true);
    expect(lowerIsBetter(nights([100, 120], higher))).toBe(false);
    // Over its target and missed it: lower is better, whatever the newer points say.
    expect(lowerIsBetter(nights([250, 200], lower))).toBe(true);
    expect(lowerIsBetter(nights([100, 120]))).toBeUndefined();
  });

  it('flags a newest point more than the threshold worse than the median of the window before it', () => {
    // Median of the five before is 100; 126 is 26% worse, 125 is not more than 25%.
    const [r] = benchRegressions([nights([90, 100, 300, 95, 110, 126], lower)], 0.25);
    expect(r).toMatchObject({ value: 126, median: 100, window: 5 });
    expect(r!.worse).toBeCloseTo(0.26);
    expect(benchRegressions([nights([90, 100, 300, 95, 110, 125], lower)], 0.25)).toEqual([]);
    // Higher is better: a drop is the regression, a rise is not.
    expect(benchRegressions([nights([100, 100, 100, 100, 100, 70], higher)], 0.25)).toHaveLength(1);
    expect(benchRegressions([nights([100, 100, 100, 100, 100, 200], higher)], 0.25)).toEqual([]);
    // Only the window counts: the old 1,000s are out of a window of 3.
    expect(benchRegressions([nights([1000, 1000, 100, 100, 100, 130], lower)], 0.25, 3)).toHaveLength(1);
  });

  it('does not judge a figure with too few earlier runs, no target, or a zero median', () => {
    expect(benchRegressions([nights([100, 100, 100, 100, 500], lower)], 0.25)).toEqual([]);
    expect(benchRegressions([nights([100, 100, 100, 100, 100, 500])], 0.25)).toEqual([]);
    expect(benchRegressions([nights([0, 0, 0, 0, 0, 5], lower)], 0.25)).toEqual([]);
  });

  it('raises one alert naming each figure, only when asked', () => {
    const series = [nights([100, 100, 100, 100, 100, 150], lower)];
    expect(benchRegressionAlert(series, {})).toBeUndefined();
    expect(benchRegressionAlert(series, { benchRegression: 0.25 })).toEqual({
      kind: 'bench-regression',
      message:
        '1 bench figure is more than 25% worse than the median of 5 runs before: agent-bench · rss 150 MiB (median 100 MiB, 50% worse)',
    });
    expect(benchRegressionAlert(series, { benchRegression: 0.6 })).toBeUndefined();
  });
});

describe('normalizeMessage', () => {
  it.each([
    ['pod kh-3f9a-p/liveness-2 not Running within 90s', 'pod <name>/<name> not Running within <n>s'],
    ['container 3f1c9ab2e4d8aa01 exited 137', 'container <id> exited <n>'],
    ['dial 10.88.0.14:8080: connection refused', 'dial <ip>: connection refused'],
    ['uid 0b6f0e5e-2c7a-4b6a-9f8e-0123456789ab gone', 'uid <id> gone'],
    ['took 1.5 s,   then   2048 bytes', 'took <n> s, then <n> bytes'],
    ['ImagePullBackOff: "registry:5000/kh/busybox:dev"', 'ImagePullBackOff: "registry:<n>/kh/busybox:dev"'],
  ])('%s', (message, signature) => {
    expect(normalizeMessage(message)).toBe(signature);
  });
});
