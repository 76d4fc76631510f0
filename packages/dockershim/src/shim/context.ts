import type Dockerode from 'dockerode';
import type { CpuSampler } from './cpu_sampler.js';
import type { ImageCache } from './image_cache.js';
import type { InspectCache } from './inspect_cache.js';
import type { KnownIds } from './known_ids.js';
import type { LogManager } from './logs.js';

export interface DockerShimConfig {
  /** Image of sandbox (pause) containers: --pod-infra-container-image. */
  podInfraContainerImage: string;
  /** Docker network for pods that do not use the host network. Docker's default bridge unless told. */
  network: string;
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
  network: 'bridge',
  execOutputLimitBytes: 16 * 1024 * 1024,
  restrictOomScoreAdj: false,
};

/** What every handler gets: the Engine client, the config and the shim's little in-memory state. */
export interface ShimContext {
  docker: Dockerode;
  config: DockerShimConfig;
  /** This shim's endpoint as configured; it labels the containers the shim creates. */
  instance: string;
  logs: LogManager;
  cpu: CpuSampler;
  inspects: InspectCache;
  images: ImageCache;
  known: KnownIds;
  /** oom_score_adj of the shim process (the floor when restrictOomScoreAdj is set). */
  ownOomScoreAdj: number;
  /** Docker's data root (docker info DockerRootDir), read once. */
  dockerRootDir(): Promise<string>;
}
