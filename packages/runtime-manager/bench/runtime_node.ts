// A real runtime in a testkit node container, containerd's CRI plugin or our dockershim next to
// the node's dockerd, with a runtime manager on the host talking to it through the node's CRI
// socket. The host's engine only runs the node. The node's /run/kh is a host directory, so pod
// logs and termination message files live there and both sides see them (through a path mapping).
import { join } from 'node:path';
import { type CriCallEvent, CriClient } from '@kh/cri-api';
import { dockershimCli, startDockershim, withCheckout } from '@kh/cri-conformance';
import {
  DEFAULT_NODE_RELEASE,
  DOCKERSHIM_CNI_FLAGS,
  ensureImages,
  NodeContainer,
  type NodeRelease,
  nodeImageName,
  POD_SUBNET,
  runId,
  type StartedNodeContainer,
} from '@kh/testkit';
import { KubeGenericRuntimeManager, type RuntimeManagerOptions } from '../src/kuberuntime/manager.js';

export interface RuntimeNode {
  node: StartedNodeContainer;
  cri: CriClient;
  manager: KubeGenericRuntimeManager;
  /** busybox as the runtime names it (containerd: docker.io/kubelet-harness/busybox:<hash>). */
  busybox: string;
  /** Opens another manager over the same runtime, as a restarted agent would. */
  newManager(extra?: Partial<RuntimeManagerOptions>): Promise<KubeGenericRuntimeManager>;
  stop(): Promise<void>;
}

/**
 * A node of `release` (default DEFAULT_NODE_RELEASE), whose runtime versions are the ones under
 * test. `docker` runs the dockershim from this checkout in the node on CNI, the network a real
 * node's shim has (cri-dockerd's default), the pod CIDR passed on as the agent does.
 */
export async function startRuntimeNode(opts: {
  runtime: 'containerd' | 'docker';
  release?: NodeRelease;
  onCall?: (e: CriCallEvent) => void;
  progress?: (line: string) => void;
  manager?: Partial<RuntimeManagerOptions>;
}): Promise<RuntimeNode> {
  const progress = opts.progress ?? (() => undefined);
  const image = nodeImageName(opts.release ?? DEFAULT_NODE_RELEASE);
  const refs = await ensureImages(['pause', 'busybox', image], { progress });
  progress(`starting ${opts.runtime} ${image} (run ${runId})`);
  const docker = opts.runtime === 'docker';
  const builder = new NodeContainer(refs[image])
    .withRuntime(opts.runtime)
    .withPauseImage(refs.pause)
    .withImages(refs.busybox)
    .withProgress(progress);
  // dockerd preloads no sandbox image: the shim gets the pause image as an ordinary one.
  if (docker) withCheckout(builder, dockershimCli().root).withImages(refs.pause);
  const node = await builder.start();
  const clients: CriClient[] = [];
  try {
    if (docker) await startDockershim(node, { pauseImage: refs.pause, shimArgs: DOCKERSHIM_CNI_FLAGS });
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
    // The shim writes the node's CNI config from the Node's pod CIDR (containerd got it at start).
    if (docker) await manager.updatePodCIDR(POD_SUBNET);
    return {
      node,
      cri: clients[0]!,
      manager,
      busybox: docker ? refs.busybox : `docker.io/${refs.busybox}`,
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
