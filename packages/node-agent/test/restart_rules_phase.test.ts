// The pod phase under ContainerRestartRules (kubelet 1.34's getPhase): a stopped container counts
// as restarting or not by its own rules and policy, so a pod Never whose container restarts stays
// Running and a pod Always whose container may not restart fails.
import type { V1Container, V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { podPhase } from '../src/status/generate.js';

const ON = { containerRestartRules: true };
const RESTART_ON_42 = [{ action: 'Restart', exitCodes: { operator: 'In', values: [42] } }];

const pod = (restartPolicy: string, main: Partial<V1Container>, init: V1Container[] = []): V1Pod => ({
  metadata: { name: 'p', namespace: 'ns', uid: 'u' },
  spec: { restartPolicy, containers: [{ name: 'main', image: 'busybox', ...main }], initContainers: init },
});
const exited = (exitCode: number): V1ContainerStatus => ({
  name: 'main',
  image: '',
  imageID: '',
  ready: false,
  restartCount: 0,
  state: { terminated: { exitCode } },
});
const crashLooping = (exitCode: number): V1ContainerStatus => ({
  ...exited(exitCode),
  state: { waiting: { reason: 'CrashLoopBackOff' } },
  lastState: { terminated: { exitCode } },
});

describe('podPhase with ContainerRestartRules', () => {
  it('keeps a pod Never Running while a rule restarts its container', () => {
    const p = pod('Never', { restartPolicy: 'Never', restartPolicyRules: RESTART_ON_42 });
    expect(podPhase(p, [], [exited(42)], false, ON)).toBe('Running');
    expect(podPhase(p, [], [crashLooping(42)], false, ON)).toBe('Running');
    expect(podPhase(p, [], [exited(1)], false, ON)).toBe('Failed');
  });

  it('fails a pod Always whose container says Never', () => {
    expect(podPhase(pod('Always', { restartPolicy: 'Never' }), [], [exited(1)], false, ON)).toBe('Failed');
    expect(podPhase(pod('Always', { restartPolicy: 'Never' }), [], [exited(0)], false, ON)).toBe('Succeeded');
  });

  it('keeps a pod Never Running while its container says Always', () => {
    expect(podPhase(pod('Never', { restartPolicy: 'Always' }), [], [exited(1)], false, ON)).toBe('Running');
  });

  it('follows the pod policy for a container without one, and is terminal once the pod is', () => {
    expect(podPhase(pod('Always', {}), [], [exited(1)], false, ON)).toBe('Running');
    expect(podPhase(pod('Always', { restartPolicy: 'Always' }), [], [exited(1)], true, ON)).toBe('Failed');
  });

  it('fails the pod on an init container that may not restart, whatever the pod policy', () => {
    const init = [{ name: 'i', image: 'busybox', restartPolicy: 'Never' }];
    const initFailed = [{ ...exited(1), name: 'i' }];
    expect(podPhase(pod('Always', {}, init), initFailed, [], false, ON)).toBe('Failed');
    expect(podPhase(pod('Never', {}, [{ name: 'i', image: 'busybox' }]), initFailed, [], false, ON)).toBe(
      'Failed',
    );
    expect(podPhase(pod('Always', {}, [{ name: 'i', image: 'busybox' }]), initFailed, [], false, ON)).toBe(
      'Pending',
    );
  });

  it('with the gate off the pod policy alone decides', () => {
    const p = pod('Never', { restartPolicy: 'Always' });
    expect(podPhase(p, [], [exited(1)], false)).toBe('Failed');
  });
});
