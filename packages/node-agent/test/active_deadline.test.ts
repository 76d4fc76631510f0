// activeDeadlineSeconds: the pod fails with DeadlineExceeded once the deadline passed since its
// start, the pass that sees it ends the pod, and the sync loop syncs it as soon as it is due.
import { FakeClock } from '@kh/apimachinery';
import { emptyPodStatus, newCrashLoopBackoff, type PodStatus } from '@kh/runtime-manager';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { PredicateAdmitHandler } from '../src/admission/predicate.js';
import {
  DEADLINE_EXCEEDED_MESSAGE,
  DEADLINE_EXCEEDED_REASON,
  pastActiveDeadline,
  withActiveDeadline,
} from '../src/pods/active_deadline.js';
import { PodManager } from '../src/pods/pod_manager.js';
import { PodSync } from '../src/pods/pod_sync.js';
import { ReasonCache } from '../src/status/reason_cache.js';
import { PodStatusManager } from '../src/status/status_manager.js';
import { MemoryNodeApi } from './helpers/memory_api.js';
import { relistingPodCache } from './helpers/pleg.js';
import { testPodLayer } from './helpers/pod_layer.js';

const withDeadline = (seconds?: number): V1Pod => ({
  metadata: { name: 'p', namespace: 'default', uid: 'uid-p' },
  spec: {
    nodeName: 'node-a',
    containers: [{ name: 'c', image: 'x' }],
    ...(seconds === undefined ? {} : { activeDeadlineSeconds: seconds }),
  },
});

const runtimeStatus = (): PodStatus => ({
  uid: 'uid-p',
  name: 'p',
  namespace: 'default',
  ips: [],
  sandboxStatuses: [],
  containerStatuses: [],
  timestamp: new Date(0),
});

describe('pastActiveDeadline', () => {
  it('counts from status.startTime: not before the deadline, from it on; never without one or a start', () => {
    const start = new Date(10_000);
    expect(pastActiveDeadline(withDeadline(5), start, 14_999)).toBe(false);
    expect(pastActiveDeadline(withDeadline(5), start.toISOString(), 15_000)).toBe(true);
    expect(pastActiveDeadline(withDeadline(), start, 1e12)).toBe(false);
    expect(pastActiveDeadline(withDeadline(5), undefined, 1e12)).toBe(false);
  });

  it('fails the status with the kubelet reason and message, leaving it alone before the deadline', () => {
    const status = { phase: 'Running', startTime: new Date(0) };
    expect(withActiveDeadline(withDeadline(5), status, 4_000)).toBe(status);
    expect(withActiveDeadline(withDeadline(5), status, 5_000)).toEqual({
      phase: 'Failed',
      startTime: new Date(0),
      reason: DEADLINE_EXCEEDED_REASON,
      message: DEADLINE_EXCEEDED_MESSAGE,
    });
    expect(DEADLINE_EXCEEDED_MESSAGE).toBe('Pod was active on the node longer than the specified deadline');
  });
});

describe('a pod past its active deadline', () => {
  it('is reported Failed/DeadlineExceeded by the pass that sees it, which then ends the pod', async () => {
    const clock = new FakeClock();
    const statusManager = new PodStatusManager({ api: new MemoryNodeApi(), clock });
    const sync = new PodSync({
      runtime: {
        syncPod: async () => ({ steps: [] }),
        killPod: async () => {},
        getPodStatus: async (uid) => emptyPodStatus(uid, 0),
      },
      statusManager,
      pods: new PodManager(),
      backoff: newCrashLoopBackoff(clock),
      reasons: new ReasonCache(),
      clock,
      nodeIP: '10.0.0.5',
    });
    expect(await sync.syncPod(withDeadline(5), runtimeStatus())).toBe(false);
    expect(statusManager.getPodStatus('uid-p')?.phase).not.toBe('Failed');
    clock.step(5_000);
    // Terminal: the worker tears the pod down.
    expect(await sync.syncPod(withDeadline(5), runtimeStatus())).toBe(true);
    expect(statusManager.getPodStatus('uid-p')).toMatchObject({
      phase: 'Failed',
      reason: 'DeadlineExceeded',
      message: DEADLINE_EXCEEDED_MESSAGE,
    });
  });

  it('is due for a sync once the deadline passes, before its periodic resync, and no more once failed', async () => {
    const clock = new FakeClock();
    const { cache: podCache, stop } = relistingPodCache(clock);
    try {
      const runtime = {
        syncPod: async () => ({ steps: [] }),
        killPod: async () => {},
        getPodStatus: async (uid: string) => emptyPodStatus(uid, 0),
        getPods: async () => [],
        deleteContainer: async () => {},
      };
      const node: V1Node = {
        metadata: { name: 'node-a' },
        status: { allocatable: { cpu: '2', pods: '10' } },
      };
      const { lifecycle, workers, statusManager } = testPodLayer({
        runtime,
        podCache,
        clock,
        admit: new PredicateAdmitHandler(() => node),
      });
      await lifecycle.handlePodAdditions([withDeadline(5)]);
      await workers.settle();
      expect(lifecycle.podsToSync(clock.now() + 4_000)).toEqual([]);
      expect(lifecycle.podsToSync(clock.now() + 5_000).map((p) => p.metadata?.name)).toEqual(['p']);
      clock.step(5_000);
      await lifecycle.handlePodSyncs(lifecycle.podsToSync(clock.now()));
      await workers.settle();
      expect(statusManager.getPodStatus('uid-p')?.reason).toBe('DeadlineExceeded');
      expect(lifecycle.podsToSync(clock.now() + 30_000)).toEqual([]);
    } finally {
      stop();
    }
  });
});
