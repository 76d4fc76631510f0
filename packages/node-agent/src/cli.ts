#!/usr/bin/env node
// node-agent: our kubelet's command. The flow mirrors the kubelet's:
// newKubeletCommand (flags) -> run (config, dependencies) -> runKubelet (build, signals)
// -> Kubelet.run -> syncLoop.
import { realpathSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { KubeNodeApi, loadKubeConfig } from './api/node_api.js';
import { ConfigError, formatFieldError } from './config/field_errors.js';
import { type AgentOptions, flagsHelp, parseFlags } from './config/flags.js';
import { type LoadedConfig, loadKubeletConfiguration } from './config/load.js';
import { KUBELET_VERSION, Kubelet, type KubeletDeps } from './kubelet.js';
import { goArch, readMachineInfo } from './nodestatus/machine_info.js';
import { nodeNameFor, resolveNodeIP } from './nodestatus/node.js';
import { CriNodeRuntime } from './runtime/node_runtime.js';
import { KubeletMetrics } from './server/metrics.js';
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

/** Builds the dependencies (API client, CRI connection, machine facts) and runs the kubelet. */
export async function run(
  options: AgentOptions,
  loaded: LoadedConfig,
  log: Logger,
  signal: AbortSignal,
): Promise<void> {
  const { config, resolved } = loaded;
  // The kubelet creates its root directory (state, certificates) on start.
  await mkdir(options.rootDir, { recursive: true, mode: 0o750 });
  const metrics = new KubeletMetrics({ processMetrics: true });
  const kubeConfig = options.kubeconfig ? loadKubeConfig(options.kubeconfig) : undefined;
  if (!kubeConfig) log.info('No --kubeconfig: running standalone, without registration, status or lease');
  const runtime = await CriNodeRuntime.connect({
    endpoint: config.containerRuntimeEndpoint,
    imageEndpoint: config.imageServiceEndpoint || config.containerRuntimeEndpoint,
    timeoutMs: resolved.runtimeRequestTimeoutMs,
    onCall: (e) => metrics.recordCriCall(e),
  }).catch((e: Error) => {
    throw new Error(`validate CRI endpoint ${config.containerRuntimeEndpoint}: ${e.message}`);
  });
  try {
    const hostname = nodeNameFor(options.hostnameOverride);
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
      nodeIP: resolveNodeIP(options.nodeIp),
      machineInfo: await readMachineInfo({ rootDir: options.rootDir }),
      certDir: options.certDir,
      runtime,
      ...(kubeConfig ? { api: new KubeNodeApi(kubeConfig), kubeConfig } : {}),
      metrics,
      log,
    };
    await runKubelet(deps, signal);
  } finally {
    runtime.close();
  }
}

/** Creates the Kubelet and runs it until the signal aborts. Pods keep running after a stop. */
export async function runKubelet(deps: KubeletDeps, signal: AbortSignal): Promise<void> {
  const kubelet = new Kubelet(deps);
  await kubelet.run(signal);
}

function processSignal(): AbortSignal {
  const abort = new AbortController();
  for (const sig of ['SIGTERM', 'SIGINT'] as const)
    process.once(sig, () => abort.abort(new Error(`received ${sig}`)));
  return abort.signal;
}

function isMain(): boolean {
  try {
    return realpathSync(process.argv[1] ?? '') === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isMain()) {
  newKubeletCommand()
    .execute(process.argv.slice(2))
    .then((code) => process.exit(code));
}
