// containerd with its built-in CRI plugin, as the main process of a kind-style node container.
import Docker from 'dockerode';
import { ContainerHost } from '../node/container-host.js';
import { kindNode, NODE_MEMORY_LIMIT_BYTES, pidOf, waitForCri } from './cri.js';
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
      // containerd is PID 1's only child: if it exited, the node container would end with it. So
      // "stopped" means frozen (SIGSTOP): the socket stays, and every CRI call hangs to its deadline.
      const signal = async (sig: 'STOP' | 'CONT') => {
        const pid = await pidOf((c) => host.exec(c), 'containerd');
        const r = await host.exec(['kill', `-${sig}`, String(pid)]);
        if (r.exitCode !== 0) throw new Error(`kill -${sig} containerd failed: ${r.output}`);
      };
      return {
        nodeCriEndpoint: node.criEndpointInNode,
        hostCriEndpoint: node.criEndpointOnHost,
        ...version,
        nodeName: node.name,
        nodeIp: node.ipAddress(ctx.network),
        host,
        memoryLimitBytes: NODE_MEMORY_LIMIT_BYTES,
        cgroupParent: node.cgroupParent,
        stopRuntime: () => signal('STOP'),
        startRuntime: () => signal('CONT'),
        runtimeLogs: async (lines) => (await node.logs(lines)).split('\n'),
        stop: () => node.stop(),
      };
    } catch (err) {
      await node.stop();
      throw err;
    }
  },
};
