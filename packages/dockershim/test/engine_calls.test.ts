import { setTimeout as sleep } from 'node:timers/promises';
import { ContainerState } from '@kh/cri-api';
import { describe, expect, it } from 'vitest';
import { fakeShim } from './harness.js';

// The Engine calls each of critest -benchmark's timed operations makes, in critest's order (and the
// kubelet's: ImageStatus before CreateContainer, ContainerStatus after StartContainer). The
// benchmark holds the shim to 1.5x containerd's p50; every call listed here is one Docker makes
// on the request's path, so one that comes back shows here first (the bench JSON: engineCalls).
const { fake, h } = fakeShim();

/**
 * The Engine calls `fn` makes, in order. The log copier's requests (follow, and one catch-up read
 * after the exit) run beside the CRI calls, off their path, and are left out.
 */
async function engineCalls(fn: () => Promise<unknown>): Promise<string[]> {
  const from = fake.calls.length;
  await fn();
  return fake.calls.slice(from).filter((c) => c !== 'containerLogs');
}

/**
 * Holds Docker's events back while `fn` runs, then lets them reach the shim: Docker's event comes
 * on its own connection, often after the call that caused it has returned.
 */
async function eventsAfter<T>(fn: () => Promise<T>): Promise<T> {
  fake.holdEvents(() => true);
  try {
    return await fn();
  } finally {
    fake.releaseEvents();
    // Delivery to the shim's subscriptions (a local stream); nothing is timed.
    await sleep(50);
  }
}

describe("critest -benchmark's operations", () => {
  it('pod benchmark: RunPodSandbox keeps the inspect PodSandboxStatus answers from', async () => {
    const config = h.podConfig();
    let podSandboxId = '';
    expect(
      await engineCalls(() =>
        eventsAfter(async () => {
          ({ podSandboxId } = await h.client.runPodSandbox({ config }));
        }),
      ),
    ).toEqual(['createContainer', 'startContainer', 'inspectContainer']);
    // Its `start` event arrived after the inspect: it said running already, so it stays.
    expect(await engineCalls(() => h.client.podSandboxStatus({ podSandboxId, verbose: true }))).toEqual([]);
    expect(await engineCalls(() => h.client.stopPodSandbox({ podSandboxId }))).toEqual([
      'listContainers',
      'stopContainer',
      'listContainers',
    ]);
    expect(await engineCalls(() => h.client.removePodSandbox({ podSandboxId }))).toEqual([
      'listContainers',
      'removeContainer',
    ]);
  });

  it('container benchmark: ImageStatus, CreateContainer, ContainerStatus and RemoveContainer make one call at most', async () => {
    const { podId, config } = await h.runPod();
    const image = { image: h.images.busybox };
    // The Engine's API version is read once, by the shim's first create.
    await h.runContainer(podId, config, 'first', {}, false);
    // critest asks ImageStatus before each create: the image is inspected once, until an image event.
    await h.client.imageStatus({ image });
    expect(await engineCalls(() => h.client.imageStatus({ image }))).toEqual([]);
    let containerId = '';
    expect(
      await engineCalls(async () => {
        ({ containerId } = await h.client.createContainer({
          podSandboxId: podId,
          config: h.containerConfig('bench'),
          sandboxConfig: config,
        }));
      }),
    ).toEqual(['createContainer']);
    // StartContainer checks the container is created, starts it, and inspects it running for the
    // status asked next.
    expect(await engineCalls(() => eventsAfter(() => h.client.startContainer({ containerId })))).toEqual([
      'inspectContainer',
      'startContainer',
      'inspectContainer',
    ]);
    let state: ContainerState | undefined;
    expect(
      await engineCalls(async () => {
        state = (await h.client.containerStatus({ containerId, verbose: true })).status?.state;
      }),
    ).toEqual([]);
    expect(state).toBe(ContainerState.CONTAINER_RUNNING);
    expect(await engineCalls(() => h.client.stopContainer({ containerId, timeout: 60n }))).toEqual([
      'stopContainer',
      'listContainers',
    ]);
    expect(await engineCalls(() => h.client.removeContainer({ containerId }))).toEqual(['removeContainer']);
    await h.client.stopPodSandbox({ podSandboxId: podId });
    await h.client.removePodSandbox({ podSandboxId: podId });
  });

  it('a container that died is inspected again, even when its start event comes after the inspect', async () => {
    const { podId, config } = await h.runPod();
    const id = await eventsAfter(() => h.runContainer(podId, config, 'dies'));
    fake.exit(id, 3);
    await sleep(50);
    const calls = await engineCalls(async () => {
      const { status } = await h.client.containerStatus({ containerId: id });
      expect(status).toMatchObject({ state: ContainerState.CONTAINER_EXITED, exitCode: 3, reason: 'Error' });
    });
    expect(calls).toContain('inspectContainer');
  });
});
