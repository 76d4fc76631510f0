import { readFile } from 'node:fs/promises';
import { type CriImageHandlers, type CriRuntimeHandlers, type CriServer, serveCri } from '@kh/cri-api';
import { StreamingServer } from '@kh/cri-streaming';
import { createContainer } from './core/container_create.js';
import { execSync } from './core/container_exec.js';
import { listContainers } from './core/container_list.js';
import { reopenContainerLog, resumeLogCopiers } from './core/container_log.js';
import { removeContainer } from './core/container_remove.js';
import { startContainer } from './core/container_start.js';
import { containerStatus } from './core/container_status.js';
import { stopContainer } from './core/container_stop.js';
import {
  attach,
  DockerStreamingRuntime,
  exec,
  portForward,
  type StreamingUrls,
} from './core/container_streaming.js';
import { updateContainerResources } from './core/container_update.js';
import { DEFAULT_CONFIG, type DockerShimConfig, type ShimContext } from './core/context.js';
import { docker } from './core/errors.js';
import { getContainerEvents } from './core/events.js';
import { imageStatus, listImages, pullImage, removeImage } from './core/image.js';
import { imageFsInfo } from './core/imagefs.js';
import { removePodSandbox } from './core/sandbox_remove.js';
import { runPodSandbox } from './core/sandbox_run.js';
import { listPodSandbox, podSandboxStatus } from './core/sandbox_status.js';
import { stopPodSandbox } from './core/sandbox_stop.js';
import { containerStats, listContainerStats, listPodSandboxStats, podSandboxStats } from './core/stats.js';
import { runtimeConfig, status, updateRuntimeConfig, version } from './core/status_version.js';
import { DockerodeClient } from './docker/api_client.js';
import type { DockerClient } from './docker/client.js';
import { DockerOperationMetrics, instrumentedDockerClient } from './docker/instrumented.js';
import { LogManager } from './logs/copier.js';
import { CniNetworkPlugin } from './network/cni.js';
import { CpuSampler } from './state/cpu_sampler.js';
import { ImageCache } from './state/image_cache.js';
import { InspectCache } from './state/inspect_cache.js';
import { KnownIds } from './state/known_ids.js';
import { OomEvents } from './state/oom_events.js';

export interface DockerShimOptions extends Partial<DockerShimConfig> {
  /** Docker Engine endpoint (ignored when `docker` is given). Default unix:///var/run/docker.sock. */
  dockerEndpoint?: string;
  /** The Engine client: DockerodeClient, or FakeDockerClient in tests. Its calls are timed. */
  docker?: DockerClient;
  /** Where to listen: a unix socket path, or an address such as tcp://127.0.0.1:0. */
  socketPath?: string;
  address?: string;
  /** host:port of the streaming server behind Exec/Attach/PortForward URLs. */
  streamingAddress?: string;
  /** Diagnostics (a log copier failed, ...). Default: stderr. */
  log?: (line: string) => void;
}

async function readOwnOomScoreAdj(): Promise<number> {
  try {
    return Number((await readFile('/proc/self/oom_score_adj', 'utf8')).trim());
  } catch {
    return 0;
  }
}

export const DEFAULT_STREAMING_ADDRESS = '127.0.0.1:0';

/** The RuntimeService and ImageService handlers of the shim, for serveCri. */
export function dockerShimHandlers(
  ctx: ShimContext,
  streaming: StreamingUrls,
): {
  runtime: Partial<CriRuntimeHandlers>;
  image: Partial<CriImageHandlers>;
} {
  return {
    runtime: {
      version: () => version(ctx),
      status: (req) => status(ctx, req),
      runtimeConfig: () => runtimeConfig(ctx),
      updateRuntimeConfig: (req) => updateRuntimeConfig(ctx, req),
      runPodSandbox: (req, call) => runPodSandbox(ctx, req, call.signal),
      stopPodSandbox: (req) => stopPodSandbox(ctx, req),
      removePodSandbox: (req) => removePodSandbox(ctx, req),
      podSandboxStatus: (req) => podSandboxStatus(ctx, req),
      listPodSandbox: (req) => listPodSandbox(ctx, req),
      createContainer: (req) => createContainer(ctx, req),
      startContainer: (req) => startContainer(ctx, req),
      stopContainer: (req) => stopContainer(ctx, req),
      removeContainer: (req) => removeContainer(ctx, req),
      listContainers: (req) => listContainers(ctx, req),
      containerStatus: (req) => containerStatus(ctx, req),
      updateContainerResources: (req) => updateContainerResources(ctx, req),
      reopenContainerLog: (req) => reopenContainerLog(ctx, req),
      execSync: (req, call) => execSync(ctx, req, call.signal),
      exec: (req) => exec(ctx, streaming, req),
      attach: (req) => attach(ctx, streaming, req),
      portForward: (req) => portForward(ctx, streaming, req),
      containerStats: (req) => containerStats(ctx, req),
      listContainerStats: (req) => listContainerStats(ctx, req),
      podSandboxStats: (req) => podSandboxStats(ctx, req),
      listPodSandboxStats: (req) => listPodSandboxStats(ctx, req),
      getContainerEvents: (req, call) => getContainerEvents(ctx, req, call.signal),
    },
    image: {
      listImages: (req) => listImages(ctx, req),
      imageStatus: (req) => imageStatus(ctx, req),
      pullImage: (req) => pullImage(ctx, req),
      removeImage: (req) => removeImage(ctx, req),
      imageFsInfo: () => imageFsInfo(ctx),
    },
  };
}

