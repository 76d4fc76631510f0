import { describe, expect, it } from 'vitest';
import {
  type AgentStartupRecord,
  podStartupRow,
  rowProblems,
  STARTUP_ROWS_KEPT,
  startupBreakdown,
  startupTargets,
  withStartupTargets,
} from '../../src/results/startup.js';
import { cell } from '../report/fixtures.js';

/** A pod through every step: seen at 1000, status written at 1300. */
const record = (over: Partial<AgentStartupRecord> = {}): AgentStartupRecord => ({
  uid: 'u',
  namespace: 'ns',
  name: 'p',
  seenAt: 1_000,
  admittedAt: 1_010,
  workerStartedAt: 1_011,
  sandboxStartedAt: 1_030,
  sandboxReadyAt: 1_130,
  createMs: 15,
  startMs: 45,
  startedAt: 1_200,
  statusWrittenAt: 1_300,
  ...over,
});

describe('podStartupRow', () => {
  it('splits creation to status written into the stages, which add up to the total', () => {
    const row = podStartupRow(record(), 990)!;
    // watch 10, admit 10, worker 1, prepare 19, sandbox 100, image 70-15-45=10, create 15, start 45, status 100
    expect(row).toEqual({ pod: 'ns/p', totalMs: 310, stagesMs: [10, 10, 1, 19, 100, 10, 15, 45, 100] });
    expect(rowProblems(row)).toEqual([]);
  });

  it("starts at the agent's sight when the creation is unknown or later (the agent's watch was first)", () => {
    expect(podStartupRow(record())?.stagesMs[0]).toBe(0);
    expect(podStartupRow(record(), 1_005)).toMatchObject({
      totalMs: 300,
      stagesMs: [0, 10, 1, 19, 100, 10, 15, 45, 100],
    });
  });

  it('has no row for a pod that missed a step', () => {
    expect(podStartupRow(record({ statusWrittenAt: undefined }))).toBeUndefined();
    expect(podStartupRow(record({ sandboxReadyAt: undefined }))).toBeUndefined();
  });
});

describe('rowProblems', () => {
  it('names stages out of order and stages that do not add up', () => {
    // Calls that overlapped: more time in create and start than between sandbox and the last start.
    const row = podStartupRow(record({ createMs: 60 }))!;
    expect(rowProblems(row)).toEqual(['ns/p: image is -35 ms']);
    expect(rowProblems({ pod: 'ns/q', totalMs: 10, stagesMs: [1, 1, 1, 1, 1, 1, 1, 1, 1] })).toEqual([
      'ns/q: stages add up to 9 ms, the total is 10 ms',
    ]);
  });
});

describe('startupBreakdown', () => {
  it('takes nearest-rank percentiles of the total and of each stage, and keeps the rows', () => {
    const rows = [100, 200, 300, 400].map((ms, i) => ({
      pod: `ns/p${i}`,
      totalMs: ms,
      stagesMs: [0, 0, 0, 0, ms, 0, 0, 0, 0],
    }));
    const b = startupBreakdown(rows, 2)!;
    expect(b).toMatchObject({ pods: 4, incomplete: 2, total: { p50: 200, p90: 400, p99: 400 } });
    expect(b.stages.map((s) => s.stage)).toEqual([
      'watch',
      'admit',
      'worker',
      'prepare',
      'sandbox',
      'image',
      'create',
      'start',
      'status',
    ]);
    expect(b.stages[4]).toEqual({ stage: 'sandbox', p50: 200, p90: 400, p99: 400 });
    expect(b.perPod).toHaveLength(4);
  });

  it('leaves the rows out of a big cell, and is undefined when no pod was seen', () => {
    const rows = Array.from({ length: STARTUP_ROWS_KEPT + 1 }, (_, i) => ({
      pod: `ns/p${i}`,
      totalMs: 1,
      stagesMs: [1, 0, 0, 0, 0, 0, 0, 0, 0],
    }));
    expect(startupBreakdown(rows)?.perPod).toBeUndefined();
    expect(startupBreakdown([])).toBeUndefined();
    expect(startupBreakdown([], 3)).toMatchObject({ pods: 0, incomplete: 3 });
  });
});

describe('startupTargets', () => {
  it("holds each runtime's pod start-up p50 against its floor: met at 2x or less", () => {
    const cells = [
      cell('a', 'startup', { startupFloor: { singleMs: 100 }, podStartupMs: [150, 190] }),
      cell('a', 'probes', { podStartupMs: [210] }),
      cell('b', 'startup', { startupFloor: { singleMs: 100 }, podStartupMs: [201] }),
      cell('c', 'probes', { podStartupMs: [50] }), // no floor: no target
    ];
    const targets = startupTargets(cells);
    expect(targets.get('a')).toEqual({ p50Ms: 190, floorMs: 100, ratio: 1.9, limit: 2, met: true });
    expect(targets.get('b')).toMatchObject({ ratio: 2.01, met: false });
    expect(targets.has('c')).toBe(false);
    const runtimes = withStartupTargets(
      [
        { name: 'a', runtimeName: 'a', runtimeVersion: '1' },
        { name: 'c', runtimeName: 'c', runtimeVersion: '1', startupTarget: targets.get('a')! },
      ],
      cells,
    );
    expect(runtimes[0]?.startupTarget?.met).toBe(true);
    expect(runtimes[1]).toEqual({ name: 'c', runtimeName: 'c', runtimeVersion: '1' });
  });
});
