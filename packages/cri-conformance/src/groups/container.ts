import { ContainerState } from '@kh/cri-api';
import { expectEqual, expectFailure, expectTrue } from '../framework/assert.js';
import { defineGroup } from '../framework/framework.js';

export const container = defineGroup('container lifecycle', {
  'CreateContainer makes a created container': async (ctx) => {
    const pod = await ctx.runPod();
    const id = await ctx.createContainer(pod, 'created');
    const { status } = await ctx.client.containerStatus({ containerId: id });
    expectEqual(status?.state, ContainerState.CONTAINER_CREATED, 'state');
    expectTrue((status?.createdAt ?? 0n) > 0n, 'created_at is not set');
  },

  'ContainerStatus preserves metadata, labels, annotations and image': async (ctx) => {
    const pod = await ctx.runPod();
    const id = await ctx.createContainer(pod, 'attrs', {
      labels: { tier: 'x' },
      annotations: { 'example.com/a': 'b' },
    });
    const { status } = await ctx.client.containerStatus({ containerId: id });
    expectEqual(status?.metadata, { name: 'attrs', attempt: 0 }, 'metadata');
    expectEqual(status?.labels, { ...ctx.labels, tier: 'x' }, 'labels');
    expectEqual(status?.annotations, { 'example.com/a': 'b' }, 'annotations');
    expectTrue(status?.imageRef, 'image_ref is empty');
    const listed = (await ctx.client.listContainers({ filter: { id } })).containers[0];
    expectEqual(listed?.podSandboxId, pod.id, 'pod_sandbox_id in list');
  },

  'StartContainer makes it running': async (ctx) => {
    const pod = await ctx.runPod();
    const id = await ctx.startedContainer(pod, 'running');
    const { status } = await ctx.client.containerStatus({ containerId: id });
    expectEqual(status?.state, ContainerState.CONTAINER_RUNNING, 'state');
    expectTrue((status?.startedAt ?? 0n) >= (status?.createdAt ?? 0n), 'started_at before created_at');
  },

  'StopContainer makes it exited with timestamps': async (ctx) => {
    const pod = await ctx.runPod();
    const id = await ctx.startedContainer(pod, 'stopped');
    await ctx.client.stopContainer({ containerId: id, timeout: 1n });
    const s = await ctx.waitForState(id, ContainerState.CONTAINER_EXITED);
    expectTrue(s.finishedAt >= s.startedAt && s.startedAt > 0n, 'finished_at/started_at are not ordered');
    expectTrue(s.exitCode !== 0, `a killed container exited 0`);
  },

  'exit code and reason: Completed and Error': async (ctx) => {
    const pod = await ctx.runPod();
    const ok = await ctx.startedContainer(pod, 'ok', { command: ['sh', '-c', 'exit 0'] });
    const bad = await ctx.startedContainer(pod, 'bad', { command: ['sh', '-c', 'exit 3'] });
    const okStatus = await ctx.waitForState(ok, ContainerState.CONTAINER_EXITED);
    const badStatus = await ctx.waitForState(bad, ContainerState.CONTAINER_EXITED);
    expectEqual([okStatus.exitCode, okStatus.reason], [0, 'Completed'], 'exit 0');
    expectEqual([badStatus.exitCode, badStatus.reason], [3, 'Error'], 'exit 3');
  },

  'a container over its memory limit is OOMKilled': async (ctx) => {
    const pod = await ctx.runPod();
    const id = await ctx.startedContainer(pod, 'oom', {
      // `tail` buffers a "line" of /dev/zero that never ends, so its memory grows until the limit.
      command: ['sh', '-c', 'tail /dev/zero'],
      linux: {
        resources: { memoryLimitInBytes: 32n * 1024n * 1024n, memorySwapLimitInBytes: 32n * 1024n * 1024n },
      },
    });
    const s = await ctx.waitForState(id, ContainerState.CONTAINER_EXITED, 60_000);
    expectEqual([s.exitCode, s.reason], [137, 'OOMKilled'], 'exit code and reason');
  },

  'RemoveContainer removes a created container': async (ctx) => {
    const pod = await ctx.runPod();
    const id = await ctx.createContainer(pod, 'rm-created');
    await ctx.client.removeContainer({ containerId: id });
    await expectFailure(ctx.client.containerStatus({ containerId: id }), 'status after removal', 'NOT_FOUND');
  },

  'RemoveContainer removes a running container': async (ctx) => {
    const pod = await ctx.runPod();
    const id = await ctx.startedContainer(pod, 'rm-running');
    await ctx.client.removeContainer({ containerId: id });
    await expectFailure(ctx.client.containerStatus({ containerId: id }), 'status after removal', 'NOT_FOUND');
  },

  'RemoveContainer removes an exited container': async (ctx) => {
    const pod = await ctx.runPod();
    const id = await ctx.startedContainer(pod, 'rm-exited', { command: ['true'] });
    await ctx.waitForState(id, ContainerState.CONTAINER_EXITED);
    await ctx.client.removeContainer({ containerId: id });
    await expectFailure(ctx.client.containerStatus({ containerId: id }), 'status after removal', 'NOT_FOUND');
    expectEqual((await ctx.client.listContainers({ filter: { id } })).containers, [], 'listed after removal');
  },

  'ListContainers filters by id, sandbox, state and labels': async (ctx) => {
    const pod = await ctx.runPod();
    const other = await ctx.runPod();
    const created = await ctx.createContainer(pod, 'c1', { labels: { role: ctx.uid } });
    const running = await ctx.startedContainer(pod, 'c2');
    const elsewhere = await ctx.startedContainer(other, 'c3');
    const ids = async (filter: object) =>
      (await ctx.client.listContainers({ filter })).containers.map((c) => c.id).sort();
    expectEqual(await ids({ podSandboxId: pod.id }), [created, running].sort(), 'by sandbox');
    expectEqual(await ids({ id: running }), [running], 'by id');
    expectEqual(await ids({ labelSelector: { role: ctx.uid } }), [created], 'by label');
    expectEqual(
      await ids({ podSandboxId: pod.id, state: { state: ContainerState.CONTAINER_RUNNING } }),
      [running],
      'by state',
    );
    expectEqual(await ids({ podSandboxId: other.id }), [elsewhere], 'other sandbox');
  },

  'command, args, env and working dir': async (ctx) => {
    const pod = await ctx.runPod();
    const id = await ctx.startedContainer(pod, 'cfg', {
      command: ['sh', '-c'],
      args: ['echo "$GREETING" > /tmp/out; sleep 3600'],
      envs: [{ key: 'GREETING', value: Buffer.from('hello world') }],
      workingDir: '/tmp',
    });
    const r = await ctx.exec(id, ['sh', '-c', 'cat out; pwd']);
    expectEqual(r.stdout, 'hello world\n/tmp\n', 'output');
  },

  'read-only host path mount': async (ctx) => {
    const pod = await ctx.runPod();
    const id = await ctx.startedContainer(pod, 'mount', {
      mounts: [{ hostPath: '/etc', containerPath: '/mnt/host-etc', readonly: true }],
    });
    expectEqual(
      (await ctx.exec(id, ['sh', '-c', 'test -e /mnt/host-etc/hostname'])).exitCode,
      0,
      'host file visible',
    );
    expectTrue(
      (await ctx.exec(id, ['sh', '-c', 'touch /mnt/host-etc/kh 2>/dev/null'])).exitCode !== 0,
      'read-only mount was writable',
    );
    const { status } = await ctx.client.containerStatus({ containerId: id });
    const mount = status?.mounts.find((m) => m.containerPath === '/mnt/host-etc');
    expectEqual([mount?.hostPath, mount?.readonly], ['/etc', true], 'mount in status');
  },

  'unknown container ids are NOT_FOUND': async (ctx) => {
    await expectFailure(
      ctx.client.containerStatus({ containerId: `missing${ctx.uid}` }),
      'ContainerStatus',
      'NOT_FOUND',
    );
    await expectFailure(
      ctx.client.startContainer({ containerId: `missing${ctx.uid}` }),
      'StartContainer',
      'NOT_FOUND',
    );
  },
});
