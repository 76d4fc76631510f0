import { stat } from 'node:fs/promises';
import { FakeClock } from '@kh/apimachinery';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  AlreadyExistsError,
  CgroupDriver,
  type ContainerConfig,
  ContainerEventType,
  ContainerState,
  CriClient,
  DeadlineExceededError,
  type DeepPartial,
  FailedPreconditionError,
  FakeRuntime,
  InvalidArgumentError,
  NamespaceMode,
  NotFoundError,
  type PodSandboxConfig,
  PodSandboxState,
  ResourceExhaustedError,
  UnavailableError,
  UnimplementedError,
} from '../src/index.js';

const BUSYBOX = 'kubelet-harness/busybox:1';

function podConfig(name: string, labels: Record<string, string> = {}): DeepPartial<PodSandboxConfig> {
  return {
    metadata: { name, namespace: 'default', uid: `uid-${name}`, attempt: 0 },
    labels: { 'io.kubernetes.pod.name': name, ...labels },
    logDirectory: `/var/log/pods/default_${name}`,
  };
}

function containerConfig(
  name: string,
  image = BUSYBOX,
  labels: Record<string, string> = {},
): DeepPartial<ContainerConfig> {
  return {
    metadata: { name, attempt: 0 },
    image: { image },
    command: ['sleep', '3600'],
    labels: { 'io.kubernetes.container.name': name, ...labels },
    logPath: `${name}/0.log`,
  };
}

