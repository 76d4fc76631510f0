import { ContainerState, CriClient, NotFoundError, PodSandboxState } from '@kh/cri-api';
import { describe, expect, it } from 'vitest';
import { DockerShim, LabelKeys } from '../src/index.js';
import { fakeShim, waitFor } from './harness.js';

// The sandbox verbs' own logic on the fake Engine: listing, idempotence, kinds, a pause container
// gone or dead behind the shim's back, the pause image pull. What needs a running pause process
// (its network, DNS, ports) is in lifecycle.int.test.ts.
const { fake, h } = fakeShim();

describe('sandboxes', () => {
  it('runs the pause container with the CRI state in its labels, and reports it', async () => {
    const { podId, config } = await h.runPod({ labels: { app: 'web' }, annotations: { 'kh/note': 'hi' } });
    const { status } = await h.client.podSandboxStatus({ podSandboxId: podId });
    expect(status).toMatchObject({
      id: podId,
      state: PodSandboxState.SANDBOX_READY,
      metadata: config.metadata,
      labels: { ...h.labels, app: 'web' },
      annotations: { 'kh/note': 'hi' },
    });
    const request = fake.requestOf(podId);
    expect(request.Image).toBe(h.images.pause);
    expect(request.HostConfig.NetworkMode).toBe('bridge');
    expect(request.Labels?.[LabelKeys.containerType]).toBe('podsandbox');
    expect(status?.network?.ip).toMatch(/^172\.17\./);
  });

  it('lists sandboxes by id prefix, state and label, and stops/removes idempotently', async () => {
    const { podId } = await h.runPod({ labels: { pick: 'me' } });
    const byLabel = await h.client.listPodSandbox({
      filter: { labelSelector: { pick: 'me', 'kh.run': h.runId } },
    });
    expect(byLabel.items.map((i) => i.id)).toEqual([podId]);
    const byId = await h.client.listPodSandbox({ filter: { id: podId.slice(0, 12) } });
    expect(byId.items.map((i) => i.id)).toEqual([podId]);

    await h.client.stopPodSandbox({ podSandboxId: podId });
    await h.client.stopPodSandbox({ podSandboxId: podId });
    const notReady = await h.client.listPodSandbox({
      filter: { state: { state: PodSandboxState.SANDBOX_NOTREADY }, labelSelector: { pick: 'me' } },
    });
    expect(notReady.items.map((i) => i.id)).toEqual([podId]);
    const status = await h.client.podSandboxStatus({ podSandboxId: podId });
    expect(status.status?.network?.ip).toBe('');

    await h.client.removePodSandbox({ podSandboxId: podId });
    await h.client.removePodSandbox({ podSandboxId: podId });
    await expect(h.client.podSandboxStatus({ podSandboxId: podId })).rejects.toBeInstanceOf(NotFoundError);
    await h.client.stopPodSandbox({ podSandboxId: 'doesnotexist' });
  });

  it("returns from a stop once Docker's own list shows it, which lags the stop by a moment", async () => {
    const { podId, config } = await h.runPod({ labels: { lag: 'list' } });
    const id = await h.runContainer(podId, config, 'lagging');
    fake.listLagAfterStop = 2;
    try {
      await h.client.stopContainer({ containerId: id, timeout: 0n });
      const running = await h.client.listContainers({
        filter: { id, state: { state: ContainerState.CONTAINER_RUNNING } },
      });
      expect(running.containers).toEqual([]);
      await h.client.stopPodSandbox({ podSandboxId: podId });
      const ready = await h.client.listPodSandbox({
        filter: { state: { state: PodSandboxState.SANDBOX_READY }, labelSelector: { lag: 'list' } },
      });
      expect(ready.items).toEqual([]);
    } finally {
      fake.listLagAfterStop = 0;
    }
  });

  it('never stops or removes across kinds, though it skips the inspect for ids it made', async () => {
    const { podId, config } = await h.runPod();
    const id = await h.runContainer(podId, config, 'kinds');
    const crossKinds = async () => {
      await h.client.stopContainer({ containerId: podId, timeout: 0n });
      await h.client.removeContainer({ containerId: podId });
      await h.client.stopPodSandbox({ podSandboxId: id });
      await h.client.removePodSandbox({ podSandboxId: id });
    };
    const calls = fake.calls.length;
    await crossKinds();
    // Known ids: no inspect, and no stop or remove either.
    expect(fake.calls.slice(calls).filter((c) => /stop|remove|inspect/i.test(c))).toEqual([]);
    expect((await fake.inspectContainer(podId)).State.Running).toBe(true);
    expect((await fake.inspectContainer(id)).State.Running).toBe(true);
    // The same from a shim that never saw them (it inspects, then remembers).
    await h.stopShim();
    await h.startShim();
    for (let i = 0; i < 2; i++) await crossKinds();
    expect((await fake.inspectContainer(podId)).State.Running).toBe(true);
    expect((await fake.inspectContainer(id)).State.Running).toBe(true);
  });

  it('finishes a pod removal that the pause container did not survive', async () => {
    const { podId, config } = await h.runPod();
    const id = await h.runContainer(podId, config, 'orphan');
    // As if a first RemovePodSandbox removed the pause container and failed on the other one.
    await fake.removeContainer(podId);
    await h.client.removePodSandbox({ podSandboxId: podId });
    await expect(fake.inspectContainer(id)).rejects.toMatchObject({ statusCode: 404 });
  });

  it('reports a sandbox whose pause container died behind its back as not ready', async () => {
    const { podId } = await h.runPod();
    const ready = await h.client.podSandboxStatus({ podSandboxId: podId });
    expect(ready.status?.state).toBe(PodSandboxState.SANDBOX_READY);
    fake.exit(podId, 137);
    // Docker's die event evicts the cached inspect; it arrives on the shim's subscription.
    await waitFor(async () => {
      const { status } = await h.client.podSandboxStatus({ podSandboxId: podId });
      return status?.state === PodSandboxState.SANDBOX_NOTREADY && status.network?.ip === ''
        ? true
        : undefined;
    }, 'PodSandboxStatus to see the dead sandbox');
  });

  it('pulls a missing pause image at RunPodSandbox, and says so when it cannot', async () => {
    const start = (image: string, name: string) =>
      DockerShim.start({
        socketPath: `${h.dir}/${name}.sock`,
        podInfraContainerImage: image,
        networkPlugin: 'docker',
        docker: fake,
        log: () => undefined,
      });
    const missing = 'registry.kh.test/pause:none';
    const other = await start(missing, 'missing');
    const client = await CriClient.connect(other.endpoint);
    try {
      await expect(client.runPodSandbox({ config: h.podConfig() })).rejects.toMatchObject({
        codeName: 'NOT_FOUND',
        message: expect.stringContaining(`image "${missing}" is not present and could not be pulled`),
      });
    } finally {
      client.close();
      await other.close();
    }
    const pullable = 'registry.kh.test/pause:3.10';
    fake.registry.set(pullable, { Id: 'sha256:pause310', RepoTags: [pullable], Size: 700_000 });
    const third = await start(pullable, 'pullable');
    const client3 = await CriClient.connect(third.endpoint);
    try {
      const { podSandboxId } = await client3.runPodSandbox({ config: h.podConfig() });
      expect(fake.requestOf(podSandboxId).Image).toBe(pullable);
      expect(fake.calls).toContain('pullImage');
    } finally {
      client3.close();
      await third.close();
    }
  });
});

describe('restart', () => {
  it('rebuilds every answer from Docker alone after the shim restarts', async () => {
    const { podId, config } = await h.runPod({ labels: { survive: 'yes' }, annotations: { a: 'b' } });
    const id = await h.runContainer(podId, config, 'survivor');
    const before = await h.client.podSandboxStatus({ podSandboxId: podId });
    const beforeC = await h.client.containerStatus({ containerId: id });
    const listed = await h.client.listContainers({ filter: { podSandboxId: podId } });
    await h.stopShim();
    await h.startShim();
    expect((await h.client.podSandboxStatus({ podSandboxId: podId })).status).toEqual(before.status);
    expect((await h.client.containerStatus({ containerId: id })).status).toEqual(beforeC.status);
    expect(await h.client.listContainers({ filter: { podSandboxId: podId } })).toEqual(listed);
  });
});
