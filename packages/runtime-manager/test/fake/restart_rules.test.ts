// ContainerRestartRules over the fake runtime: syncPod restarts an exited container, or leaves
// the pod finished, per each upstream container_restart_policy.go case's rule.
import type { V1Container } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ctr, Harness, IMAGE, makePod } from './harness.js';

let h: Harness;
beforeEach(async () => {
  h = await Harness.start({ podActionFeatures: { containerRestartRules: true } });
  h.fake.addImage(IMAGE, 1000);
});
afterEach(() => h.stop());

const RESTART_ON_42 = [{ action: 'Restart', exitCodes: { operator: 'In', values: [42] } }];

/** The pod's one container exits with `exitCode` at once; two syncs: start, then react. */
async function afterExit(podPolicy: string, container: Partial<V1Container>, exitCode: number) {
  h.fake.script.containerExit('main', { afterMs: 0, exitCode });
  const pod = makePod('rules', [ctr('main', container)], { restartPolicy: podPolicy });
  await h.sync(pod);
  const r = await h.sync(pod);
  return {
    steps: r.steps.map((s) => s.action),
    status: (await h.status(pod)).containerStatuses[0],
  };
}

describe('ContainerRestartRules over the fake runtime', () => {
  it('restarts on a rule match under Never', async () => {
    const { status } = await afterExit(
      'Never',
      { restartPolicy: 'Never', restartPolicyRules: RESTART_ON_42 },
      42,
    );
    expect(status).toMatchObject({ name: 'main', restartCount: 1 });
  });

  it('does not restart on a mismatch with container Never: the pod is killed', async () => {
    const { steps, status } = await afterExit(
      'Never',
      { restartPolicy: 'Never', restartPolicyRules: RESTART_ON_42 },
      1,
    );
    expect(steps).toEqual(['KillPodSandbox']);
    expect(status).toMatchObject({ restartCount: 0, exitCode: 1 });
  });

  it('container-level Never under a pod Always: not restarted', async () => {
    const { steps, status } = await afterExit('Always', { restartPolicy: 'Never' }, 1);
    expect(steps).toEqual(['KillPodSandbox']);
    expect(status).toMatchObject({ restartCount: 0 });
  });

  it('container-level Always under a pod Never: restarted', async () => {
    const { status } = await afterExit('Never', { restartPolicy: 'Always' }, 1);
    expect(status).toMatchObject({ restartCount: 1 });
  });

  it('pod-level Always without a container policy: restarted', async () => {
    const { status } = await afterExit('Always', {}, 1);
    expect(status).toMatchObject({ restartCount: 1 });
  });
});
