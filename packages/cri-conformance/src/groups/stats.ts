import { expectEqual, expectTrue } from '../framework/assert.js';
import { defineGroup, requireSupported, waitFor } from '../framework/framework.js';

export const stats = defineGroup('stats', {
  'ContainerStats reports CPU, memory and writable layer': async (ctx) => {
    const pod = await ctx.runPod();
    const id = await ctx.startedContainer(pod, 'busy', { command: ['sh', '-c', 'while true; do :; done'] });
    const s = await waitFor(async () => {
      const r = (await ctx.client.containerStats({ containerId: id })).stats;
      return (r?.cpu?.usageCoreNanoSeconds?.value ?? 0n) > 0n ? r : undefined;
    }, 'CPU usage to show');
    expectEqual(s.attributes?.id, id, 'attributes.id');
    expectEqual(s.attributes?.metadata, { name: 'busy', attempt: 0 }, 'attributes.metadata');
    expectTrue((s.memory?.workingSetBytes?.value ?? 0n) > 0n, 'memory.working_set_bytes is not set');
    expectTrue(s.writableLayer?.fsId?.mountpoint, 'writable_layer.fs_id.mountpoint is empty');
  },

  'ListContainerStats includes created containers and filters by label and id': async (ctx) => {
    const pod = await ctx.runPod();
    const running = await ctx.startedContainer(pod, 'r', { labels: { stats: ctx.uid } });
    const created = await ctx.createContainer(pod, 'c', { labels: { stats: ctx.uid } });
    const ids = async (filter: object) =>
      (await ctx.client.listContainerStats({ filter })).stats.map((s) => s.attributes?.id).sort();
    expectEqual(await ids({ labelSelector: { stats: ctx.uid } }), [running, created].sort(), 'by label');
    expectEqual(await ids({ id: running }), [running], 'by id');
    expectEqual(await ids({ podSandboxId: pod.id }), [running, created].sort(), 'by sandbox');
  },

  'PodSandboxStats and ListPodSandboxStats report the pod': async (ctx) => {
    const pod = await ctx.runPod({ labels: { podstats: ctx.uid } });
    const id = await ctx.startedContainer(pod, 'member');
    const s = await waitFor(async () => {
      const r = (
        await requireSupported('PodSandboxStats', () => ctx.client.podSandboxStats({ podSandboxId: pod.id }))
      ).stats;
      return (r?.linux?.memory?.workingSetBytes?.value ?? 0n) > 0n ? r : undefined;
    }, 'pod memory to show');
    expectEqual(s.attributes?.id, pod.id, 'attributes.id');
    expectTrue(
      s.linux?.containers.some((c) => c.attributes?.id === id),
      'the pod stats do not list its container',
    );
    const list = await ctx.client.listPodSandboxStats({ filter: { labelSelector: { podstats: ctx.uid } } });
    expectEqual(
      list.stats.map((p) => p.attributes?.id),
      [pod.id],
      'ListPodSandboxStats by label',
    );
  },
});
