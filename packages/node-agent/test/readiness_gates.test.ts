// Readiness gates: Ready waits for every gate's condition to be True, with the kubelet's reason
// and messages, and a status-only change that flips a gate makes the pod due for a sync.
import { FakeClock } from '@kh/apimachinery';
import { emptyPodStatus } from '@kh/runtime-manager';
import type { V1Node, V1Pod, V1PodCondition } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { PredicateAdmitHandler } from '../src/admission/predicate.js';
import { readinessCondition } from '../src/status/generate.js';
import { withReadinessGates } from '../src/status/readiness_gates.js';
import { needToReconcilePodReadiness } from '../src/status/reconcile_readiness.js';
import { relistingPodCache } from './helpers/pleg.js';
import { testPodLayer } from './helpers/pod_layer.js';

const podReadyCondition = (pod: V1Pod, unready: string[], completed: boolean) =>
  withReadinessGates(pod, readinessCondition('Ready', unready, completed));

const gated = (conditions: V1PodCondition[], ready = true): V1Pod => ({
  metadata: { name: 'pod-ready', uid: 'u' },
  spec: {
    containers: [{ name: 'c', image: 'busybox' }],
    readinessGates: [
      { conditionType: 'k8s.io/test-condition1' },
      { conditionType: 'k8s.io/test-condition2' },
    ],
  },
  status: { phase: 'Running', conditions, containerStatuses: [{ name: 'c', ready } as never] },
});

describe('withReadinessGates', () => {
  it('is not ready while a gate condition is missing or not True, naming each', () => {
    const c = podReadyCondition(gated([{ type: 'k8s.io/test-condition1', status: 'False' }]), [], false);
    expect(c).toEqual({
      type: 'Ready',
      status: 'False',
      reason: 'ReadinessGatesNotReady',
      message:
        'the status of pod readiness gate "k8s.io/test-condition1" is not "True", but False, ' +
        'corresponding condition of pod readiness gate "k8s.io/test-condition2" does not exist.',
    });
  });

  it('is ready once every gate is True; unready containers come first', () => {
    const both = [
      { type: 'k8s.io/test-condition1', status: 'True' },
      { type: 'k8s.io/test-condition2', status: 'True' },
    ];
    expect(podReadyCondition(gated(both), [], false)).toEqual({ type: 'Ready', status: 'True' });
    expect(podReadyCondition(gated(both), ['c'], false)).toMatchObject({
      status: 'False',
      reason: 'ContainersNotReady',
    });
  });
});

describe('needToReconcilePodReadiness', () => {
  it('says so when the stored Ready disagrees with the gates, only for gated pods', () => {
    const ready = { type: 'Ready', status: 'True' };
    const gate1 = { type: 'k8s.io/test-condition1', status: 'True' };
    const gate2 = { type: 'k8s.io/test-condition2', status: 'True' };
    expect(needToReconcilePodReadiness(gated([ready, gate1, gate2]))).toBe(false);
    expect(needToReconcilePodReadiness(gated([ready, { ...gate1, status: 'False' }, gate2]))).toBe(true);
    const notReady = podReadyCondition(gated([gate1]), [], false);
    expect(needToReconcilePodReadiness(gated([notReady, gate1]))).toBe(false);
    expect(needToReconcilePodReadiness(gated([notReady, gate1, gate2]))).toBe(true);
    const ungated: V1Pod = { ...gated([ready]), spec: { containers: [{ name: 'c', image: 'b' }] } };
    expect(
      needToReconcilePodReadiness({
        ...ungated,
        status: { ...ungated.status, conditions: [{ type: 'Ready', status: 'False' }] },
      }),
    ).toBe(false);
  });
});

describe('a status-only update of a gated pod', () => {
  it('syncs the pod when its gates now disagree with its Ready, and only then', async () => {
    const clock = new FakeClock();
    const { cache: podCache, stop } = relistingPodCache(clock);
    try {
      let syncs = 0;
      const runtime = {
        syncPod: async () => {
          syncs++;
          return { steps: [] };
        },
        killPod: async () => {},
        getPodStatus: async (uid: string) => emptyPodStatus(uid, 0),
        getPods: async () => [],
        deleteContainer: async () => {},
      };
      const node: V1Node = {
        metadata: { name: 'node-a' },
        status: { allocatable: { cpu: '2', pods: '10' } },
      };
      const { lifecycle, workers } = testPodLayer({
        runtime,
        podCache,
        clock,
        admit: new PredicateAdmitHandler(() => node),
      });
      const gate1 = { type: 'k8s.io/test-condition1', status: 'True' };
      const gate2 = { type: 'k8s.io/test-condition2', status: 'True' };
      const ready = { type: 'Ready', status: 'True' };
      await lifecycle.handlePodAdditions([gated([ready, gate1, gate2])]);
      await workers.settle();
      const before = syncs;
      await lifecycle.handlePodReconcile([gated([ready, gate1, gate2])]);
      await workers.settle();
      expect(syncs).toBe(before);
      await lifecycle.handlePodReconcile([gated([ready, { ...gate1, status: 'False' }, gate2])]);
      await workers.settle();
      expect(syncs).toBe(before + 1);
    } finally {
      stop();
    }
  });
});
