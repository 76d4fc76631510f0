import { join } from 'node:path';
import { CriClient } from '@kh/cri-api';
import { KubeGenericRuntimeManager, type RuntimeManagerOptions } from '@kh/runtime-manager';
import { ensureImages, type ImageName, NodeContainer, type StartedNodeContainer } from '@kh/testkit';

/** A testkit node container running containerd, with a CRI client on its socket. */
export interface ContainerdTestNode<I extends ImageName> {
  readonly node: StartedNodeContainer;
  /** Local image references: pause, node and the workload images asked for. */
  readonly refs: Record<I | 'pause' | 'node', string>;
  readonly cri: CriClient;
  /** The pods directory in the node's shared directory, as the agent sees it. */
  readonly podsDir: string;
  /**
   * A runtime manager wired as the agent wires it: pod logs and pod directories in the shared
   * directory (with the path mapping into the node), the pause image, pods under the node's cgroup.
   */
  runtimeManager(extra?: Partial<RuntimeManagerOptions>): Promise<KubeGenericRuntimeManager>;
  /** Closes the CRI client and removes the node container. */
  stop(): Promise<void>;
}

/** Builds (or reuses) the images, starts a containerd node with the workload images loaded. */
export async function startContainerdNode<const I extends ImageName>(
  images: readonly I[],
  options: { memoryLimitBytes?: number; sharedDirOnTmpfs?: string } = {},
): Promise<ContainerdTestNode<I>> {
  const refs = await ensureImages(['pause', 'node', ...images], { progress: (l) => console.log(l) });
  const builder = new NodeContainer(refs.node)
    .withRuntime('containerd')
    .withPauseImage(refs.pause)
    .withImages(...images.map((i) => refs[i]));
  if (options.memoryLimitBytes !== undefined) builder.withMemoryLimit(options.memoryLimitBytes);
  if (options.sharedDirOnTmpfs !== undefined) builder.withSharedDirOnTmpfs(options.sharedDirOnTmpfs);
  const node = await builder.start();
  let cri: CriClient;
  try {
    cri = await CriClient.connect(node.criEndpointOnHost);
  } catch (err) {
    await node.stop();
    throw err;
  }
  const shared = node.sharedDirOnHost;
  const podsDir = join(shared, 'pods');
  return {
    node,
    refs,
    cri,
    podsDir,
    runtimeManager: (extra = {}) =>
      KubeGenericRuntimeManager.create({
        cri,
        podLogsRootDir: join(shared, 'logs'),
        podsDir,
        pathMapping: { agentRoot: shared, runtimeRoot: node.sharedDirInNode },
        podSandboxImage: refs.pause,
        cgroupParent: node.cgroupParent,
        ...extra,
      }),
    stop: async () => {
      cri.close();
      await node.stop();
    },
  };
}
