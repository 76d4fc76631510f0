import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { rankPods } from '../../src/eviction/rank.js';
import type { PodUsage } from '../../src/eviction/types.js';

// The kubelet's eviction ranking through rankPods: the Test* cases are upstream's helpers_test.go
// tables (pods, requests, usage, expected order); the others pin the rest of its comparators.
const Mi = 1024 * 1024;

function pod(
  name: string,
  priority: number,
  requests: Record<string, string> = {},
  limits: Record<string, string> = {},
): V1Pod {
  const c: V1Container = { name, image: 'busybox', resources: { requests, limits } };
  return { metadata: { name, uid: name }, spec: { priority, containers: [c] } };
}

const memoryStats = (entries: [V1Pod, number][]) =>
  new Map<string, PodUsage>(
    entries.map(([p, bytes]) => [
      p.metadata!.uid!,
      {
        uid: p.metadata!.uid!,
        containers: [{ name: p.metadata!.name!, memoryWorkingSetBytes: bytes }],
        volumes: [],
      },
    ]),
  );

const names = (pods: V1Pod[]) => pods.map((p) => p.metadata?.name);

describe('eviction ranking (upstream helpers_test.go)', () => {
  it('TestOrderedByExceedsRequestMemory: a pod above its request goes before one below', () => {
    const below = pod('below-requests', 0, { memory: '200Mi' });
    const exceeds = pod('exceeds-requests', 0, { memory: '100Mi' });
    const stats = memoryStats([
      [below, 199 * Mi],
      [exceeds, 101 * Mi],
    ]);
    expect(names(rankPods([below, exceeds], 'memory', stats))).toEqual([
      'exceeds-requests',
      'below-requests',
    ]);
  });

  it('TestOrderedByPriority: lower priority first', () => {
    const low = pod('low-priority', -134);
    const medium = pod('medium-priority', 1);
    const high = pod('high-priority', 12534);
    const stats = memoryStats([
      [low, 0],
      [medium, 0],
      [high, 0],
    ]);
    expect(names(rankPods([high, medium, low], 'memory', stats))).toEqual([
      'low-priority',
      'medium-priority',
      'high-priority',
    ]);
  });

  it('TestOrderedByMemory: above requests, then priority, then usage above request', () => {
    const p1 = pod('best-effort-high', 0);
    const p2 = pod('best-effort-low', 0);
    const p3 = pod('burstable-high', 0, { memory: '100Mi' }, { memory: '1Gi' });
    const p4 = pod('burstable-low', 0, { memory: '100Mi' }, { memory: '1Gi' });
    const p5 = pod('guaranteed-high', 0, { memory: '1Gi' }, { memory: '1Gi' });
    const p6 = pod('guaranteed-low', 0, { memory: '1Gi' }, { memory: '1Gi' });
    const stats = memoryStats([
      [p1, 500 * Mi],
      [p2, 300 * Mi],
      [p3, 800 * Mi],
      [p4, 300 * Mi],
      [p5, 800 * Mi],
      [p6, 200 * Mi],
    ]);
    expect(names(rankPods([p1, p2, p3, p4, p5, p6], 'memory', stats))).toEqual([
      'burstable-high',
      'best-effort-high',
      'best-effort-low',
      'burstable-low',
      'guaranteed-high',
      'guaranteed-low',
    ]);
  });

  it('rankMemoryPressure: among pods above their requests, lower priority first, then the most above', () => {
    const lowHigh = pod('low-priority-high-usage', -1, { memory: '100Mi' });
    const lowLow = pod('low-priority-low-usage', -1, { memory: '100Mi' });
    const highHigh = pod('high-priority-high-usage', 1, { memory: '100Mi' });
    const highBelow = pod('high-priority-below-request', 1, { memory: '1Gi' });
    const lowBelow = pod('low-priority-below-request', -1, { memory: '1Gi' });
    const stats = memoryStats([
      [lowHigh, 900 * Mi],
      [lowLow, 200 * Mi],
      [highHigh, 900 * Mi],
      [highBelow, 300 * Mi],
      [lowBelow, 100 * Mi],
    ]);
    // Above its request beats priority: the high-priority pod above goes before the low one below.
    expect(names(rankPods([highBelow, lowBelow, highHigh, lowLow, lowHigh], 'memory', stats))).toEqual([
      'low-priority-high-usage',
      'low-priority-low-usage',
      'high-priority-high-usage',
      'low-priority-below-request',
      'high-priority-below-request',
    ]);
  });

  it('rankPIDPressure: priority, then the most processes', () => {
    const a = pod('low-few', 0);
    const b = pod('low-many', 0);
    const c = pod('high-many', 10);
    const stats = new Map<string, PodUsage>(
      [
        [a, 10],
        [b, 1000],
        [c, 5000],
      ].map(([p, n]) => [
        (p as V1Pod).metadata!.uid!,
        { uid: (p as V1Pod).metadata!.uid!, containers: [], volumes: [], processCount: n as number },
      ]),
    );
    expect(names(rankPods([c, a, b], 'pids', stats))).toEqual(['low-many', 'low-few', 'high-many']);
  });

  it('a pod without stats goes first, as the kubelet ranks one it cannot measure', () => {
    const measured = pod('measured', 0, { memory: '1Mi' });
    const unknown = pod('unknown', 1000);
    expect(names(rankPods([measured, unknown], 'memory', memoryStats([[measured, 900 * Mi]])))).toEqual([
      'unknown',
      'measured',
    ]);
  });
});
