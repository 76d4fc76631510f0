import { describe, expect, it } from 'vitest';
import {
  buildReportModel,
  contractTable,
  countCells,
  cpuSummary,
  criLatencyByMethod,
  matrixAxes,
  podStartupByRuntime,
  startupBreakdownByRuntime,
} from '../../src/report/aggregate.js';
import { startupBreakdown } from '../../src/results/startup.js';
import { BASELINE_PATH, cell, loadFixture, run, SAMPLE_PATH } from './fixtures.js';

const cri = (t: number, method: string, durationMs: number, code = 'OK') => ({
  t,
  kind: 'cri-call' as const,
  summary: method,
  method,
  durationMs,
  code,
});

describe('countCells', () => {
  it('counts each outcome and the total', () => {
    const cells = [
      cell('a', '1'),
      cell('a', '2', { outcome: 'failed' }),
      cell('a', '3', { outcome: 'skipped' }),
    ];
    expect(countCells(cells)).toEqual({ total: 3, passed: 1, failed: 1, skipped: 1 });
    expect(countCells([])).toEqual({ total: 0, passed: 0, failed: 0, skipped: 0 });
  });
});

describe('matrixAxes', () => {
  it('keeps the declared order and appends runtimes and scenarios only seen in cells', () => {
    const results = run([cell('docker', 'probes'), cell('containerd', 'gc')], {
      runtimes: [{ name: 'docker', runtimeName: 'docker', runtimeVersion: '20.10.24' }],
      scenarios: ['probes'],
    });
    const axes = matrixAxes(results);
    expect(axes.runtimes.map((r) => r.name)).toEqual(['docker', 'containerd']);
    expect(axes.runtimes[1]).toMatchObject({ runtimeVersion: 'unknown' });
    expect(axes.scenarios).toEqual(['probes', 'gc']);
  });
});

describe('latency aggregation', () => {
  it('pools podStartupMs per runtime across cells and leaves out runtimes without samples', () => {
    const results = run([
      cell('containerd', 'a', { podStartupMs: [1200, 900] }),
      cell('containerd', 'b', { podStartupMs: [1500, 1000, 1100] }),
      cell('docker', 'a'),
    ]);
    expect(podStartupByRuntime(results, matrixAxes(results).runtimes)).toEqual([
      { runtime: 'containerd', count: 5, min: 900, p50: 1100, p90: 1500, p99: 1500, max: 1500 },
    ]);
  });

  it("pools the cells' per-pod start-up rows per runtime, with the floor and the target", () => {
    const row = (ms: number) => ({ pod: `ns/p${ms}`, totalMs: ms, stagesMs: [0, 0, 0, 0, ms, 0, 0, 0, 0] });
    const results = run([
      cell('containerd', 'a', {
        startupBreakdown: startupBreakdown([row(100), row(300)]),
        podStartupMs: [310],
      }),
      cell('containerd', 'startup', {
        startupBreakdown: startupBreakdown([row(200)]),
        startupFloor: { singleMs: 100 },
        podStartupMs: [190, 220],
      }),
      cell('docker', 'a', { podStartupMs: [500] }), // no breakdown, no floor: left out
    ]);
    expect(startupBreakdownByRuntime(results, matrixAxes(results).runtimes)).toEqual([
      {
        runtime: 'containerd',
        pods: 3,
        total: { p50: 200, p90: 300, p99: 300 },
        stages: expect.arrayContaining([{ stage: 'sandbox', p50: 200, p90: 300, p99: 300 }]),
        floor: { singleMs: 100 },
        target: { p50Ms: 220, floorMs: 100, ratio: 2.2, limit: 2, met: false },
      },
    ]);
  });

  it('groups cri-call entries by method and runtime, counts non-OK codes, ignores other kinds', () => {
    const results = run([
      cell('containerd', 'a', {
        timeline: [
          cri(0, 'RunPodSandbox', 96),
          cri(100, 'RunPodSandbox', 120),
          cri(300, 'StopContainer', 30_000, 'DEADLINE_EXCEEDED'),
          { t: 400, kind: 'event', summary: 'Normal Started' },
          { t: 500, kind: 'cri-call', summary: 'no latency recorded', method: 'Version' },
        ],
      }),
      cell('docker', 'a', { timeline: [cri(0, 'RunPodSandbox', 180)] }),
    ]);
    const rows = criLatencyByMethod(results, matrixAxes(results).runtimes);
    expect(rows.map((r) => [r.method, r.runtime, r.source, r.count, r.errors, r.p50, r.max])).toEqual([
      ['RunPodSandbox', 'containerd', 'harness', 2, 0, 96, 120],
      ['RunPodSandbox', 'docker', 'harness', 1, 0, 180, 180],
      ['StopContainer', 'containerd', 'harness', 1, 1, 30_000, 30_000],
    ]);
  });

  it("takes a runtime's every-call statistics over its sampled timeline, by caller", () => {
    const stats = { count: 1_000, errors: 3, min: 1, p50: 2, p90: 5, p99: 40, max: 90 };
    const results = run(
      [
        cell('containerd', 'a', {
          // A sample of the same calls: must not be counted a second time.
          timeline: [{ ...cri(0, 'ListContainers', 2), source: 'agent' }, cri(5, 'Version', 1)],
        }),
        cell('fake', 'a', {
          timeline: [{ ...cri(0, 'RunPodSandbox', 3), source: 'agent' }, cri(5, 'Version', 1)],
        }),
      ],
      {
        runtimes: [
          {
            name: 'containerd',
            runtimeName: 'containerd',
            runtimeVersion: '1.6',
            criCalls: [
              { source: 'agent', method: 'ListContainers', ...stats },
              { source: 'harness', method: 'Version', ...stats, count: 4, errors: 0 },
            ],
          },
          { name: 'fake', runtimeName: 'fake', runtimeVersion: '0.1' },
        ],
      },
    );
    const rows = criLatencyByMethod(results, matrixAxes(results).runtimes);
    expect(rows.map((r) => [r.method, r.runtime, r.source, r.count, r.errors, r.p99])).toEqual([
      ['ListContainers', 'containerd', 'agent', 1_000, 3, 40],
      ['RunPodSandbox', 'fake', 'agent', 1, 0, 3],
      ['Version', 'containerd', 'harness', 4, 0, 40],
      ['Version', 'fake', 'harness', 1, 0, 1],
    ]);
  });
});

