import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { PodStartupTracker } from '../../src/world/timeline.js';

const pod = (states: ('running' | 'waiting')[], created = '2026-01-01T00:00:00Z'): V1Pod => ({
  metadata: { uid: 'u1', namespace: 'ns', name: 'p', creationTimestamp: new Date(created) },
  spec: { containers: states.map((_, i) => ({ name: `c${i}` })) },
  status: {
    containerStatuses: states.map((s, i) => ({
      name: `c${i}`,
      image: 'i',
      imageID: '',
      ready: s === 'running',
      restartCount: 0,
      state: s === 'running' ? { running: {} } : { waiting: { reason: 'ContainerCreating' } },
    })),
  },
});

describe('PodStartupTracker', () => {
  const t0 = new Date('2026-01-01T00:00:00Z').getTime();

  it('measures from first sight to every container running, once per pod', () => {
    const t = new PodStartupTracker();
    expect(t.observe(pod(['waiting', 'waiting']), t0 + 100)).toBeUndefined();
    expect(t.observe(pod(['running', 'waiting']), t0 + 900)).toBeUndefined();
    expect(t.observe(pod(['running', 'running']), t0 + 1_450)).toBe(1_350);
    expect(t.observe(pod(['running', 'running']), t0 + 5_000)).toBeUndefined();
  });

  it('bounds a pod first seen late by its creation second', () => {
    const t = new PodStartupTracker();
    expect(t.observe(pod(['running']), t0 + 4_000)).toBe(4_000 - 999);
  });

  it('ignores pods without containers or statuses', () => {
    const t = new PodStartupTracker();
    expect(t.observe({ metadata: { uid: 'x' } }, t0)).toBeUndefined();
  });
});
