import { PodSandboxState } from '@kh/cri-api';
import { expectEqual, expectFailure, expectTrue } from '../framework/assert.js';
import { defineGroup } from '../framework/framework.js';

export const sandbox = defineGroup('sandbox lifecycle', {
  'RunPodSandbox makes a ready sandbox': async (ctx) => {
    const pod = await ctx.runPod();
    const { status } = await ctx.client.podSandboxStatus({ podSandboxId: pod.id });
    expectEqual(status?.state, PodSandboxState.SANDBOX_READY, 'state');
    const listed = await ctx.client.listPodSandbox({ filter: { id: pod.id } });
    expectEqual(
      listed.items.map((i) => [i.id, i.state]),
      [[pod.id, PodSandboxState.SANDBOX_READY]],
      'listed',
    );
  },

  'PodSandboxStatus preserves metadata, labels and annotations': async (ctx) => {
    const pod = await ctx.runPod({ labels: { tier: 'web' }, annotations: { 'example.com/note': 'kept' } });
    const { status } = await ctx.client.podSandboxStatus({ podSandboxId: pod.id });
    expectEqual(status?.metadata, pod.config.metadata, 'metadata');
    expectEqual(status?.labels, { ...ctx.labels, tier: 'web' }, 'labels');
    expectEqual(status?.annotations, { 'example.com/note': 'kept' }, 'annotations');
    expectTrue((status?.createdAt ?? 0n) > 0n, 'created_at is not set');
    expectTrue(status?.network?.ip, 'a pod-network sandbox has no IP');
  },

  'StopPodSandbox makes it not ready': async (ctx) => {
    const pod = await ctx.runPod();
    await ctx.client.stopPodSandbox({ podSandboxId: pod.id });
    const { status } = await ctx.client.podSandboxStatus({ podSandboxId: pod.id });
    expectEqual(status?.state, PodSandboxState.SANDBOX_NOTREADY, 'state after stop');
  },

  'RemovePodSandbox removes it and its containers': async (ctx) => {
    const pod = await ctx.runPod();
    const c = await ctx.startedContainer(pod, 'inside');
    await ctx.client.stopPodSandbox({ podSandboxId: pod.id });
    await ctx.client.removePodSandbox({ podSandboxId: pod.id });
    await expectFailure(
      ctx.client.podSandboxStatus({ podSandboxId: pod.id }),
      'status of removed sandbox',
      'NOT_FOUND',
    );
    await expectFailure(
      ctx.client.containerStatus({ containerId: c }),
      'status of its container',
      'NOT_FOUND',
    );
    expectEqual(
      (await ctx.client.listPodSandbox({ filter: { id: pod.id } })).items,
      [],
      'listed after removal',
    );
  },

  'ListPodSandbox filters by id, state and labels': async (ctx) => {
    const a = await ctx.runPod({ labels: { pick: ctx.uid } });
    const b = await ctx.runPod({ labels: { pick: ctx.uid } });
    await ctx.client.stopPodSandbox({ podSandboxId: b.id });
    const ids = async (filter: object) =>
      (await ctx.client.listPodSandbox({ filter })).items.map((i) => i.id).sort();
    expectEqual(await ids({ labelSelector: { pick: ctx.uid } }), [a.id, b.id].sort(), 'by label');
    expectEqual(await ids({ id: a.id }), [a.id], 'by id');
    expectEqual(
      await ids({ labelSelector: { pick: ctx.uid }, state: { state: PodSandboxState.SANDBOX_READY } }),
      [a.id],
      'ready',
    );
    expectEqual(
      await ids({ labelSelector: { pick: ctx.uid }, state: { state: PodSandboxState.SANDBOX_NOTREADY } }),
      [b.id],
      'not ready',
    );
  },

  'unknown sandbox ids are NOT_FOUND': async (ctx) => {
    await expectFailure(
      ctx.client.podSandboxStatus({ podSandboxId: `missing${ctx.uid}` }),
      'PodSandboxStatus',
      'NOT_FOUND',
    );
  },
});
