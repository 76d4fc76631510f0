// node-agent: our kubelet's command. The flow mirrors the kubelet's:
// newKubeletCommand (flags, config) -> run (clients) -> newMainKubelet (every manager,
// main_kubelet.ts) -> runKubelet -> Kubelet.run -> syncLoop. The executable entry point is main.ts.
import { mkdir } from 'node:fs/promises';
import { formatFieldError } from '@kh/apimachinery';
import { CriClient, type CriClientOptions } from '@kh/cri-api';
import type { RuntimeManagerOptions } from '@kh/runtime-manager';
import { loadKubeConfig } from './api/node_api.js';
import { ConfigError } from './config/field_errors.js';
import { type AgentOptions, flagsHelp, parseFlags } from './config/flags.js';
import { type LoadedConfig, loadKubeletConfiguration } from './config/load.js';
import { evictionConfigFrom } from './eviction/thresholds.js';
import { KUBELET_VERSION, type Kubelet } from './kubelet.js';
import { newMainKubelet } from './main_kubelet.js';
import { KubeletMetrics } from './metrics/metrics.js';
import { criCallObserver } from './runtime/cri_call_log.js';
import { connectImageService } from './runtime/image_service.js';
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
 * The kubelet's run: loads the clients (the API server's kubeconfig, the CRI runtime and image
 * services), builds the agent with newMainKubelet and runs it until the signal aborts.
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
    const kubelet = await newMainKubelet({
      options,
      config,
      resolved,
      cri,
      ...(imageCri ? { imageCri } : {}),
      ...(kubeConfig ? { kubeConfig } : {}),
      metrics,
      log,
      ...(extra.runtimeManager ? { runtimeManager: extra.runtimeManager } : {}),
    });
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