describe('contractTable', () => {
  const stat = { min: 1, p50: 1, p90: 1, p99: 1, max: 1 };
  it('has a row per method, kubelet order first, a column per runtime, and never drops Unimplemented', () => {
    const rows = contractTable([
      {
        name: 'containerd',
        runtimeName: 'containerd',
        runtimeVersion: '1.6',
        // No criContract (an older results file): built from the statistics.
        criCalls: [
          {
            source: 'agent',
            method: 'RuntimeConfig',
            count: 1,
            errors: 1,
            codes: { UNIMPLEMENTED: 1 },
            ...stat,
          },
          { source: 'agent', method: 'StreamImages', count: 1, errors: 0, ...stat },
        ],
      },
      {
        name: 'docker',
        runtimeName: 'docker',
        runtimeVersion: '20',
        criContract: [{ method: 'RuntimeConfig', service: 'RuntimeService', status: 'called', count: 2 }],
      },
      // Nothing recorded: no column entries rather than a column of "not called".
      { name: 'fake', runtimeName: 'fake', runtimeVersion: '0.1' },
    ]);
    const rc = rows.find((r) => r.method === 'RuntimeConfig')!;
    expect(rc).toMatchObject({ service: 'RuntimeService', when: expect.stringContaining('cgroup driver') });
    expect(rc.runtimes).toEqual({
      containerd: { status: 'unimplemented', text: 'Unimplemented: 1 call, UNIMPLEMENTED ×1' },
      docker: { status: 'called', text: '2 calls' },
    });
    expect(rows[0]!.method).toBe('Version');
    expect(rows.find((r) => r.method === 'UpdateContainerResources')!.runtimes.containerd).toEqual({
      status: 'not-called',
      text: 'not called',
    });
    expect(rows.at(-1)).toMatchObject({
      method: 'StreamImages',
      runtimes: { containerd: { status: 'called' } },
    });
    expect(rows.at(-1)!.when).toBeUndefined();
  });
});

