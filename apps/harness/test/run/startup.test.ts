import { describe, expect, it } from 'vitest';
import type { AgentStartupRecord } from '../../src/results/startup.js';
import { cellStartupBreakdown } from '../../src/run/startup.js';

const record = (
  name: string,
  seenAt: number,
  over: Partial<AgentStartupRecord> = {},
): AgentStartupRecord => ({
  uid: `${name}-${seenAt}`,
  namespace: 'ns',
  name,
  seenAt,
  admittedAt: seenAt + 10,
  workerStartedAt: seenAt + 10,
  sandboxStartedAt: seenAt + 20,
  sandboxReadyAt: seenAt + 120,
  createMs: 10,
  startMs: 40,
  startedAt: seenAt + 175,
  statusWrittenAt: seenAt + 200,
  ...over,
});

describe('cellStartupBreakdown', () => {
  it("starts each pod at the timeline's first sight of it; a later pod of that name at the agent's", () => {
    const start = 10_000;
    const timeline = [
      { t: 5, kind: 'note' as const, summary: 'x' },
      {
        t: 40,
        kind: 'pod-phase' as const,
        summary: 'ns/a ∅ → Pending',
        detail: { pod: 'ns/a', phase: 'Pending' },
      },
      {
        t: 300,
        kind: 'pod-phase' as const,
        summary: 'ns/a Pending → Running',
        detail: { pod: 'ns/a', phase: 'Running' },
      },
    ];
    const b = cellStartupBreakdown(
      [
        record('a', 10_050),
        record('a', 20_000), // recreated under the same name
        record('b', 10_100, { statusWrittenAt: undefined }), // never got all containers running
      ],
      timeline,
      start,
    )!;
    expect(b.pods).toBe(2);
    expect(b.incomplete).toBe(1);
    expect(b.perPod?.map((r) => [r.totalMs, r.stagesMs[0]])).toEqual([
      [210, 10], // created at 10_040, seen by the agent at 10_050
      [200, 0],
    ]);
  });

  it('is undefined when the agent recorded no pod', () => {
    expect(cellStartupBreakdown([], [], 0)).toBeUndefined();
  });
});
