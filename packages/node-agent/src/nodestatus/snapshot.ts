// Everything the node status setters need, gathered from the runtime, the runtime state and the
// eviction manager: the status updater and registration post it, and admission sees this node
// as the node lister has it, with the latest snapshot's status (allocatable, conditions).

import type { Clock } from '@kh/apimachinery';
import type { RuntimeFeatures, RuntimeHandler } from '@kh/runtime-manager';
import type { V1Node } from '@kubernetes/client-node';
import type { ResolvedKubeletConfig } from '../config/resolve.js';
import type { KubeletConfiguration } from '../config/types.js';
import type { NodeRuntime } from '../runtime/node_runtime.js';
import type { PressureSource } from '../types/pressure.js';
import type { MachineInfo } from './machine_info.js';
import { initialNode, type NodeIdentity } from './node.js';
import { type NodeStatusSnapshot, setNodeStatus } from './setters.js';

export interface NodeStatusSnapshotterDeps {
  config: Pick<KubeletConfiguration, 'port' | 'maxPods' | 'nodeStatusMaxImages'>;
  resolved: Pick<ResolvedKubeletConfig, 'kubeReserved' | 'systemReserved' | 'evictionHard'>;
  identity: NodeIdentity;
  nodeIP: string;
  machineInfo: MachineInfo;
  kubeletVersion: string;
  runtime: NodeRuntime;
  /** The runtime state's errors ("container runtime is down", "PLEG is not healthy: ...") and features. */
  runtimeState: {
    runtimeErrors(): string[];
    networkErrors(): string[];
    runtimeFeatures(): RuntimeFeatures | undefined;
    runtimeHandlers(): readonly RuntimeHandler[] | undefined;
  };
  pressure: PressureSource;
  /** The node shutdown manager, when graceful shutdown is on: its error keeps Ready False. */
  nodeShutdown?: { shutdownStatus(): string | undefined };
  clock: Clock;
  /** The node lister's Node (labels, extended resources others set); absent without an API server. */
  apiNode?: () => V1Node | undefined;
}

export class NodeStatusSnapshotter {
  /** The kubelet server's port as the Node reports it; the Kubelet sets the one it listens on. */
  kubeletPort: number;
  private last: NodeStatusSnapshot | undefined;

  constructor(private readonly deps: NodeStatusSnapshotterDeps) {
    this.kubeletPort = deps.config.port;
  }

  async snapshot(): Promise<NodeStatusSnapshot> {
    const { deps } = this;
    const [version, images] = await Promise.all([
      deps.runtime.version().catch(() => undefined),
      deps.runtime.listImages().catch(() => undefined),
    ]);
    const features = deps.runtimeState.runtimeFeatures();
    const runtimeHandlers = deps.runtimeState.runtimeHandlers();
    const nodeShutdownError = deps.nodeShutdown?.shutdownStatus();
    this.last = {
      hostname: deps.identity.hostname,
      nodeIP: deps.nodeIP,
      machine: deps.machineInfo,
      maxPods: deps.config.maxPods,
      kubeReserved: deps.resolved.kubeReserved,
      systemReserved: deps.resolved.systemReserved,
      evictionHard: deps.resolved.evictionHard,
      kubeletVersion: deps.kubeletVersion,
      kubeletPort: this.kubeletPort,
      ...(version !== undefined ? { runtime: { type: deps.runtime.type(), version } } : {}),
      ...(images !== undefined ? { images } : {}),
      nodeStatusMaxImages: deps.config.nodeStatusMaxImages,
      runtimeErrors: deps.runtimeState.runtimeErrors(),
      networkErrors: deps.runtimeState.networkErrors(),
      ...(nodeShutdownError ? { nodeShutdownError } : {}),
      ...(features ? { features } : {}),
      ...(runtimeHandlers ? { runtimeHandlers } : {}),
      pressure: {
        memory: deps.pressure.isUnderMemoryPressure(),
        disk: deps.pressure.isUnderDiskPressure(),
        pid: deps.pressure.isUnderPIDPressure(),
      },
    };
    return this.last;
  }

  /**
   * This node as admission sees it, as the kubelet's getNodeAnyWay: the node lister's Node (labels
   * others set, extended resources they patched into capacity) once it has listed one, else the
   * node this agent registers; its status from the latest snapshot.
   */
  currentNode(): V1Node {
    const api = this.deps.apiNode?.();
    const node = api ? structuredClone(api) : initialNode(this.deps.identity);
    if (this.last) setNodeStatus(node, this.last, new Date(this.deps.clock.now()), () => {});
    return node;
  }
}
