// node-agent: our kubelet's command. The flow mirrors the kubelet's:
// newKubeletCommand (flags) -> run (config, dependencies) -> runKubelet (build, signals)
// -> Kubelet.run -> syncLoop. The executable entry point is main.ts.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { CriClient, type CriClientOptions } from '@kh/cri-api';
import {
  DefaultRelistPeriodMs,
  GenericPLEG,
  KubeGenericRuntimeManager,
  newCrashLoopBackoff,
  type RuntimeManagerOptions,
} from '@kh/runtime-manager';
import { AdmitHandlers } from './admission/handler.js';
import { PredicateAdmitHandler } from './admission/predicate.js';
import { KubeNodeApi, loadKubeConfig } from './api/node_api.js';
import { ConfigError, formatFieldError } from './config/field_errors.js';
import { type AgentOptions, flagsHelp, parseFlags } from './config/flags.js';
import { type LoadedConfig, loadKubeletConfiguration } from './config/load.js';
import { KubeletEventRecorder } from './events/recorder.js';
import { CorrelatingEventSink, KubeEventSink } from './events/sink.js';
import { evictionConfigFrom } from './eviction/thresholds.js';
import { KUBELET_VERSION, Kubelet, type KubeletDeps } from './kubelet.js';
import { KubeletMetrics } from './metrics/metrics.js';
import { KubeMirrorPodApi } from './mirror/mirror_client.js';
import { MirrorPodManager } from './mirror/mirror_pods.js';
import { newNodeManagers } from './node_managers.js';
import { goArch, readMachineInfo } from './nodestatus/machine_info.js';
import { nodeNameFor, resolveNodeIP } from './nodestatus/node.js';
import { ApiServerPodSource, KubePodListWatch } from './podconfig/apiserver_source.js';
import { FileStaticPodSource } from './podconfig/file_source.js';
import { newPodLayer, type PodLayer } from './pods/pod_layer.js';
import { PodManager } from './pods/pod_manager.js';
import { ProbeResultsStore } from './prober/results.js';
import { criCallObserver } from './runtime/cri_call_log.js';
import { connectImageService } from './runtime/image_service.js';
import { runtimeSandboxImage } from './runtime/sandbox_image.js';
import { ContainerLogs } from './server/container_logs.js';
import { runningPodsProvider } from './server/running_pods.js';
import { SummaryProvider } from './stats/summary.js';
import type { PodSource } from './types/pod_update.js';
import { realClock } from './util/clock.js';
import { type Logger, stderrLogger } from './util/log.js';

export interface CommandIO {
  out: (s: string) => void;
  err: (s: string) => void;
  /** Aborted on SIGTERM/SIGINT in the real binary; tests pass their own. */
  signal?: AbortSignal;
}

const defaultIO: CommandIO = { out: (s) => process.stdout.write(s), err: (s) => process.stderr.write(s) };

/** Parses flags and runs the agent; resolves to the process exit code. */
export function newKubeletCommand(io: CommandIO = defaultIO) {
  return {
    async execute(argv: readonly string[]): Promise<number> {
      const flags = parseFlags(argv);
      if (flags.options.help) {
        io.out(`Usage: node-agent [flags]\n\nFlags:\n${flagsHelp()}\n`);
        return 0;
      }
      if (flags.errors.length > 0) {
        io.err(`invalid flags:\n${flags.errors.map((e) => `  - ${formatFieldError(e)}`).join('\n')}\n`);
        return 1;
      }
      if (flags.options.version) {
        io.out(`Kubernetes ${KUBELET_VERSION}\n`);
        return 0;
      }
      let loaded: LoadedConfig;
      try {
        loaded = await loadKubeletConfiguration(flags.options.config || undefined, flags.configOverrides);
        // Problems only the eviction manager can see fail the start-up like any other config error.
        evictionConfigFrom(loaded.config, loaded.resolved);
      } catch (e) {
        if (e instanceof ConfigError) {
          io.err(`${e.message}\n`);
          return 1;
        }
        throw e;
      }
      const log = stderrLogger(flags.options.v, io.err);
      try {
        await run(flags.options, loaded, log, io.signal ?? processSignal());
        return 0;
      } catch (e) {
        io.err(`failed to run node-agent: ${(e as Error).message}\n`);
        return 1;
      }
    },
  };
}

