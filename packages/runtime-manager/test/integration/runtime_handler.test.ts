// The runtime handler reaches real containerd: a private containerd 1.6 on the host (testkit's
// HostContainerd, whose config has the handler "runc"). A pod of a class whose handler containerd
// has runs there, and containerd reports the handler back; a handler containerd does not have
// fails RunPodSandbox, and containerd's own error is the FailedCreatePodSandBox event.
import { FakeClock } from '@kh/apimachinery';
import { CriClient } from '@kh/cri-api';
import { ensureImages, HostContainerd, type StartedHostContainerd } from '@kh/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventRecorder } from '../../src/container/runtime.js';
import { KubeGenericRuntimeManager } from '../../src/kuberuntime/manager.js';
import { newCrashLoopBackoff } from '../../src/util/backoff.js';
import { failures, killAll, pod, sh, status } from './scenarios.js';

const HANDLERS = new Map([
  ['native', 'runc'],
  ['unconfigured', 'kh-no-such-handler'],
]);

describe.skipIf(process.env.KH_SKIP_INTEGRATION === '1')('runtime handlers on real containerd', () => {
  let ctrd: StartedHostContainerd;
  let cri: CriClient;
  let manager: KubeGenericRuntimeManager;
  let busybox: string;
  const events: { reason: string; message: string }[] = [];
  const recorder: EventRecorder = {
    event: (_pod, _type, reason, message) => events.push({ reason, message }),
  };
  const backoff = newCrashLoopBackoff(new FakeClock(0));

  beforeAll(async () => {
    const images = await ensureImages(['pause', 'busybox'], { progress: (l) => console.log(l) });
    ctrd = await new HostContainerd().withPauseImage(images.pause).withImages([images.busybox]).start();
    busybox = `docker.io/${images.busybox}`;
    cri = await CriClient.connect(ctrd.endpoint, { timeoutMs: 60_000 });
    manager = await KubeGenericRuntimeManager.create({
      cri,
      recorder,
      podSandboxImage: images.pause,
      runtimeClassManager: {
        lookupRuntimeHandler: async (name) => (name ? (HANDLERS.get(name) ?? '') : ''),
      },
    });
  }, 300_000);
  afterAll(async () => {
    if (manager) await killAll(manager).catch(() => undefined);
    cri?.close();
    await ctrd?.stop();
  }, 120_000);

  it('runs a pod on the handler of its class, which containerd reports back', async () => {
    const p = pod('native', [sh(busybox, 'app', 'sleep 3600')], { runtimeClassName: 'native' });
    expect(failures(await manager.syncPod(p, await status(manager, p), [], backoff))).toEqual([]);
    const [sandbox] = (await status(manager, p)).sandboxStatuses;
    const reported = await cri.podSandboxStatus({ podSandboxId: sandbox!.id, verbose: false });
    expect(reported.status?.runtimeHandler).toBe('runc');
  }, 60_000);

  it("gives containerd's error for a handler it does not have to FailedCreatePodSandBox", async () => {
    const p = pod('unconfigured', [sh(busybox, 'app', 'sleep 3600')], { runtimeClassName: 'unconfigured' });
    const result = await manager.syncPod(p, await status(manager, p), [], backoff);
    expect(result.steps.map((s) => [s.action, s.reason])).toEqual([
      ['CreatePodSandbox', 'CreatePodSandboxError'],
    ]);
    const failed = events.filter((e) => e.reason === 'FailedCreatePodSandBox').map((e) => e.message);
    expect(failed).toEqual([
      // containerd's words after the CRI client's method prefix (the kubelet's Go client says "rpc error: code = Unknown desc =").
      'Failed to create pod sandbox: RunPodSandbox: failed to get sandbox runtime: no runtime for "kh-no-such-handler" is configured',
    ]);
    expect((await status(manager, p)).sandboxStatuses).toEqual([]);
  }, 60_000);
});
