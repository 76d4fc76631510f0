// The node-level managers the kubelet builds next to the pod layer: the eviction manager, which
// also decides the pressure conditions that node status and admission see, and periodic
// container and image garbage collection. Both act through the runtime manager and the pod
// workers, like every other change to the node.
import type { ContainerGCPolicy, ImageGCResult, Runtime } from '@kh/runtime-manager';
import type { KubeletEventRecorder } from './events/recorder.js';
import { EvictionManager } from './eviction/manager.js';
import { type ContainerStatsClient, CriPodStatsSource } from './eviction/pod_stats.js';
import { criImageFs, type ImageFsInfoClient, NodeSignalSource } from './eviction/signals.js';
import type { EvictionConfig } from './eviction/thresholds.js';
import type { SignalSource } from './eviction/types.js';
import { DEFAULT_CONTAINER_GC_POLICY, GarbageCollector } from './gc/garbage_collector.js';
import { runtimeReclaimer } from './gc/reclaimer.js';
import type { KubeletMetrics } from './metrics/metrics.js';
import { memoryCgroupDir } from './nodestatus/machine_info.js';
import type { PodLayer } from './pods/pod_layer.js';
import type { TimerClock } from './util/clock.js';
import type { Logger } from './util/log.js';

export interface NodeManagersInput {
  eviction: EvictionConfig;
  cri: ImageFsInfoClient & ContainerStatsClient;
  runtime: Pick<Runtime, 'garbageCollect' | 'getPods' | 'listImages' | 'removeImage'> & {
    imageGC: { garbageCollect(): Promise<ImageGCResult> };
  };
  pods: Pick<PodLayer, 'lifecycle'>;
  recorder: KubeletEventRecorder;
  metrics: KubeletMetrics;
  /** The kubelet's root dir (nodefs) and where pod volumes and logs live. */
  rootDir: string;
  podsDir: string;
  podLogsDir: string;
  /** True once every pod source delivered its first list: only then may GC treat a pod as gone. */
  allSourcesReady: () => boolean;
  /** Never removed by the disk-pressure reclaim. */
  sandboxImage?: string;
  clock: TimerClock;
  log: Logger;
  /** Replaces the node's real signals (tests). */
  signals?: SignalSource;
  containerGCPolicy?: ContainerGCPolicy;
}

export interface NodeManagers {
  eviction: EvictionManager;
  gc: GarbageCollector;
}

export async function newNodeManagers(i: NodeManagersInput): Promise<NodeManagers> {
  const containerPolicy = i.containerGCPolicy ?? DEFAULT_CONTAINER_GC_POLICY;
  const signals =
    i.signals ??
    new NodeSignalSource({
      // In a node container the agent's memory cgroup is the node's, and it bounds the pods too.
      memoryCgroupDir: (await memoryCgroupDir())?.dir ?? '',
      rootDir: i.rootDir,
      imageFs: criImageFs(i.cri),
      log: i.log,
    });
  const eviction = new EvictionManager({
    config: i.eviction,
    signals,
    podStats: new CriPodStatsSource(i.cri, { podsDir: i.podsDir, podLogsDir: i.podLogsDir }),
    activePods: () => i.pods.lifecycle.activePods(),
    killer: i.pods.lifecycle,
    podCleanedUp: (pod) => i.pods.lifecycle.podResourcesAreReclaimed(pod),
    recorder: i.recorder,
    reclaimer: runtimeReclaimer({
      runtime: i.runtime,
      containerPolicy,
      allSourcesReady: i.allSourcesReady,
      ...(i.sandboxImage ? { sandboxImage: i.sandboxImage } : {}),
    }),
    metrics: i.metrics,
    clock: i.clock,
    log: i.log,
  });
  const gc = new GarbageCollector({
    runtime: i.runtime,
    imageGC: i.runtime.imageGC,
    containerPolicy,
    allSourcesReady: i.allSourcesReady,
    recorder: i.recorder,
    metrics: i.metrics,
    clock: i.clock,
    log: i.log,
  });
  return { eviction, gc };
}