/** A running dockershim: a CRI server backed by one Docker Engine. Start it, use `endpoint`, close it. */
export class DockerShim {
  private constructor(
    private readonly server: CriServer,
    private readonly streaming: StreamingServer,
    private readonly runtime: DockerStreamingRuntime,
    readonly context: ShimContext,
    /** Latency and errors of every Engine call the shim made (cri-dockerd's docker_operations_*). */
    readonly dockerOperations: DockerOperationMetrics,
  ) {}

  get endpoint(): string {
    return this.server.endpoint;
  }

  /** Base of the URLs Exec, Attach and PortForward return. */
  get streamingUrl(): string {
    return this.streaming.baseUrl;
  }

  static async start(options: DockerShimOptions): Promise<DockerShim> {
    const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
    const metrics = new DockerOperationMetrics();
    const client = instrumentedDockerClient(
      options.docker ?? DockerodeClient.connect(options.dockerEndpoint),
      metrics,
    );
    const address = options.address ?? 'tcp://127.0.0.1:0';
    const config: DockerShimConfig = { ...DEFAULT_CONFIG };
    for (const [key, value] of Object.entries(options))
      if (key in DEFAULT_CONFIG && value !== undefined) Object.assign(config, { [key]: value });
    // Daemon-wide settings that change only with a daemon restart, read once (again after a failure),
    // as cri-dockerd reads them when it starts: docker info costs the Engine ~10 ms each time.
    const engineInfo = cachedUntilFailure(() => docker('docker info', () => client.info()));
    const ctx: ShimContext = {
      docker: client,
      instance: options.socketPath ? `unix://${options.socketPath}` : address,
      config,
      network:
        config.networkPlugin === 'cni'
          ? await CniNetworkPlugin.create({
              confDir: config.cniConfDir,
              binDirs: config.cniBinDirs,
              cacheDir: config.cniCacheDir,
              timeoutMs: config.cniTimeoutMs,
              ...(config.cniConfTemplate ? { confTemplate: config.cniConfTemplate } : {}),
              log,
            })
          : undefined,
      logs: new LogManager(client, (id, err) =>
        log(`dockershim: log copier of container ${id}: ${String(err)}`),
      ),
      cpu: new CpuSampler(),
      inspects: new InspectCache(client),
      images: new ImageCache(client),
      known: new KnownIds(),
      ooms: new OomEvents(client),
      ownOomScoreAdj: await readOwnOomScoreAdj(),
      dockerRootDir: async () => (await engineInfo()).DockerRootDir,
      cgroupDriver: async () => (await engineInfo()).CgroupDriver,
      engineApiVersion: cachedUntilFailure(() =>
        docker('docker version', () => client.version()).then((v) => v.ApiVersion),
      ),
    };
    await Promise.all([ctx.inspects.start(), ctx.images.start(), ctx.ooms.start()]);
    // Containers that ran while no shim was up still need their output in the CRI files.
    await resumeLogCopiers(ctx).catch((err: unknown) =>
      log(`dockershim: could not resume log copiers: ${String(err)}`),
    );
    const runtime = new DockerStreamingRuntime(ctx);
    const streaming = await StreamingServer.start({
      runtime,
      address: options.streamingAddress ?? DEFAULT_STREAMING_ADDRESS,
      onError: (err) => log(`dockershim: streaming: ${err.message}`),
    });
    try {
      const server = await serveCri(
        { name: 'dockershim', ...dockerShimHandlers(ctx, streaming) },
        options.socketPath ? { socketPath: options.socketPath } : { address },
      );
      return new DockerShim(server, streaming, runtime, ctx, metrics);
    } catch (err) {
      await streaming.close();
      throw err;
    }
  }

  async close(): Promise<void> {
    await this.server.close({ graceMs: 2_000 });
    // Ends every session: execs are killed, attaches detached, forwarded connections closed.
    await this.streaming.close();
    this.runtime.close();
    this.context.inspects.close();
    this.context.ooms.close();
    this.context.images.close();
    await this.context.logs.close();
  }
}

/** `read` once; a failed read is forgotten, so the next call asks the Engine again. */
function cachedUntilFailure<T>(read: () => Promise<T>): () => Promise<T> {
  let cached: Promise<T> | undefined;
  return () => {
    cached ??= read();
    cached.catch(() => {
      cached = undefined;
    });
    return cached;
  };
}
