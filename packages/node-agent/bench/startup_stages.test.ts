import { describe, expect, it } from 'vitest';
import type { PodStartupRecord } from '../src/pods/startup_tracker.js';
import { BENCH_STAGES, podStageRows } from './startup_stages.js';

const record = (name: string, over: Partial<PodStartupRecord> = {}): PodStartupRecord => ({
  uid: `uid-${name}`,
  namespace: 'default',
  name,
  seenAt: 1_010,
  admittedAt: 1_012,
  workerStartedAt: 1_015,
  preparedAt: { status: 1_016, cgroups: 1_018, secrets: 1_018 },
  sandboxStartedAt: 1_020,
  sandboxReadyAt: 1_120,
  createMs: 30,
  startMs: 50,
  startedAt: 1_210,
  statusWrittenAt: 1_700,
  ...over,
});

describe('podStageRows', () => {
  it("splits a pod's start-up into the agent's stages and the benchmark's observed one, adding up to its total", () => {
    const { rows, prepareRows, incomplete } = podStageRows(
      [record('a')],
      new Map([['a', 1_000]]),
      new Map([['a', 1_760]]),
    );
    expect(incomplete).toBe(0);
    // prepare (5 ms): status, cgroups, secrets, runtime.
    expect(prepareRows).toEqual([[1, 2, 0, 2]]);
    expect(BENCH_STAGES.at(-1)).toBe('observed');
    expect(rows).toEqual([[10, 2, 3, 5, 100, 10, 30, 50, 490, 60]]);
    expect(rows[0]?.reduce((a, b) => a + b, 0)).toBe(1_760 - 1_000);
  });

  it('counts pods the agent did not record through every step, or the benchmark never saw started', () => {
    const { rows, incomplete } = podStageRows(
      [record('a', { statusWrittenAt: undefined }), record('b'), record('c')],
      new Map([
        ['a', 1_000],
        ['b', 1_000],
        ['c', 1_000],
        ['gone', 1_000],
      ]),
      new Map([
        ['a', 1_800],
        ['b', 1_800],
      ]),
    );
    expect(rows).toHaveLength(1);
    expect(incomplete).toBe(3);
  });
});
