import { ContainerState } from '@kh/cri-api';
import { defineGroup } from '../framework/framework.js';

// The CRI says these calls are idempotent: once the resource is gone or stopped, they must succeed.
export const idempotence = defineGroup('idempotence', {
  'StopPodSandbox of an unknown sandbox succeeds': async (ctx) => {
    await ctx.client.stopPodSandbox({ podSandboxId: `missing${ctx.uid}` });
  },

  'StopPodSandbox of a stopped sandbox succeeds': async (ctx) => {
    const pod = await ctx.runPod();
    await ctx.client.stopPodSandbox({ podSandboxId: pod.id });
    await ctx.client.stopPodSandbox({ podSandboxId: pod.id });
  },

  'RemovePodSandbox of an unknown sandbox succeeds': async (ctx) => {
    await ctx.client.removePodSandbox({ podSandboxId: `missing${ctx.uid}` });
  },

  'RemovePodSandbox of a removed sandbox succeeds': async (ctx) => {
    const pod = await ctx.runPod();
    await ctx.client.stopPodSandbox({ podSandboxId: pod.id });
    await ctx.client.removePodSandbox({ podSandboxId: pod.id });
    await ctx.client.removePodSandbox({ podSandboxId: pod.id });
  },

  'StopContainer of an unknown container succeeds': async (ctx) => {
    await ctx.client.stopContainer({ containerId: `missing${ctx.uid}`, timeout: 1n });
  },

  'StopContainer of a stopped container succeeds': async (ctx) => {
    const pod = await ctx.runPod();
    const id = await ctx.startedContainer(pod, 'stop-twice');
    await ctx.client.stopContainer({ containerId: id, timeout: 1n });
    await ctx.waitForState(id, ContainerState.CONTAINER_EXITED);
    await ctx.client.stopContainer({ containerId: id, timeout: 1n });
  },

  'RemoveContainer of an unknown container succeeds': async (ctx) => {
    await ctx.client.removeContainer({ containerId: `missing${ctx.uid}` });
  },

  'RemoveContainer of a removed container succeeds': async (ctx) => {
    const pod = await ctx.runPod();
    const id = await ctx.createContainer(pod, 'remove-twice');
    await ctx.client.removeContainer({ containerId: id });
    await ctx.client.removeContainer({ containerId: id });
  },

  'RemoveImage of an absent image succeeds': async (ctx) => {
    await ctx.client.removeImage({ image: { image: `kh-conformance/absent-${ctx.uid}:none` } });
  },
});