describe('buildReportModel on the recorded run', () => {
  const model = buildReportModel(loadFixture(SAMPLE_PATH), {
    baseline: loadFixture(BASELINE_PATH),
    now: new Date('2026-11-22T04:00:00Z'),
  });

  it('has every cell in matrix order with its id, and the counts', () => {
    expect(model.cells).toHaveLength(18);
    expect(model.cells.slice(0, 4).map((c) => c.id)).toEqual([
      'containerd/node-registration',
      'docker/node-registration',
      'fake/node-registration',
      'containerd/status-reporting',
    ]);
    expect(model.counts).toEqual({ total: 18, passed: 15, failed: 2, skipped: 1 });
    expect(model.countsByRuntime).toEqual({
      containerd: { total: 6, passed: 5, failed: 1, skipped: 0 },
      docker: { total: 6, passed: 5, failed: 1, skipped: 0 },
      fake: { total: 6, passed: 5, failed: 0, skipped: 1 },
    });
    expect(model.generatedAt).toBe('2026-11-22T04:00:00.000Z');
  });

  it('summarises the baseline comparison', () => {
    expect(model.baseline).toMatchObject({
      runId: 'nightly-2026-11-21-0300',
      counts: { total: 18, passed: 15, failed: 2, skipped: 1 },
      regressions: ['docker/probes', 'containerd/gc'],
      criRegressions: [
        { runtime: 'containerd', source: 'agent', method: 'CreateContainer', p99: 14.4, baselineP99: 5 },
      ],
      fixed: ['fake/pod-lifecycle'],
      missing: [],
    });
    expect(
      model.cells.find((c) => c.id === 'containerd/gc')?.comparison?.durationDeltaPct,
    ).toBeGreaterThanOrEqual(50);
  });

  it('derives latency charts from the cells: every runtime with pods, every CRI method seen', () => {
    expect(model.podStartup.map((r) => r.runtime)).toEqual(['containerd', 'docker', 'fake']);
    for (const r of model.podStartup) expect(r.min <= r.p50 && r.p50 <= r.p90 && r.p90 <= r.p99).toBe(true);
    const methods = new Set(model.criLatency.map((r) => r.method));
    expect(methods).toContain('RunPodSandbox');
    expect(methods).toContain('ExecSync');
    // The agent's calls, from the runtimes' every-call statistics.
    const agent = model.criLatency.filter((r) => r.source === 'agent' && r.runtime === 'containerd');
    expect(agent.map((r) => r.method)).toEqual(expect.arrayContaining(['CreateContainer', 'ListContainers']));
    const inTimelines = model.cells
      .filter((c) => c.runtime === 'containerd')
      .flatMap((c) => c.timeline)
      .filter((e) => e.method === 'ListContainers').length;
    expect(agent.find((r) => r.method === 'ListContainers')!.count).toBe(154);
    expect(154).toBeGreaterThan(inTimelines);
    expect(model.criLatency.some((r) => r.source === 'harness' && r.method === 'Version')).toBe(true);
    expect(model.criLatency.find((r) => r.method === 'StopContainer' && r.runtime === 'docker')?.errors).toBe(
      1,
    );
    expect(model.benchmarks).toHaveLength(4);
  });

  it('has no baseline section without a baseline', () => {
    const plain = buildReportModel(loadFixture(SAMPLE_PATH));
    expect(plain.baseline).toBeUndefined();
    expect(plain.cells.every((c) => c.comparison === undefined)).toBe(true);
  });
});

describe('cpuSummary', () => {
  it("sums each runtime's nodes and the cells' node CPU; buildReportModel carries it", () => {
    const cpu = {
      nodes: [
        { name: 'kh-1-containerd', runtime: 'containerd', seconds: 100.25 },
        { name: 'kh-1-containerd-2', runtime: 'containerd', seconds: 50.5 },
        { name: 'kh-1-docker', runtime: 'docker', seconds: 80 },
      ],
      world: [{ name: 'apiserver', seconds: 12 }],
      harnessSeconds: 30,
      totalSeconds: 272.75,
      hostSeconds: 400,
    };
    const cells = [
      cell('containerd', 'a', { cpu: { nodeSeconds: 40.1, hostSeconds: 90 } }),
      cell('docker', 'a', { cpu: { nodeSeconds: 30.2 } }),
      cell('docker', 'b'),
    ];
    const summary = cpuSummary(cpu, cells);
    expect(summary).toEqual({
      run: cpu,
      byRuntime: [
        { runtime: 'containerd', nodeSeconds: 150.75 },
        { runtime: 'docker', nodeSeconds: 80 },
      ],
      cellNodeSeconds: 70.3,
    });
    expect(buildReportModel(run(cells, { cpu })).cpu).toEqual(summary);
    expect(buildReportModel(run(cells)).cpu).toBeUndefined();
  });
});
