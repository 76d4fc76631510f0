import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ContainerEventType,
  ContainerState,
  FailedPreconditionError,
  InvalidArgumentError,
  NamespaceMode,
  NotFoundError,
} from '@kh/cri-api';
import { describe, expect, it } from 'vitest';
import { LabelKeys, parseCriLogLine } from '../src/index.js';
import { LATE_OOM_WAIT_MS } from '../src/state/oom_events.js';
import { fakeShim, waitFor } from './harness.js';

// The container verbs' own logic on the fake Engine: filters, states, removal in every state, bad
// requests, a sandbox dead behind the shim's back, ExecSync's answer, resource updates, events.
// What the container's process does (its exit codes, its cgroup, its output) is for the
// real-engine suite.
const { fake, h } = fakeShim();

describe('containers', () => {
  it('walks created -> running -> exited, with the reason of its exit code', async () => {
    const { podId, config } = await h.runPod();
    const id = await h.runContainer(podId, config, 'walk', {}, false);
    const state = async () => (await h.client.containerStatus({ containerId: id })).status;
    expect((await state())?.state).toBe(ContainerState.CONTAINER_CREATED);
    await h.client.startContainer({ containerId: id });
    expect((await state())?.state).toBe(ContainerState.CONTAINER_RUNNING);
    await expect(h.client.startContainer({ containerId: id })).rejects.toBeInstanceOf(
      FailedPreconditionError,
    );
    fake.exit(id, 3);
    const exited = await waitFor(async () => {
      const s = await state();
      return s?.state === ContainerState.CONTAINER_EXITED ? s : undefined;
    }, 'exit');
    expect(exited).toMatchObject({ exitCode: 3, reason: 'Error' });
    expect(exited.finishedAt).toBeGreaterThanOrEqual(exited.startedAt);
    const oom = await h.runContainer(podId, config, 'oom');
    fake.exit(oom, 137, true);
    await waitFor(async () => {
      const s = (await h.client.containerStatus({ containerId: oom })).status;
      return s?.reason === 'OOMKilled' ? true : undefined;
    }, 'OOMKilled');
  });

  it('reports OOMKilled when Docker handles the OOM kill after the exit, and waits for no other exit', async () => {
    const { podId, config } = await h.runPod();
    const status = async (id: string) => (await h.client.containerStatus({ containerId: id })).status;
    // Elapsed time on the monotonic clock: a fresh machine's wall clock can be stepped mid-test.
    const timed = async (id: string) => {
      const t0 = performance.now();
      return { s: await status(id), ms: performance.now() - t0 };
    };
    const engine = fake.engineVersion;
    try {
      // Docker 26 sets State.OOMKilled when it handles the oom; 20.10 only emits the event.
      for (const version of [engine, { Version: '20.10.24', ApiVersion: '1.41' }]) {
        fake.engineVersion = version;
        const id = await h.runContainer(podId, config, `late-oom-${version.ApiVersion}`);
        const calls = fake.calls.length;
        fake.exit(id, 137);
        const asked = status(id);
        // The shim has read the exit (137, not OOMKilled) before Docker hears of the OOM.
        while (!fake.calls.slice(calls).includes('inspectContainer'))
          await new Promise((r) => setTimeout(r, 5));
        fake.oomAfterExit(id);
        expect(await asked).toMatchObject({
          state: ContainerState.CONTAINER_EXITED,
          exitCode: 137,
          reason: 'OOMKilled',
        });
        expect((await status(id))?.reason).toBe('OOMKilled');
      }
    } finally {
      fake.engineVersion = engine;
    }
    // Stopped by Docker (its SIGKILL's kill event comes first) or exited with another code: no wait.
    const stopped = await h.runContainer(podId, config, 'stopped');
    await h.client.stopContainer({ containerId: stopped, timeout: 0n });
    const failed = await h.runContainer(podId, config, 'failed');
    fake.exit(failed, 1);
    for (const id of [stopped, failed]) {
      const { s, ms } = await timed(id);
      expect(s?.reason).toBe('Error');
      expect(ms).toBeLessThan(LATE_OOM_WAIT_MS);
    }
    // SIGKILLed by someone else and no oom follows: Error, once the wait is over.
    const killed = await h.runContainer(podId, config, 'killed');
    fake.exit(killed, 137);
    const { s, ms } = await timed(killed);
    expect(s).toMatchObject({ exitCode: 137, reason: 'Error' });
    expect(ms).toBeLessThan(LATE_OOM_WAIT_MS + 2_000);
  });

  it('lists containers with every filter and removes them in every state', async () => {
    const { podId, config } = await h.runPod();
    const createdId = await h.runContainer(podId, config, 'c1', { labels: { role: 'a' } }, false);
    const runningId = await h.runContainer(podId, config, 'c2', { labels: { role: 'b' } });
    const exitedId = await h.runContainer(podId, config, 'c3');
    fake.exit(exitedId, 0);

    const ids = async (filter: object) =>
      (await h.client.listContainers({ filter })).containers.map((c) => c.id).sort();
    expect(await ids({ podSandboxId: podId })).toEqual([createdId, runningId, exitedId].sort());
    expect(await ids({ podSandboxId: podId, state: { state: ContainerState.CONTAINER_RUNNING } })).toEqual([
      runningId,
    ]);
    expect(await ids({ podSandboxId: podId, state: { state: ContainerState.CONTAINER_CREATED } })).toEqual([
      createdId,
    ]);
    expect(await ids({ podSandboxId: podId, state: { state: ContainerState.CONTAINER_EXITED } })).toEqual([
      exitedId,
    ]);
    expect(await ids({ labelSelector: { role: 'a', 'kh.run': h.runId } })).toEqual([createdId]);
    expect(await ids({ id: runningId.slice(0, 10) })).toEqual([runningId]);
    const listed = (await h.client.listContainers({ filter: { id: runningId } })).containers[0];
    expect(listed).toMatchObject({
      podSandboxId: podId,
      metadata: { name: 'c2', attempt: 0 },
      labels: { role: 'b' },
      image: { image: h.images.busybox },
    });

    for (const id of [createdId, runningId, exitedId]) {
      await h.client.removeContainer({ containerId: id });
      await h.client.removeContainer({ containerId: id });
      await expect(h.client.containerStatus({ containerId: id })).rejects.toBeInstanceOf(NotFoundError);
    }
  });

  it('answers INVALID_ARGUMENT and NOT_FOUND for bad requests, without asking the Engine about bad ids', async () => {
    await expect(h.client.startContainer({ containerId: '' })).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(h.client.containerStatus({ containerId: 'nope' })).rejects.toBeInstanceOf(NotFoundError);
    await expect(
      h.client.createContainer({ podSandboxId: 'nope', config: h.containerConfig('x') }),
    ).rejects.toBeInstanceOf(NotFoundError);
    const { podId, config } = await h.runPod();
    await expect(
      h.client.createContainer({
        podSandboxId: podId,
        config: { metadata: { name: 'x' } },
        sandboxConfig: config,
      }),
    ).rejects.toThrow(/config.image.image is required/);
    await expect(h.client.runPodSandbox({ config: { metadata: { name: 'x' } } })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
    // A sandbox id is not a container id.
    await expect(h.client.containerStatus({ containerId: podId })).rejects.toBeInstanceOf(NotFoundError);
    const calls = fake.calls.length;
    await expect(h.client.containerStatus({ containerId: '../images/x' })).rejects.toBeInstanceOf(
      NotFoundError,
    );
    expect(fake.calls.slice(calls)).toEqual([]);
  });

  it('refuses a per-pod user namespace with INVALID_ARGUMENT and runs mode NODE as before', async () => {
    const userns = (mode: NamespaceMode) => ({
      linux: {
        securityContext: {
          namespaceOptions: {
            usernsOptions: {
              mode,
              uids: [{ hostId: 65536, containerId: 0, length: 65536 }],
              gids: [{ hostId: 65536, containerId: 0, length: 65536 }],
            },
          },
        },
      },
    });
    const calls = fake.calls.length;
    const refused = h.client.runPodSandbox({ config: h.podConfig(userns(NamespaceMode.POD)) });
    await expect(refused).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(refused).rejects.toThrow(
      'user namespace mode POD is not supported by docker: it has no per-pod user namespaces, only the daemon-wide userns-remap',
    );
    expect(fake.calls.slice(calls).filter((c) => c.startsWith('create'))).toEqual([]);
    const { podId, config } = await h.runPod(userns(NamespaceMode.NODE));
    await expect(
      h.client.createContainer({
        podSandboxId: podId,
        config: h.containerConfig('userns', userns(NamespaceMode.POD)),
        sandboxConfig: config,
      }),
    ).rejects.toBeInstanceOf(InvalidArgumentError);
    const id = await h.runContainer(podId, config, 'host-users', userns(NamespaceMode.NODE), false);
    expect(fake.requestOf(id).HostConfig).not.toHaveProperty('UsernsMode');
  });

  it('creates the container in the sandbox namespaces, with its labels and log path', async () => {
    const { podId, config } = await h.runPod();
    const id = await h.runContainer(
      podId,
      config,
      'ns',
      { envs: [{ key: 'A', value: Buffer.from('b') }] },
      false,
    );
    const request = fake.requestOf(id);
    expect(request.HostConfig).toMatchObject({
      NetworkMode: `container:${podId}`,
      IpcMode: `container:${podId}`,
    });
    expect(request.Env).toEqual(['A=b']);
    expect(request.Labels?.[LabelKeys.sandboxId]).toBe(podId);
    expect(request.Labels?.[LabelKeys.logPath]).toBe(`${config.logDirectory}/ns/0.log`);
  });

  it('copies the output of a container whose start ran though its answer was lost', async () => {
    const { podId, config } = await h.runPod();
    const id = await h.runContainer(podId, config, 'lost', {}, false);
    const image = fake.requestOf(id).Image;
    fake.programs.set(image, { stdout: 'ran anyway\n', exits: true });
    fake.nextStartAnswer = async () => {
      throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    };
    try {
      await expect(h.client.startContainer({ containerId: id })).rejects.toThrow(/socket hang up/);
    } finally {
      fake.programs.delete(image);
    }
    const exited = await waitFor(async () => {
      const s = (await h.client.containerStatus({ containerId: id })).status;
      return s?.state === ContainerState.CONTAINER_EXITED ? s : undefined;
    }, 'exit');
    // The status of an exited container waits for its log: the file is complete when it answers.
    const lines = (await readFile(exited.logPath, 'utf8')).split('\n').filter(Boolean);
    expect(lines.map((l) => parseCriLogLine(l)?.message)).toEqual(['ran anyway']);
  });

  it('answers the status of a container that exited before its start answered once its log is complete', async () => {
    const { podId, config } = await h.runPod();
    const id = await h.runContainer(podId, config, 'quick', {}, false);
    const image = fake.requestOf(id).Image;
    fake.programs.set(image, { stdout: 'done at once\n', exits: true });
    let answer: (() => void) | undefined;
    fake.nextStartAnswer = () =>
      new Promise<void>((resolve) => {
        answer = resolve;
      });
    try {
      const starting = h.client.startContainer({ containerId: id });
      // The process ran, printed and exited; Docker's answer to the start is still on its way.
      await waitFor(async () => answer, 'the start in the Engine');
      let answered = false;
      const status = h.client.containerStatus({ containerId: id }).then((r) => {
        answered = true;
        return r.status;
      });
      await new Promise((r) => setTimeout(r, 100));
      expect(answered).toBe(false);
      answer?.();
      const exited = await status;
      expect(exited?.state).toBe(ContainerState.CONTAINER_EXITED);
      const lines = (await readFile(exited?.logPath ?? '', 'utf8')).split('\n').filter(Boolean);
      expect(lines.map((l) => parseCriLogLine(l)?.message)).toEqual(['done at once']);
      await starting;
    } finally {
      fake.programs.delete(image);
    }
  });

  it('announces recursive read-only mounts on an API 1.44+ Engine, makes them so and reports them', async () => {
    const { runtimeHandlers } = await h.client.status({});
    expect(runtimeHandlers).toEqual([
      { name: '', features: { recursiveReadOnlyMounts: true, userNamespaces: false } },
    ]);
    const { podId, config } = await h.runPod();
    const dir = await mkdtemp(join(tmpdir(), 'kh-rro-'));
    const id = await h.runContainer(podId, config, 'rro', {
      mounts: [{ hostPath: dir, containerPath: '/data', readonly: true, recursiveReadOnly: true }],
    });
    expect(fake.requestOf(id).HostConfig.Mounts).toEqual([
      expect.objectContaining({
        Target: '/data',
        BindOptions: { Propagation: 'rprivate', ReadOnlyForceRecursive: true },
      }),
    ]);
    const { status } = await h.client.containerStatus({ containerId: id });
    expect(status?.mounts).toEqual([
      expect.objectContaining({ containerPath: '/data', readonly: true, recursiveReadOnly: true }),
    ]);
    await rm(dir, { recursive: true });
  });

  it('updates CPU and memory limits through the Engine, and the verbose status shows them', async () => {
    const { podId, config } = await h.runPod();
    const id = await h.runContainer(podId, config, 'upd');
    const hostConfig = async () =>
      JSON.parse((await h.client.containerStatus({ containerId: id, verbose: true })).info.info ?? '{}')
        .hostConfig;
    expect(await hostConfig()).not.toMatchObject({ Memory: 64 << 20 });
    await h.client.updateContainerResources({
      containerId: id,
      linux: { cpuQuota: 50_000n, cpuPeriod: 100_000n, memoryLimitInBytes: 64n << 20n },
    });
    expect(fake.resourcesOf(id)).toMatchObject({
      CpuQuota: 50_000,
      CpuPeriod: 100_000,
      Memory: 64 << 20,
      MemorySwap: 64 << 20,
    });
    // The verbose info is made once per inspect, and the update replaced the inspect.
    expect(await hostConfig()).toMatchObject({ CpuQuota: 50_000, Memory: 64 << 20 });
  });

  it("counts a sandbox's processes over its running containers, as containerd does (pause left out)", async () => {
    const uid = { 'io.kubernetes.pod.uid': `procs-${h.runId}` };
    const { podId, config } = await h.runPod({ labels: uid });
    fake.setPids(podId, 1);
    const a = await h.runContainer(podId, config, 'procs-a');
    const b = await h.runContainer(podId, config, 'procs-b');
    const stopped = await h.runContainer(podId, config, 'procs-stopped');
    fake.setPids(a, 3);
    fake.setPids(b, 4);
    fake.setPids(stopped, 5);
    await h.client.stopContainer({ containerId: stopped, timeout: 0n });
    const count = (s: { linux?: { process?: { processCount?: { value: bigint } } } } | undefined) =>
      s?.linux?.process?.processCount?.value;
    expect(count((await h.client.podSandboxStats({ podSandboxId: podId })).stats)).toBe(7n);
    // The agent asks by the pod's uid label.
    const listed = await h.client.listPodSandboxStats({ filter: { labelSelector: uid } });
    expect(listed.stats.map(count)).toEqual([7n]);
  });
});

describe('ExecSync', () => {
  it('returns the output and exit code, and refuses a container that does not run', async () => {
    const { podId, config } = await h.runPod();
    const id = await h.runContainer(podId, config, 'exec');
    fake.execHandler = (_c, cmd) =>
      cmd[0] === 'fail' ? { stderr: 'boom\n', exitCode: 2 } : { stdout: `${cmd.join(' ')}\n` };
    const ok = await h.client.execSync({ containerId: id, cmd: ['echo', 'hi'], timeout: 5n });
    expect(Buffer.from(ok.stdout).toString()).toBe('echo hi\n');
    expect(ok.exitCode).toBe(0);
    const failed = await h.client.execSync({ containerId: id, cmd: ['fail'], timeout: 5n });
    expect(Buffer.from(failed.stderr).toString()).toBe('boom\n');
    expect(failed.exitCode).toBe(2);
    await expect(h.client.execSync({ containerId: id, cmd: [], timeout: 5n })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
    fake.exit(id, 0);
    await waitFor(
      () =>
        h.client.execSync({ containerId: id, cmd: ['true'], timeout: 5n }).then(
          () => undefined,
          (err: unknown) => (err instanceof FailedPreconditionError ? true : undefined),
        ),
      'ExecSync to see the exit',
    );
  });

  it('keeps stdout and stderr together within the output budget', async () => {
    await h.stopShim();
    await h.startShim({ execOutputLimitBytes: 10 });
    try {
      const { podId, config } = await h.runPod();
      const id = await h.runContainer(podId, config, 'capped');
      fake.execHandler = () => ({ stdout: '1234567', stderr: 'abcdefg' });
      const r = await h.client.execSync({ containerId: id, cmd: ['x'], timeout: 5n });
      expect(Buffer.from(r.stdout).toString()).toBe('1234567');
      expect(Buffer.from(r.stderr).toString()).toBe('abc');
    } finally {
      await h.stopShim();
      await h.startShim();
    }
  });
});

describe('events', () => {
  it('streams created, started, stopped and deleted events with a pod snapshot', async () => {
    const { podId, config } = await h.runPod();
    const abort = new AbortController();
    const seen: { type: ContainerEventType; id: string; pod?: string; n: number; state?: ContainerState }[] =
      [];
    const collecting = (async () => {
      for await (const e of h.client.getContainerEvents({}, { signal: abort.signal })) {
        seen.push({
          type: e.containerEventType,
          id: e.containerId,
          pod: e.podSandboxStatus?.id,
          n: e.containersStatuses.length,
          state: e.containersStatuses.find((c) => c.id === e.containerId)?.state,
        });
      }
    })().catch(() => undefined);
    // The subscription is live once the fake has a subscriber for container events.
    await waitFor(
      async () => (fake.calls.filter((c) => c === 'events').length >= 4 ? true : undefined),
      'subscription',
    );
    const id = await h.runContainer(podId, config, 'ev');
    const saw = (type: ContainerEventType) =>
      waitFor(
        async () => (seen.some((e) => e.id === id && e.type === type) ? true : undefined),
        `event ${type}`,
      );
    await saw(ContainerEventType.CONTAINER_STARTED_EVENT);
    // Read (and cached) while running, then it dies behind the shim's back, and the inspect cache
    // hears of it late (its own subscription): the stopped event's snapshot must still show it exited.
    expect((await h.client.containerStatus({ containerId: id })).status?.state).toBe(
      ContainerState.CONTAINER_RUNNING,
    );
    fake.holdEvents((filters) => filters.event !== undefined);
    fake.exit(id, 137);
    await saw(ContainerEventType.CONTAINER_STOPPED_EVENT);
    fake.releaseEvents();
    await h.client.removeContainer({ containerId: id });
    await saw(ContainerEventType.CONTAINER_DELETED_EVENT);
    abort.abort();
    await collecting;
    const mine = seen.filter((e) => e.id === id);
    expect(mine.map((e) => e.type)).toEqual([
      ContainerEventType.CONTAINER_CREATED_EVENT,
      ContainerEventType.CONTAINER_STARTED_EVENT,
      ContainerEventType.CONTAINER_STOPPED_EVENT,
      ContainerEventType.CONTAINER_DELETED_EVENT,
    ]);
    expect(mine[1]).toMatchObject({ pod: podId, n: 1, state: ContainerState.CONTAINER_RUNNING });
    expect(mine[2]).toMatchObject({ pod: podId, n: 1, state: ContainerState.CONTAINER_EXITED });
  });
});
