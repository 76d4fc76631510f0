// Docker Engine behind our dockershim: dockerd runs under the node's init (so it can be stopped
// and started again) and the dockershim (from the host checkout, on the host's Node) serves CRI
// next to it.
import Docker from 'dockerode';
import { ContainerHost } from '../node/container-host.js';
import type { NodeProcess } from '../node/host.js';
import { inContainer } from '../node/project.js';
import { kindNode, NODE_MEMORY_LIMIT_BYTES, restoreSandboxImage, waitForCri } from './cri.js';
import type { RuntimeBackend } from './types.js';

export const dockerBackend: RuntimeBackend = {
  name: 'docker',
  description: 'dockerd 20.10 behind our dockershim, in a kind-style node container',
  capabilities: new Set(['real-containers', 'memory-pressure', 'registry-pull', 'runtime-restart']),
  async start(ctx) {
    const node = await kindNode(ctx, 'docker').withImages(ctx.images.pause).start();
    const host = new ContainerHost(new Docker(), node.id);
    let shim: NodeProcess | undefined;
    const startShim = async () => {
      ctx.progress('starting dockershim');
      shim = await host.spawn(
        inContainer('dockershim', [
          `--listen=${node.criEndpointInNode}`,
          `--docker-endpoint=${node.runtimeEndpointInNode}`,
          `--pod-infra-container-image=${ctx.images.pause}`,
          // The node lacks CAP_SYS_RESOURCE (PLATFORM.md): a negative oom_score_adj would fail.
          '--restrict-oom-score-adj',
        ]),
        { name: 'dockershim' },
      );
      return waitForCri(node.criEndpointOnHost, 30_000, async () => shim?.tail(20).join('\n') ?? '');
    };
    const stopShim = async () => {
      await shim?.stop('SIGTERM');
      shim = undefined;
    };
    try {
      const version = await startShim();
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
        // dockerd stops for real, as `systemctl stop docker` would, and the dockershim stays up:
        // the agent must see the engine's absence through the shim (RuntimeReady=false).
        stopRuntime: () => node.stopRuntime(),
        startRuntime: async () => {
          await node.startRuntime();
          await waitForCri(node.criEndpointOnHost, 30_000, async () => shim?.tail(20).join('\n') ?? '');
        },
        runtimeLogs: async (lines) => [
          ...(shim?.tail(lines) ?? []),
          ...(await node.logs(lines)).split('\n').map((l) => `dockerd: ${l}`),
        ],
        stop: async () => {
          await stopShim().catch(() => {});
          await node.stop();
        },
      };
    } catch (err) {
      await stopShim().catch(() => {});
      await node.stop();
      throw err;
    }
  },
};
