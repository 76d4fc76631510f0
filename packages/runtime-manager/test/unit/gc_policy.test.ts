import { describe, expect, it } from 'vitest';
import {
  type GCContainer,
  type GCContext,
  selectContainersToEvict,
  selectPodLogDirsToRemove,
  selectSandboxesToEvict,
} from '../../src/kuberuntime/gc_policy.js';

const NOW = 1_000_000;
const ctx = (deleted: string[] = [], extra: Partial<GCContext> = {}): GCContext => ({
  now: NOW,
  allSourcesReady: true,
  evictNonDeletedPods: false,
  pods: { shouldPodContentBeRemoved: (u) => deleted.includes(u), shouldPodRuntimeBeRemoved: () => false },
  ...extra,
});
const dead = (id: string, podUid: string, name: string, createdAt: number): GCContainer => ({
  id,
  podUid,
  name,
  createdAt,
  state: 'exited',
});
const ids = (l: { id: string }[]) => l.map((x) => x.id);

describe('container GC selection', () => {
  const containers = [
    dead('a1', 'A', 'c', 100),
    dead('a2', 'A', 'c', 200),
    dead('a3', 'A', 'c', 300),
    dead('b1', 'B', 'c', 150),
    dead('b2', 'B', 'c', 250),
    { ...dead('a4', 'A', 'c', 50), state: 'running' as const },
  ];

  it('never removes running or young containers', () => {
    const young = [dead('y', 'A', 'c', NOW - 10)];
    expect(
      selectContainersToEvict(young, { minAgeMs: 60, maxPerPodContainer: 0, maxContainers: 0 }, ctx()),
    ).toEqual([]);
    const r = selectContainersToEvict(
      containers,
      { minAgeMs: 0, maxPerPodContainer: 0, maxContainers: -1 },
      ctx(),
    );
    expect(ids(r)).not.toContain('a4');
  });

  it('-1 means no limit', () => {
    expect(
      selectContainersToEvict(containers, { minAgeMs: 0, maxPerPodContainer: -1, maxContainers: -1 }, ctx()),
    ).toEqual([]);
  });

  it('caps each (pod, container) unit, oldest first', () => {
    const r = selectContainersToEvict(
      containers,
      { minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1 },
      ctx(),
    );
    expect(ids(r)).toEqual(['a1', 'a2', 'b1']);
  });

  it('shares maxContainers fairly between units before cutting the globally oldest', () => {
    // 2 units, max 2 -> 1 per unit: the newest of each unit stays, not the two newest of A.
    const r = selectContainersToEvict(
      containers,
      { minAgeMs: 0, maxPerPodContainer: -1, maxContainers: 2 },
      ctx(),
    );
    expect(ids(r).sort()).toEqual(['a1', 'a2', 'b1']);
    // max 1 with 2 units: each keeps one, then the globally oldest of the rest goes.
    const r1 = selectContainersToEvict(
      containers,
      { minAgeMs: 0, maxPerPodContainer: -1, maxContainers: 1 },
      ctx(),
    );
    expect(ids(r1)).toEqual(['a1', 'a2', 'b1', 'b2']);
  });

  it('removes every dead container of a deleted pod, but only once all sources are ready', () => {
    const policy = { minAgeMs: 0, maxPerPodContainer: -1, maxContainers: -1 };
    expect(ids(selectContainersToEvict(containers, policy, ctx(['B'])))).toEqual(['b1', 'b2']);
    expect(selectContainersToEvict(containers, policy, ctx(['B'], { allSourcesReady: false }))).toEqual([]);
  });

  it('evictNonDeletedPods also clears terminated pods', () => {
    const policy = { minAgeMs: 0, maxPerPodContainer: -1, maxContainers: -1 };
    const c = ctx([], {
      evictNonDeletedPods: true,
      pods: { shouldPodContentBeRemoved: () => false, shouldPodRuntimeBeRemoved: (u) => u === 'A' },
    });
    expect(ids(selectContainersToEvict(containers, policy, c))).toEqual(['a1', 'a2', 'a3']);
  });
});

describe('sandbox GC selection', () => {
  const sbs = [
    { id: 's1', podUid: 'A', createdAt: 1, ready: false },
    { id: 's2', podUid: 'A', createdAt: 2, ready: false },
    { id: 's3', podUid: 'A', createdAt: 3, ready: true },
    { id: 't1', podUid: 'B', createdAt: 1, ready: false },
    { id: 't2', podUid: 'B', createdAt: 2, ready: false },
  ];
  it('keeps the newest sandbox of live pods and never a ready one or one with containers', () => {
    expect(ids(selectSandboxesToEvict(sbs, new Set(['s1']), ctx()))).toEqual(['s2', 't1']);
  });
  it('removes all dead sandboxes of deleted pods', () => {
    expect(ids(selectSandboxesToEvict(sbs, new Set(), ctx(['B'])))).toEqual(['s1', 's2', 't1', 't2']);
  });
});

describe('pod log directory GC', () => {
  it('removes directories of pods that are gone, once all sources are ready', () => {
    const dirs = ['ns_a_uid-1', 'ns_b_uid-2', 'junk'];
    expect(selectPodLogDirsToRemove(dirs, ctx(['uid-2']))).toEqual(['ns_b_uid-2']);
    expect(selectPodLogDirsToRemove(dirs, ctx(['uid-2'], { allSourcesReady: false }))).toEqual([]);
  });
});