describe('FakeRuntime through CriClient over a unix socket', () => {
  let fake: FakeRuntime;
  let clock: FakeClock;
  const nowNs = () => BigInt(clock.now()) * 1_000_000n;
  let cri: CriClient;

  beforeEach(async () => {
    clock = new FakeClock(Date.UTC(2024, 0, 1));
    fake = await FakeRuntime.start({ clock });
    fake.addImage(BUSYBOX, 1_234_567);
    cri = await CriClient.connect(fake.endpoint, { timeoutMs: 5_000 });
  });

  afterEach(async () => {
    cri.close();
    await fake.stop();
  });

  async function runPod(name: string, labels?: Record<string, string>) {
    const { podSandboxId } = await cri.runPodSandbox({ config: podConfig(name, labels) });
    return podSandboxId;
  }

  async function startContainer(podId: string, name: string, image?: string) {
    const { containerId } = await cri.createContainer({
      podSandboxId: podId,
      config: containerConfig(name, image),
      sandboxConfig: podConfig('x'),
    });
    await cri.startContainer({ containerId });
    return containerId;
  }

  it('identifies itself and serves on a temp socket with mode 0660', async () => {
    expect(await cri.version({ version: 'v1' })).toEqual({
      version: '0.1.0',
      runtimeName: 'fake-cri',
      runtimeVersion: '0.1.0',
      runtimeApiVersion: 'v1',
    });
    const sock = fake.endpoint.replace('unix://', '');
    expect((await stat(sock)).mode & 0o777).toBe(0o660);
    expect(fake.calls).toEqual(['Version']);
    expect(fake.callLog[0]).toEqual({ method: 'Version', request: { version: 'v1' } });
  });

  it('runs a pod sandbox, a container and ExecSync with realistic states and timestamps', async () => {
    const t0 = nowNs();
    const podId = await runPod('web');
    expect(podId).toMatch(/^[0-9a-f]{64}$/);
    const sb = await cri.podSandboxStatus({ podSandboxId: podId });
    expect(sb.status).toMatchObject({
      id: podId,
      state: PodSandboxState.SANDBOX_READY,
      createdAt: t0,
      metadata: { name: 'web', namespace: 'default', uid: 'uid-web' },
    });
    expect(sb.status?.network?.ip).toMatch(/^10\.88\.\d+\.\d+$/);
    const { podSandboxId: hostPod } = await cri.runPodSandbox({
      config: {
        ...podConfig('host'),
        linux: { securityContext: { namespaceOptions: { network: NamespaceMode.NODE } } },
      },
    });
    expect((await cri.podSandboxStatus({ podSandboxId: hostPod })).status?.network?.ip).toBe('');

    clock.step(1_000);
    const { containerId } = await cri.createContainer({
      podSandboxId: podId,
      config: containerConfig('app'),
    });
    let st = (await cri.containerStatus({ containerId })).status!;
    expect(st).toMatchObject({
      state: ContainerState.CONTAINER_CREATED,
      createdAt: t0 + 1_000_000_000n,
      startedAt: 0n,
    });
    expect(st.image?.image).toBe('docker.io/kubelet-harness/busybox:1');
    expect(st.imageRef).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(st.logPath).toBe('/var/log/pods/default_web/app/0.log');

    clock.step(500);
    await cri.startContainer({ containerId });
    st = (await cri.containerStatus({ containerId })).status!;
    expect(st).toMatchObject({
      state: ContainerState.CONTAINER_RUNNING,
      startedAt: t0 + 1_500_000_000n,
      finishedAt: 0n,
    });

    fake.script.execResult('cat /etc/hostname', { stdout: 'web\n' });
    const ok = await cri.execSync({ containerId, cmd: ['cat', '/etc/hostname'], timeout: 1n });
    expect(Buffer.from(ok.stdout).toString()).toBe('web\n');
    expect(ok.exitCode).toBe(0);
    fake.script.execResult(/^sh -c exit/, { stderr: 'nope', exitCode: 3 });
    const bad = await cri.execSync({ containerId, cmd: ['sh', '-c', 'exit 3'] });
    expect(bad).toMatchObject({ exitCode: 3 });
    expect(Buffer.from(bad.stderr).toString()).toBe('nope');
    // Unscripted commands succeed silently.
    expect(await cri.execSync({ containerId, cmd: ['true'] })).toMatchObject({ exitCode: 0 });

    clock.step(2_000);
    await cri.stopContainer({ containerId, timeout: 30n });
    st = (await cri.containerStatus({ containerId })).status!;
    expect(st).toMatchObject({
      state: ContainerState.CONTAINER_EXITED,
      finishedAt: t0 + 3_500_000_000n,
      exitCode: 143,
      reason: 'Error',
    });
    await expect(cri.execSync({ containerId, cmd: ['true'] })).rejects.toBeInstanceOf(
      FailedPreconditionError,
    );
  });

  it('exits scripted containers after N ms with the scripted code', async () => {
    fake.script
      .containerExit('job', { afterMs: 5_000, exitCode: 0 })
      .containerExit(/crasher/, { afterMs: 100, exitCode: 2 })
      .containerExit((c) => c.labels.oom === 'yes', { afterMs: 50, exitCode: 137, reason: 'OOMKilled' });
    fake.addImage('kubelet-harness/memhog:1', 100);
    fake.script.containerExit('kubelet-harness/memhog:1', { afterMs: 20, exitCode: 1 });
    const podId = await runPod('p');
    const job = await startContainer(podId, 'job');
    const crash = await startContainer(podId, 'crasher-1');
    const { containerId: oom } = await cri.createContainer({
      podSandboxId: podId,
      config: { ...containerConfig('hog'), labels: { oom: 'yes' } },
    });
    await cri.startContainer({ containerId: oom });
    const hog = await startContainer(podId, 'by-image', 'docker.io/kubelet-harness/memhog:1');
    const started = nowNs();

    clock.step(100);
    const status = async (id: string) => (await cri.containerStatus({ containerId: id })).status!;
    expect(await status(hog)).toMatchObject({ state: ContainerState.CONTAINER_EXITED, exitCode: 1 });
    expect(await status(oom)).toMatchObject({
      state: ContainerState.CONTAINER_EXITED,
      exitCode: 137,
      reason: 'OOMKilled',
    });
    expect(await status(crash)).toMatchObject({
      state: ContainerState.CONTAINER_EXITED,
      exitCode: 2,
      reason: 'Error',
      finishedAt: started + 100_000_000n,
    });
    expect(await status(job)).toMatchObject({ state: ContainerState.CONTAINER_RUNNING });
    clock.step(4_900);
    expect(await status(job)).toMatchObject({
      state: ContainerState.CONTAINER_EXITED,
      exitCode: 0,
      reason: 'Completed',
    });
  });

  it('times out ExecSync with DEADLINE_EXCEEDED on the fake clock', async () => {
    const podId = await runPod('p');
    const id = await startContainer(podId, 'app');
    fake.script.execResult('slow', { delayMs: 3_000, stdout: 'late' });
    fake.script.execResult('stuck', { hang: true });
    const slow = cri.execSync({ containerId: id, cmd: ['slow'], timeout: 1n });
    const stuck = cri.execSync({ containerId: id, cmd: ['stuck'], timeout: 2n });
    const inTime = cri.execSync({ containerId: id, cmd: ['slow'], timeout: 5n });
    await expect.poll(() => clock.pendingTimers()).toBe(3);
    clock.step(1_000);
    await expect(slow).rejects.toBeInstanceOf(DeadlineExceededError);
    clock.step(1_000);
    await expect(stuck).rejects.toThrow(
      'failed to exec in container: timeout 2s exceeded: context deadline exceeded',
    );
    clock.step(1_000);
    expect(Buffer.from((await inTime).stdout).toString()).toBe('late');
  });

  it('filters ListPodSandbox and ListContainers by id, state, sandbox and labels', async () => {
    const a = await runPod('a', { tier: 'web' });
    const b = await runPod('b', { tier: 'db' });
    const a1 = await startContainer(a, 'one');
    const { containerId: a2 } = await cri.createContainer({
      podSandboxId: a,
      config: containerConfig('two', BUSYBOX, { role: 'side' }),
    });
    const b1 = await startContainer(b, 'one');
    await cri.stopPodSandbox({ podSandboxId: b });

    const pods = async (filter: object) =>
      (await cri.listPodSandbox({ filter })).items.map((p) => p.id).sort();
    expect(await pods({})).toEqual([a, b].sort());
    expect(await pods({ id: a })).toEqual([a]);
    expect(await pods({ id: a.slice(0, 12) })).toEqual([a]);
    expect(await pods({ state: { state: PodSandboxState.SANDBOX_NOTREADY } })).toEqual([b]);
    expect(await pods({ state: { state: PodSandboxState.SANDBOX_READY } })).toEqual([a]);
    expect(await pods({ labelSelector: { tier: 'db' } })).toEqual([b]);
    expect(await pods({ labelSelector: { tier: 'db', 'io.kubernetes.pod.name': 'a' } })).toEqual([]);

    const ctrs = async (filter: object) =>
      (await cri.listContainers({ filter })).containers.map((c) => c.id).sort();
    expect(await ctrs({})).toEqual([a1, a2, b1].sort());
    expect(await ctrs({ podSandboxId: a })).toEqual([a1, a2].sort());
    expect(await ctrs({ state: { state: ContainerState.CONTAINER_RUNNING } })).toEqual([a1]);
    expect(await ctrs({ state: { state: ContainerState.CONTAINER_CREATED } })).toEqual([a2]);
    expect(await ctrs({ state: { state: ContainerState.CONTAINER_EXITED } })).toEqual([b1]);
    expect(await ctrs({ labelSelector: { role: 'side' } })).toEqual([a2]);
    expect(await ctrs({ id: b1, podSandboxId: a })).toEqual([]);
    // Stopping the sandbox killed its container.
    expect((await cri.containerStatus({ containerId: b1 })).status).toMatchObject({ exitCode: 137 });
  });

  it('streams CREATED, STARTED, STOPPED and DELETED container events', async () => {
    const ac = new AbortController();
    const events = cri.getContainerEvents({}, { signal: ac.signal });
    await expect.poll(() => fake.eventSubscribers).toBe(1);
    const podId = await runPod('ev');
    const id = await startContainer(podId, 'app');
    await cri.stopContainer({ containerId: id, timeout: 0n });
    await cri.removeContainer({ containerId: id });

    const seen: [string, ContainerEventType][] = [];
    for await (const ev of events) {
      seen.push([ev.containerId === podId ? 'pod' : 'ctr', ev.containerEventType]);
      if (ev.containerId === id && ev.containerEventType === ContainerEventType.CONTAINER_STARTED_EVENT) {
        expect(ev.podSandboxStatus?.id).toBe(podId);
        expect(ev.containersStatuses.map((s) => s.id)).toEqual([id]);
        expect(ev.createdAt).toBe(nowNs());
      }
      if (seen.length === 6) ac.abort();
    }
    expect(seen).toEqual([
      ['pod', ContainerEventType.CONTAINER_CREATED_EVENT],
      ['pod', ContainerEventType.CONTAINER_STARTED_EVENT],
      ['ctr', ContainerEventType.CONTAINER_CREATED_EVENT],
      ['ctr', ContainerEventType.CONTAINER_STARTED_EVENT],
      ['ctr', ContainerEventType.CONTAINER_STOPPED_EVENT],
      ['ctr', ContainerEventType.CONTAINER_DELETED_EVENT],
    ]);
    await expect.poll(() => fake.eventSubscribers).toBe(0);
  });

  it('validates requests and reports unknown ids as NOT_FOUND', async () => {
    await expect(cri.runPodSandbox({})).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(cri.runPodSandbox({ config: { metadata: { name: 'x', namespace: 'd' } } })).rejects.toThrow(
      'metadata.uid is required',
    );
    await expect(
      cri.runPodSandbox({ config: podConfig('p'), runtimeHandler: 'kata' }),
    ).rejects.toBeInstanceOf(NotFoundError);
    const podId = await runPod('p');
    await expect(cri.runPodSandbox({ config: podConfig('p') })).rejects.toBeInstanceOf(AlreadyExistsError);
    await expect(cri.podSandboxStatus({ podSandboxId: 'nope' })).rejects.toBeInstanceOf(NotFoundError);
    await expect(cri.containerStatus({ containerId: 'nope' })).rejects.toBeInstanceOf(NotFoundError);
    await expect(cri.containerStatus({})).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(
      cri.createContainer({ podSandboxId: 'nope', config: containerConfig('c') }),
    ).rejects.toBeInstanceOf(NotFoundError);
    await expect(
      cri.createContainer({ podSandboxId: podId, config: { image: { image: BUSYBOX } } }),
    ).rejects.toThrow('metadata.name is required');
    const missing = await cri
      .createContainer({ podSandboxId: podId, config: containerConfig('c', 'not/pulled:1') })
      .catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(NotFoundError);
    expect(missing).toMatchObject({ details: expect.stringContaining('not/pulled:1') });
    const id = await startContainer(podId, 'c');
    await expect(
      cri.createContainer({ podSandboxId: podId, config: containerConfig('c') }),
    ).rejects.toBeInstanceOf(AlreadyExistsError);
    await expect(cri.startContainer({ containerId: id })).rejects.toBeInstanceOf(FailedPreconditionError);
    await expect(cri.execSync({ containerId: id, cmd: [] })).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(cri.stopContainer({ containerId: 'nope' })).rejects.toBeInstanceOf(NotFoundError);
    await expect(cri.attach({ containerId: id })).rejects.toBeInstanceOf(UnimplementedError);
  });

  it('stops and removes idempotently, like real runtimes', async () => {
    const podId = await runPod('p');
    const id = await startContainer(podId, 'c');
    await cri.stopContainer({ containerId: id, timeout: 0n });
    await cri.stopContainer({ containerId: id, timeout: 0n });
    expect((await cri.containerStatus({ containerId: id })).status).toMatchObject({ exitCode: 137 });
    await cri.removeContainer({ containerId: id });
    await cri.removeContainer({ containerId: id });
    await cri.stopPodSandbox({ podSandboxId: podId });
    await cri.stopPodSandbox({ podSandboxId: podId });
    const second = await startPodWithContainer();
    // Removing a sandbox force-removes its containers.
    await cri.removePodSandbox({ podSandboxId: second.podId });
    await cri.removePodSandbox({ podSandboxId: second.podId });
    await cri.removePodSandbox({ podSandboxId: podId });
    expect(fake.sandboxes()).toEqual([]);
    expect(fake.containers()).toEqual([]);

    async function startPodWithContainer() {
      const pod = await runPod('q');
      return { podId: pod, id: await startContainer(pod, 'c') };
    }
  });

  it('manages images: pull from the scripted registry, status, list, remove, fs info', async () => {
    fake.script.registryImage('busybox', 2_000_000);
    const before = await cri.imageStatus({ image: { image: 'busybox' } });
    expect(before.image).toBeUndefined();
    await expect(cri.pullImage({ image: { image: 'missing:1' } })).rejects.toBeInstanceOf(NotFoundError);
    const pulled = await cri.pullImage({ image: { image: 'busybox:latest' } });
    expect(pulled.imageRef).toMatch(/^sha256:/);
    const st = await cri.imageStatus({ image: { image: 'docker.io/library/busybox' } });
    expect(st.image).toMatchObject({
      id: pulled.imageRef,
      repoTags: ['docker.io/library/busybox:latest'],
      size: 2_000_000n,
    });
    expect(st.image?.repoDigests[0]).toMatch(/^docker\.io\/library\/busybox@sha256:[0-9a-f]{64}$/);
    expect((await cri.imageStatus({ image: { image: pulled.imageRef } })).image?.id).toBe(pulled.imageRef);

    const all = await cri.listImages({});
    expect(all.images.map((i) => i.repoTags[0]).sort()).toEqual([
      'docker.io/kubelet-harness/busybox:1',
      'docker.io/library/busybox:latest',
    ]);
    expect((await cri.listImages({ filter: { image: { image: 'busybox' } } })).images).toHaveLength(1);

    const fs = await cri.imageFsInfo({});
    expect(fs.imageFilesystems[0]).toMatchObject({
      usedBytes: { value: 3_234_567n },
      inodesUsed: { value: 2n },
    });
    fake.setImageFs({ usedBytes: 9n * 1024n ** 3n, inodesUsed: 10_000 });
    expect((await cri.imageFsInfo({})).imageFilesystems[0]).toMatchObject({
      usedBytes: { value: 9n * 1024n ** 3n },
      inodesUsed: { value: 10_000n },
    });

    await cri.removeImage({ image: { image: 'busybox' } });
    await cri.removeImage({ image: { image: 'busybox' } });
    expect((await cri.imageStatus({ image: { image: 'busybox' } })).image).toBeUndefined();
    await expect(cri.pullImage({ image: { image: '' } })).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it('reports pinned images', async () => {
    const id = fake.addImage('kubelet-harness/pause:1', 700_000, { pinned: true });
    expect((await cri.imageStatus({ image: { image: id } })).image).toMatchObject({
      pinned: true,
      size: 700_000n,
    });
    expect((await cri.imageStatus({ image: { image: BUSYBOX } })).image?.pinned).toBe(false);
  });

  it('applies resource, log and runtime config updates with containerd preconditions', async () => {
    const podId = (await cri.runPodSandbox({ config: podConfig('p'), runtimeHandler: 'runc' })).podSandboxId;
    expect(fake.sandboxes()[0]?.runtimeHandler).toBe('runc');
    const id = await startContainer(podId, 'app');
    await cri.updateContainerResources({
      containerId: id,
      linux: { memoryLimitInBytes: 128n * 1024n * 1024n },
    });
    const st = (await cri.containerStatus({ containerId: id })).status;
    expect(st?.resources?.linux?.memoryLimitInBytes).toBe(134_217_728n);
    await cri.reopenContainerLog({ containerId: id });
    const { containerId: created } = await cri.createContainer({
      podSandboxId: podId,
      config: containerConfig('later'),
    });
    await expect(cri.reopenContainerLog({ containerId: created })).rejects.toBeInstanceOf(
      FailedPreconditionError,
    );
    fake.exitContainer(id, 0);
    await expect(
      cri.updateContainerResources({ containerId: id, linux: { cpuShares: 2n } }),
    ).rejects.toBeInstanceOf(FailedPreconditionError);
    await cri.updatePodSandboxResources({ podSandboxId: podId });
    await expect(cri.updatePodSandboxResources({ podSandboxId: 'nope' })).rejects.toBeInstanceOf(
      NotFoundError,
    );
    await cri.updateRuntimeConfig({ runtimeConfig: { networkConfig: { podCidr: '10.88.0.0/16' } } });
    await cri.updateRuntimeConfig({ runtimeConfig: {} });
    expect(fake.podCidrs).toEqual(['10.88.0.0/16']);
  });

  it('fails pulls as scripted', async () => {
    fake.script.registryImage('flaky:1', 10);
    fake.script.pullFailure('flaky:1', { error: new UnavailableError('registry unreachable'), times: 1 });
    fake.script.pullFailure(/private/, { error: new NotFoundError('pull access denied') });
    await expect(cri.pullImage({ image: { image: 'flaky:1' } })).rejects.toThrow('registry unreachable');
    await expect(cri.pullImage({ image: { image: 'flaky:1' } })).resolves.toMatchObject({
      imageRef: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
    });
    await expect(cri.pullImage({ image: { image: 'corp/private:2' } })).rejects.toBeInstanceOf(NotFoundError);
  });

  it('reports Status conditions that can be scripted to go false', async () => {
    const ready = await cri.status({});
    expect(ready.status?.conditions).toEqual([
      { type: 'RuntimeReady', status: true, reason: '', message: '' },
      { type: 'NetworkReady', status: true, reason: '', message: '' },
    ]);
    fake.setRuntimeReady(false, 'ContainerdDown', 'containerd is not running').setNetworkReady(false);
    const down = await cri.status({});
    expect(down.status?.conditions).toEqual([
      { type: 'RuntimeReady', status: false, reason: 'ContainerdDown', message: 'containerd is not running' },
      { type: 'NetworkReady', status: false, reason: 'NetworkPluginNotReady', message: '' },
    ]);
    expect((await cri.runtimeConfig({})).linux?.cgroupDriver).toBe(CgroupDriver.CGROUPFS);
  });

  it('announces its handlers, with user namespace support only when started with it', async () => {
    expect((await cri.status({})).runtimeHandlers).toEqual([
      { name: '', features: { recursiveReadOnlyMounts: false, userNamespaces: false } },
      { name: 'runc', features: { recursiveReadOnlyMounts: false, userNamespaces: false } },
    ]);
    const userns = await FakeRuntime.start({ clock, userNamespaces: true, runtimeHandlers: [] });
    const client = await CriClient.connect(userns.endpoint, { timeoutMs: 5_000 });
    try {
      expect((await client.status({})).runtimeHandlers).toEqual([
        { name: '', features: { recursiveReadOnlyMounts: false, userNamespaces: true } },
      ]);
    } finally {
      client.close();
      await userns.stop();
    }
  });

  it('reports container stats for running containers', async () => {
    const podId = await runPod('p');
    const id = await startContainer(podId, 'app');
    const { containerId: idle } = await cri.createContainer({
      podSandboxId: podId,
      config: containerConfig('idle'),
    });
    fake.script.containerStats('app', {
      cpuUsageCoreNanoSeconds: 5_000_000_000n,
      memoryWorkingSetBytes: 64 * 1024 * 1024,
    });
    const one = await cri.containerStats({ containerId: id });
    expect(one.stats).toMatchObject({
      attributes: { id, metadata: { name: 'app' } },
      cpu: { usageCoreNanoSeconds: { value: 5_000_000_000n }, timestamp: nowNs() },
      memory: { workingSetBytes: { value: 67_108_864n } },
    });
    const list = await cri.listContainerStats({ filter: { podSandboxId: podId } });
    expect(list.stats.map((s) => s.attributes?.id)).toEqual([id]);
    expect(idle).not.toBe(id);
    await expect(cri.containerStats({ containerId: 'nope' })).rejects.toBeInstanceOf(NotFoundError);
  });

  it('fails the next call of a method on demand and lets a test crash containers', async () => {
    fake.failNext('RunPodSandbox', new ResourceExhaustedError('no IPs left'));
    await expect(runPod('p')).rejects.toBeInstanceOf(ResourceExhaustedError);
    const podId = await runPod('p');
    fake.failNext('containerStatus', new Error('boom'), 2);
    await expect(cri.containerStatus({ containerId: 'x' })).rejects.toThrow('boom');
    await expect(cri.containerStatus({ containerId: 'x' })).rejects.toThrow('boom');
    await expect(cri.containerStatus({ containerId: 'x' })).rejects.toBeInstanceOf(NotFoundError);
    expect(() => fake.failNext('NoSuchCall', new Error('x'))).toThrow(/unknown CRI method/);

    const id = await startContainer(podId, 'app');
    fake.exitContainer(id, 139, 'Error', 'segfault');
    expect((await cri.containerStatus({ containerId: id })).status).toMatchObject({
      state: ContainerState.CONTAINER_EXITED,
      exitCode: 139,
      message: 'segfault',
    });
    expect(fake.calls.filter((c) => c === 'RunPodSandbox')).toHaveLength(2);
  });
});
