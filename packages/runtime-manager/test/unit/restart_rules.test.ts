// ContainerRestartRules in computePodActions: with the gate on, an exited regular container runs
// again per its first matching rule, then its own restartPolicy, then the pod's; each case of
// upstream's container_restart_policy.go has its rule here. With the gate off the pod's policy
// alone decides, as before.
import type { V1Container, V1ContainerRestartRule } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { ProbeResults } from '../../src/container/runtime.js';
import { computePodActions, type PodActionFeatures } from '../../src/kuberuntime/compute_pod_actions.js';
import { containerShouldRestart } from '../../src/kuberuntime/restart_rules.js';
import { c, cs, pod, sandbox, status } from './helpers.js';

const ON: PodActionFeatures = { containerRestartRules: true };
const restartOn = (operator: string, values: number[]): V1ContainerRestartRule[] => [
  { action: 'Restart', exitCodes: { operator, values } },
];

/** Starts of the pod's one container after it exited with `exitCode`. */
function starts(podPolicy: string, container: V1Container, exitCode: number, features = ON): number[] {
  const p = pod({ containers: [container], restartPolicy: podPolicy });
  return computePodActions(
    p,
    status([sandbox()], [cs(container, 'exited', { exitCode })]),
    undefined,
    undefined,
    features,
  ).containersToStart;
}

describe('ContainerRestartRules', () => {
  it('restarts on a matching rule although the container and the pod say Never', () => {
    const main = c('main', { restartPolicy: 'Never', restartPolicyRules: restartOn('In', [42]) });
    expect(starts('Never', main, 42)).toEqual([0]);
  });

  it('does not restart on a mismatching rule with container restartPolicy Never', () => {
    const main = c('main', { restartPolicy: 'Never', restartPolicyRules: restartOn('In', [42]) });
    const a = computePodActions(
      pod({ containers: [main], restartPolicy: 'Never' }),
      status([sandbox()], [cs(main, 'exited', { exitCode: 1 })]),
      undefined,
      undefined,
      ON,
    );
    // Nothing left to run: the pod is finished.
    expect(a).toMatchObject({ containersToStart: [], killPod: true });
  });

  it('container-level Never wins over the pod Always', () => {
    expect(starts('Always', c('main', { restartPolicy: 'Never' }), 1)).toEqual([]);
  });

  it('container-level Always wins over the pod Never', () => {
    expect(starts('Never', c('main', { restartPolicy: 'Always' }), 1)).toEqual([0]);
  });

  it('the pod-level Always decides when the container sets no policy', () => {
    expect(starts('Always', c('main'), 1)).toEqual([0]);
    expect(starts('Never', c('main'), 1)).toEqual([]);
  });

  it('NotIn matches the codes not listed; OnFailure does not restart a success', () => {
    const notIn = c('main', { restartPolicy: 'Never', restartPolicyRules: restartOn('NotIn', [0]) });
    expect(starts('Never', notIn, 3)).toEqual([0]);
    expect(starts('Never', notIn, 0)).toEqual([]);
    expect(starts('Never', c('main', { restartPolicy: 'OnFailure' }), 0)).toEqual([]);
    expect(starts('Never', c('main', { restartPolicy: 'OnFailure' }), 2)).toEqual([0]);
  });

  it('rules apply only to a container that sets a restartPolicy', () => {
    const main = c('main', { restartPolicyRules: restartOn('In', [42]) });
    expect(containerShouldRestart(main, { restartPolicy: 'Never', containers: [main] }, 42)).toBe(false);
  });

  it('with the gate off the pod policy alone decides', () => {
    const main = c('main', { restartPolicy: 'Always', restartPolicyRules: restartOn('In', [42]) });
    expect(starts('Never', main, 42, {})).toEqual([]);
    expect(starts('Always', c('main', { restartPolicy: 'Never' }), 1, {})).toEqual([0]);
  });

  it('a probe-killed container restarts per its own policy, there being no exit code', () => {
    const main = c('main', { restartPolicy: 'Always' });
    const s = cs(main, 'running');
    const probes: ProbeResults = {
      liveness: (id) => (id === s.id.id ? 'failure' : undefined),
      startup: () => undefined,
    };
    const a = computePodActions(
      pod({ containers: [main], restartPolicy: 'Never' }),
      status([sandbox()], [s]),
      probes,
      undefined,
      ON,
    );
    expect(a.containersToStart).toEqual([0]);
    expect(a.containersToKill.get(s.id.id)?.message).toBe(
      'Container main failed liveness probe, will be restarted',
    );
  });

  it('a failed init container with its own OnFailure reruns under a pod Never', () => {
    const init = c('init', { restartPolicy: 'OnFailure' });
    const a = computePodActions(
      pod({ containers: [c('main')], initContainers: [init], restartPolicy: 'Never' }),
      status([sandbox()], [cs(init, 'exited', { exitCode: 1 })]),
      undefined,
      undefined,
      ON,
    );
    expect(a).toMatchObject({ initContainersToStart: [0], killPod: false });
  });
});