/**
 * Builds the dependencies (API client, runtime manager over CRI, PLEG, pod layer with probes,
 * eviction manager, garbage collection, sources, machine facts) and runs the kubelet.
 */
export async function run(
  options: AgentOptions,
  loaded: LoadedConfig,
  log: Logger,
  signal: AbortSignal,
  /** For an agent outside its node (tests): path mapping, sandbox image, shared dirs. */
  extra: { runtimeManager?: Partial<RuntimeManagerOptions> } = {},
): Promise<void> {
  const { config, resolved } = loaded;
  // The kubelet creates its root directory (state, certificates, pod volumes) on start.
  await mkdir(options.rootDir, { recursive: true, mode: 0o750 });
  const metrics = new KubeletMetrics({ processMetrics: true });
  const kubeConfig = options.kubeconfig ? loadKubeConfig(options.kubeconfig) : undefined;
  if (!kubeConfig)
    log.info('No --kubeconfig: running standalone, without registration, status, lease or API pods');
  const criOptions: CriClientOptions = {
    timeoutMs: resolved.runtimeRequestTimeoutMs,
    // Waiting for the socket longer than a request may take would only delay the start-up error.
    connectTimeoutMs: Math.min(10_000, resolved.runtimeRequestTimeoutMs),
    onCall: criCallObserver(metrics, options.criCallLog),
  };
  const cri = await CriClient.connect(config.containerRuntimeEndpoint, criOptions).catch((e: Error) => {
    throw new Error(`validate CRI endpoint ${config.containerRuntimeEndpoint}: ${e.message}`);
  });
  const imageCri = await connectImageService(config, criOptions).catch((e) => {
    cri.close();
    throw e;
  });
  try {
    const hostname = nodeNameFor(options.hostnameOverride);
    const nodeIP = resolveNodeIP(options.nodeIp);
    const api = kubeConfig ? new KubeNodeApi(kubeConfig) : undefined;
    // Repeated events become count/lastTimestamp patches of one Event (client-go's correlator).
    const recorder = kubeConfig
      ? new KubeletEventRecorder(new CorrelatingEventSink(new KubeEventSink(kubeConfig), realClock), {
          host: hostname,
          clock: realClock,
          log,
        })
      : undefined;
    // The runtime manager and the pod layer need each other: it reads probe results and which
    // pods are gone, the pod layer drives it. Both seams are resolved once the layer exists.
    const probeResults = new ProbeResultsStore();
    const podManager = new PodManager();
    const sandboxImage = options.podInfraContainerImage || (await runtimeSandboxImage(cri, log));
    let pods: PodLayer | undefined;
    const runtime = await KubeGenericRuntimeManager.create({
      cri,
      ...(imageCri ? { imageCri } : {}),
      clock: realClock,
      ...(recorder ? { recorder } : {}),
      probeResults: probeResults.forRuntime,
      // Like the kubelet's PLEG cache: the PLEG's relist keeps it honest.
      podStatusCacheTtlMs: 2 * DefaultRelistPeriodMs,
      podStateProvider: podManager,
      ...(sandboxImage ? { podSandboxImage: sandboxImage } : {}),
      imageGCPolicy: {
        highThresholdPercent: config.imageGCHighThresholdPercent,
        lowThresholdPercent: config.imageGCLowThresholdPercent,
        minAgeMs: resolved.imageMinimumGCAgeMs,
      },
      podsDir: join(options.rootDir, 'pods'),
      podLogsRootDir: config.podLogsDir,
      cgroupParent: config.cgroupRoot,
      images: {
        serializeImagePulls: config.serializeImagePulls,
        ...(config.maxParallelImagePulls !== null
          ? { maxParallelImagePulls: config.maxParallelImagePulls }
          : {}),
        registryPullQPS: config.registryPullQPS,
        registryBurst: config.registryBurst,
      },
      ...extra.runtimeManager,
    }).catch((e: Error) => {
      throw new Error(`validate CRI endpoint ${config.containerRuntimeEndpoint}: ${e.message}`);
    });
    const pleg = new GenericPLEG(runtime, {
      clock: realClock,
      onError: (err) => log.error('PLEG relist failed', { err }),
    });
    const admitHandlers = new AdmitHandlers();
    pods = api
      ? newPodLayer({
          api,
          pods: podManager,
          runtime,
          backoff: newCrashLoopBackoff(realClock),
          clock: realClock,
          nodeIP,
          admit: admitHandlers,
          resyncIntervalMs: resolved.syncFrequencyMs,
          probing: { runtime, results: probeResults, metrics },
          ...(recorder ? { recorder } : {}),
          log,
        })
      : undefined;
    const podSources: PodSource[] = [];
    // Static pods get mirror pods in the API; the sync loop never sees the mirrors themselves.
    const mirrors = kubeConfig
      ? new MirrorPodManager({
          api: new KubeMirrorPodApi(kubeConfig),
          nodeName: hostname,
          clock: realClock,
          // Post the static pod's status to a new mirror now rather than at the next status pass.
          onMirrorCreated: () => pods?.statusManager.kick(),
          log,
        })
      : undefined;
    if (kubeConfig)
      podSources.push(
        new ApiServerPodSource({ lw: new KubePodListWatch(kubeConfig, hostname), clock: realClock, log }),
      );
    if (config.staticPodPath && pods) {
      podSources.push(
        new FileStaticPodSource({
          path: config.staticPodPath,
          nodeName: hostname,
          clock: realClock,
          periodMs: resolved.fileCheckFrequencyMs,
          log,
        }),
      );
    }
    const allSourcesReady = () => podSources.every((s) => s.ready());
    const managers =
      pods && recorder
        ? await newNodeManagers({
            eviction: evictionConfigFrom(config, resolved),
            // ImageFsInfo belongs to the image service: ask its own endpoint when it has one.
            cri: imageCri
              ? {
                  imageFsInfo: (req) => imageCri.imageFsInfo(req),
                  listContainerStats: (req) => cri.listContainerStats(req),
                }
              : cri,
            runtime,
            pods,
            recorder,
            metrics,
            rootDir: options.rootDir,
            podsDir: join(options.rootDir, 'pods'),
            podLogsDir: config.podLogsDir,
            allSourcesReady,
            ...(sandboxImage ? { sandboxImage } : {}),
            clock: realClock,
            log,
          })
        : undefined;
    const deps: KubeletDeps = {
      config,
      resolved,
      identity: {
        nodeName: hostname,
        hostname,
        os: 'linux',
        arch: goArch(),
        nodeLabels: options.nodeLabels,
        taints: config.registerWithTaints,
      },
      nodeIP,
      machineInfo: await readMachineInfo({ rootDir: options.rootDir }),
      certDir: options.certDir,
      runtime,
      ...(api && kubeConfig ? { api, kubeConfig } : {}),
      ...(recorder ? { recorder } : {}),
      metrics,
      log,
      pleg,
      ...(pods
        ? {
            syncHandler: pods.lifecycle,
            podSources: mirrors ? podSources.map((s) => mirrors.wrap(s)) : podSources,
            managers: [
              pods.statusManager,
              ...(mirrors ? [mirrors] : []),
              ...(managers ? [managers.eviction, managers.gc] : []),
            ],
            ...(managers ? { pressure: managers.eviction } : {}),
            servers: {
              pods: podManager,
              runningPods: runningPodsProvider(runtime),
              logs: new ContainerLogs({ getPods: () => podManager.getPods(), runtime }),
              stats: new SummaryProvider({
                cri,
                ...(imageCri ? { imageCri } : {}),
                nodeName: hostname,
                rootDir: options.rootDir,
                clock: realClock,
              }),
            },
          }
        : {}),
    };
    const kubelet = new Kubelet(deps);
    // Fit on this node first, then node pressure; the first rejection wins.
    admitHandlers.add(new PredicateAdmitHandler(() => kubelet.currentNode()));
    if (managers) admitHandlers.add(managers.eviction);
    await runKubelet(kubelet, signal);
  } finally {
    cri.close();
    imageCri?.close();
  }
}

/** Runs the Kubelet until the signal aborts. Pods keep running after a stop; a restart adopts them. */
export async function runKubelet(kubelet: Kubelet, signal: AbortSignal): Promise<void> {
  await kubelet.run(signal);
}

function processSignal(): AbortSignal {
  const abort = new AbortController();
  for (const sig of ['SIGTERM', 'SIGINT'] as const)
    process.once(sig, () => abort.abort(new Error(`received ${sig}`)));
  return abort.signal;
}
