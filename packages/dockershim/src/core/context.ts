import type { DockerClient } from '../docker/client.js';
import type { LogManager } from '../logs/copier.js';
import {
  type CniNetworkPlugin,
  DEFAULT_CNI_BIN_DIR,
  DEFAULT_CNI_CACHE_DIR,
  DEFAULT_CNI_CONF_DIR,
  DEFAULT_CNI_TIMEOUT_MS,
} from '../network/cni.js';
import type { CpuSampler } from '../state/cpu_sampler.js';
import type { ImageCache } from '../state/image_cache.js';
import type { InspectCache } from '../state/inspect_cache.js';
import type { KnownIds } from '../state/known_ids.js';
import type { OomEvents } from '../state/oom_events.js';

/** --network-plugin: pods on CNI (cri-dockerd's default), or on a Docker network as before. */
export type NetworkPluginName = 'cni' | 'docker';
export const NETWORK_PLUGINS: readonly NetworkPluginName[] = ['cni', 'docker'];

export interface DockerShimConfig {
  /** Image of sandbox (pause) containers: --pod-infra-container-image. */
  podInfraContainerImage: string;
  networkPlugin: NetworkPluginName;
  /** Docker network of pods without host network in `docker` mode. Docker's default bridge unless told. */
  network: string;
  /** --cni-bin-dir (a comma list there): where CNI plugins are looked up, in order. */
  cniBinDirs: string[];
  /** --cni-conf-dir: the first valid config in name order is the pods' network. */
  cniConfDir: string;
  /** --cni-cache-dir: libcni's result cache, which DEL and pod IPs read after a restart. */
  cniCacheDir: string;
  /** --cni-conf-template: rendered into cniConfDir when UpdateRuntimeConfig brings the pod CIDR. */
  cniConfTemplate: string | undefined;
  /** Deadline of one CNI set-up or tear-down, every plugin included (cri-dockerd's 220 s). */
  cniTimeoutMs: number;
  /** Shared stdout+stderr budget of one ExecSync, in bytes. */
  execOutputLimitBytes: number;
  /**
   * Clamp requested oom_score_adj to the shim's own (as containerd's restrict_oom_score_adj does), for
   * hosts whose capability set lacks CAP_SYS_RESOURCE and so cannot lower it.
   */
  restrictOomScoreAdj: boolean;
}

export const DEFAULT_CONFIG: DockerShimConfig = {
  podInfraContainerImage: 'registry.k8s.io/pause:3.10',
  networkPlugin: 'cni',
  network: 'bridge',
  cniBinDirs: [DEFAULT_CNI_BIN_DIR],
  cniConfDir: DEFAULT_CNI_CONF_DIR,
  cniCacheDir: DEFAULT_CNI_CACHE_DIR,
  cniConfTemplate: undefined,
  cniTimeoutMs: DEFAULT_CNI_TIMEOUT_MS,
  execOutputLimitBytes: 16 * 1024 * 1024,
  restrictOomScoreAdj: false,
};

/** What every handler gets: the Engine client, the config and the shim's little in-memory state. */
export interface ShimContext {
  docker: DockerClient;
  config: DockerShimConfig;
  /** This shim's endpoint as configured; it labels the containers the shim creates. */
  instance: string;
  logs: LogManager;
  cpu: CpuSampler;
  inspects: InspectCache;
  images: ImageCache;
  known: KnownIds;
  /** Docker's oom, kill and die events: OOM kills Docker reports after the exit. */
  ooms: OomEvents;
  /** The CNI plugin in `cni` mode; absent in `docker` mode. */
  network: CniNetworkPlugin | undefined;
  /** oom_score_adj of the shim process (the floor when restrictOomScoreAdj is set). */
  ownOomScoreAdj: number;
  /** Docker's data root (docker info DockerRootDir), read once. */
  dockerRootDir(): Promise<string>;
  /** Docker's cgroup driver (docker info CgroupDriver), read once with the data root. */
  cgroupDriver(): Promise<string | undefined>;
  /** The Engine's API version (docker version ApiVersion), read once. */
  engineApiVersion(): Promise<string>;
}
