// containerd with its built-in CRI plugin in a kind-style node container, supervised by the
// node's init so that it can be stopped and started again like a systemd unit on a real node.
import Docker from 'dockerode';
import { ContainerHost } from '../node/container-host.js';
import { kindNode, NODE_MEMORY_LIMIT_BYTES, restoreSandboxImage, waitForCri } from './cri.js';
import type { RuntimeBackend } from './types.js';

export const containerdBackend: RuntimeBackend = {
  name: 'containerd',
  description: 'containerd 1.6 (CRI plugin) in a kind-style node container',
  capabilities: new Set(['real-containers', 'memory-pressure', 'registry-pull', 'runtime-restart']),
  async start(ctx) {
    const node = await kindNode(ctx, 'containerd').withPauseImage(ctx.images.pause).start();
    try {
      const host = new ContainerHost(new Docker(), node.id);
      const version = await waitForCri(node.criEndpointOnHost, 30_000, () => node.logs(20));
      return {
        nodeCriEndpoint: node.criEndpointInNode,
        hostCriEndpoint: node.criEndpointOnHost,
        ...version,
        nodeName: node.name,
        sandboxImage: ctx.images.pause,
        restoreSandboxImage: () => restoreSandboxImage(node, ctx.images.pause),
        nodeIp: node.ipAddress(ctx.network),
        host,
        memoryLimitBytes: NODE_MEMORY_LIMIT_BYTES,
        cgroupParent: node.cgroupParent,
        // containerd really exits (its socket goes away); the shims keep the pods' containers alive.
        stopRuntime: () => node.stopRuntime(),
        startRuntime: () => node.startRuntime(),
        runtimeLogs: async (lines) => (await node.logs(lines)).split('\n'),
        stop: () => node.stop(),
      };
    } catch (err) {
      await node.stop();
      throw err;
    }
  },
};
