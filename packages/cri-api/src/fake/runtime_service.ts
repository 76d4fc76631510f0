import {
  CanceledError,
  DeadlineExceededError,
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
} from '../api/errors.js';
import { type CgroupDriver, ContainerState } from '../gen/runtime/v1/api.js';
import type { CriCallContext, CriRuntimeHandlers } from '../server/serve.js';
import { toContainer, toContainerStatus, toPodSandbox, toPodSandboxStatus } from './convert.js';
import { matchesId, matchesLabels } from './filters.js';
import type { ContainerRecord } from './records.js';
import type { FakeState } from './state.js';

export const FAKE_RUNTIME_NAME = 'fake-cri';
export const FAKE_RUNTIME_VERSION = '0.1.0';
const WRITABLE_LAYER_MOUNT = '/var/lib/fake-cri';

export interface RuntimeServiceOptions {
  /** Runtime handlers (RuntimeClass handlers) besides the default "". Default ["runc"]. */
  runtimeHandlers: string[];
  cgroupDriver: CgroupDriver;
  /** Whether every handler announces user namespace support (features.userNamespaces). */
  userNamespaces: boolean;
}

/** Resolves after `ms` of the fake's clock, or rejects with CANCELLED when the call goes away. */
function sleep(state: FakeState, ms: number, ctx: CriCallContext): Promise<void> {
  return new Promise((resolve, reject) => {
    const abort = () => {
      cancel();
      reject(new CanceledError('call cancelled while the command was running'));
    };
    const cancel = state.clock.setTimer(ms, () => {
      ctx.signal.removeEventListener('abort', abort);
      resolve();
    });
    if (ctx.signal.aborted) abort();
    else ctx.signal.addEventListener('abort', abort, { once: true });
  });
}

function requireRunning(c: ContainerRecord, what: string): void {
  if (c.state !== ContainerState.CONTAINER_RUNNING) {
    throw new FailedPreconditionError(`cannot ${what}: container "${c.id}" is not running`);
  }
}

function statsOf(state: FakeState, c: ContainerRecord) {
  const s = state.script.statsFor(state.info(c)) ?? {};
  const timestamp = state.nowNs();
  return {
    attributes: {
      id: c.id,
      metadata: c.config.metadata,
      labels: c.config.labels,
      annotations: c.config.annotations,
    },
    cpu: { timestamp, usageCoreNanoSeconds: { value: BigInt(s.cpuUsageCoreNanoSeconds ?? 0) } },
    memory: { timestamp, workingSetBytes: { value: BigInt(s.memoryWorkingSetBytes ?? 0) } },
    writableLayer: {
      timestamp,
      fsId: { mountpoint: WRITABLE_LAYER_MOUNT },
      usedBytes: { value: BigInt(s.writableLayerUsedBytes ?? 0) },
      inodesUsed: { value: BigInt(s.writableLayerInodesUsed ?? 0) },
    },
  };
}

