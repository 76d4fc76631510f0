// A real containerd (in a testkit node container) with a runtime manager on the host talking
// to it through the node's CRI socket. The node's /run/kh is a host directory, so pod logs and
// termination message files live there and both sides see them (through a path mapping).
import { join } from 'node:path';
import { type CriCallEvent, CriClient } from '@kh/cri-api';
import { ensureImages, NodeContainer, runId, type StartedNodeContainer } from '@kh/testkit';
import { KubeGenericRuntimeManager, type RuntimeManagerOptions } from '../src/kuberuntime/manager.js';

export interface ContainerdNode {
  node: StartedNodeContainer;
  cri: CriClient;
  manager: KubeGenericRuntimeManager;
  /** busybox as the runtime names it (docker.io/kubelet-harness/busybox:<hash>). */
  busybox: string;
  /** Opens another manager over the same runtime, as a restarted agent would. */
  newManager(extra?: Partial<RuntimeManagerOptions>): Promise<KubeGenericRuntimeManager>;
  stop(): Promise<void>;
}

export async function startContainerdNode(
  opts: {
    onCall?: (e: CriCallEvent) => void;
    progress?: (line: string) => void;
    manager?: Partial<RuntimeManagerOptions>;
  } = {},
): Promise<ContainerdNode> {
  const progress = opts.progress ?? (() => undefined);
  const refs = await ensureImages(['pause', 'busybox', 'node'], { progress });
  progress(`starting containerd node (run ${runId})`);
  const node = await new NodeContainer(refs.node)
    .withRuntime('containerd')
    .withPauseImage(refs.pause)
    .withImages(refs.busybox)
    .start();
  const clients: CriClient[] = [];
  try {
    const newManager = async (extra: Partial<RuntimeManagerOptions> = {}) => {
      const cri = await CriClient.connect(node.criEndpointOnHost, { timeoutMs: 60_000, onCall: opts.onCall });
      clients.push(cri);
      return KubeGenericRuntimeManager.create({
        cri,
        podLogsRootDir: join(node.sharedDirOnHost, 'logs'),
        podsDir: join(node.sharedDirOnHost, 'pods'),
        pathMapping: { agentRoot: node.sharedDirOnHost, runtimeRoot: node.sharedDirInNode },
        cgroupParent: node.cgroupParent,
        podSandboxImage: refs.pause,
        ...opts.manager,
        ...extra,
      });
    };
    const manager = await newManager();
    return {
      node,
      cri: clients[0]!,
      manager,
      busybox: `docker.io/${refs.busybox}`,
      newManager,
      async stop() {
        for (const c of clients) c.close();
        await node.stop();
      },
    };
  } catch (err) {
    for (const c of clients) c.close();
    await node.stop();
    throw err;
  }
}