/** The fake's RuntimeService: sandboxes, containers, exec, stats, status and events. */
export function runtimeService(
  state: FakeState,
  options: RuntimeServiceOptions,
): Partial<CriRuntimeHandlers> {
  return {
    version: () => ({
      version: FAKE_RUNTIME_VERSION,
      runtimeName: FAKE_RUNTIME_NAME,
      runtimeVersion: FAKE_RUNTIME_VERSION,
      runtimeApiVersion: 'v1',
    }),

    runPodSandbox: (req) => {
      if (req.runtimeHandler && !options.runtimeHandlers.includes(req.runtimeHandler)) {
        throw new NotFoundError(`no runtime for "${req.runtimeHandler}" is configured`);
      }
      return { podSandboxId: state.runSandbox(req.config, req.runtimeHandler).id };
    },
    stopPodSandbox: (req) => {
      state.stopSandbox(req.podSandboxId);
      return {};
    },
    removePodSandbox: (req) => {
      state.removeSandbox(req.podSandboxId);
      return {};
    },
    podSandboxStatus: (req) => ({ status: toPodSandboxStatus(state.sandbox(req.podSandboxId)) }),
    listPodSandbox: (req) => {
      const f = req.filter;
      const items = [...state.sandboxes.values()].filter(
        (sb) =>
          matchesId(sb.id, f?.id) &&
          (f?.state === undefined || sb.state === f.state.state) &&
          matchesLabels(sb.config.labels, f?.labelSelector),
      );
      return { items: items.map(toPodSandbox) };
    },
    updatePodSandboxResources: (req) => {
      state.sandbox(req.podSandboxId);
      return {};
    },

    createContainer: (req) => ({ containerId: state.createContainer(req.podSandboxId, req.config).id }),
    startContainer: (req) => {
      state.startContainer(req.containerId);
      return {};
    },
    stopContainer: (req) => {
      state.stopContainer(req.containerId, Number(req.timeout));
      return {};
    },
    removeContainer: (req) => {
      state.removeContainer(req.containerId);
      return {};
    },
    listContainers: (req) => {
      const f = req.filter;
      const items = [...state.containers.values()].filter(
        (c) =>
          matchesId(c.id, f?.id) &&
          (f?.state === undefined || c.state === f.state.state) &&
          matchesId(c.podSandboxId, f?.podSandboxId) &&
          matchesLabels(c.config.labels, f?.labelSelector),
      );
      return { containers: items.map(toContainer) };
    },
    containerStatus: (req) => {
      const c = state.container(req.containerId);
      return { status: toContainerStatus(c, state.sandboxes.get(c.podSandboxId)) };
    },
    updateContainerResources: (req) => {
      const c = state.container(req.containerId);
      if (c.state === ContainerState.CONTAINER_EXITED) {
        throw new FailedPreconditionError(`cannot update resources: container "${c.id}" has exited`);
      }
      c.resources = req.linux ?? c.resources;
      return {};
    },
    reopenContainerLog: (req) => {
      requireRunning(state.container(req.containerId), 'reopen log');
      return {};
    },

    execSync: async (req, ctx) => {
      const c = state.container(req.containerId);
      if (req.cmd.length === 0) throw new InvalidArgumentError('exec command is required');
      requireRunning(c, 'exec');
      const result = state.script.execFor(req.cmd, state.info(c)) ?? {};
      const timeoutMs = Number(req.timeout) * 1000;
      const takesMs = result.hang ? Number.POSITIVE_INFINITY : (result.delayMs ?? 0);
      if (timeoutMs > 0 && takesMs > timeoutMs) {
        await sleep(state, timeoutMs, ctx);
        // Same wording as containerd, since probe results quote it verbatim.
        throw new DeadlineExceededError(
          `failed to exec in container: timeout ${req.timeout}s exceeded: context deadline exceeded`,
        );
      }
      if (takesMs === Number.POSITIVE_INFINITY) {
        // No timeout asked for: like a real runtime, wait until the caller gives up.
        await new Promise((_, reject) =>
          ctx.signal.addEventListener('abort', () => reject(new CanceledError('exec cancelled')), {
            once: true,
          }),
        );
      }
      if (takesMs > 0) await sleep(state, takesMs, ctx);
      return {
        stdout: Buffer.from(result.stdout ?? ''),
        stderr: Buffer.from(result.stderr ?? ''),
        exitCode: result.exitCode ?? 0,
      };
    },

    containerStats: (req) => ({ stats: statsOf(state, state.container(req.containerId)) }),
    listContainerStats: (req) => {
      const f = req.filter;
      const running = [...state.containers.values()].filter(
        (c) =>
          c.state === ContainerState.CONTAINER_RUNNING &&
          matchesId(c.id, f?.id) &&
          matchesId(c.podSandboxId, f?.podSandboxId) &&
          matchesLabels(c.config.labels, f?.labelSelector),
      );
      return { stats: running.map((c) => statsOf(state, c)) };
    },

    status: () => ({
      status: {
        conditions: [
          { type: 'RuntimeReady', ...state.health.runtime },
          { type: 'NetworkReady', ...state.health.network },
        ],
      },
      runtimeHandlers: ['', ...options.runtimeHandlers].map((name) => ({
        name,
        features: { recursiveReadOnlyMounts: false, userNamespaces: options.userNamespaces },
      })),
      features: {},
    }),
    updateRuntimeConfig: (req) => {
      const podCidr = req.runtimeConfig?.networkConfig?.podCidr ?? '';
      if (podCidr !== '') state.podCidrs.push(podCidr);
      return {};
    },
    runtimeConfig: () => ({ linux: { cgroupDriver: options.cgroupDriver } }),

    getContainerEvents: (_req, ctx) => state.events.subscribe(ctx.signal),
  };
}
