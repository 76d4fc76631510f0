// A backend from a runtime spec: the kind-style node (testkit's NodeContainer) runs the spec's
// runtime under its init, and, for a runtime without a CRI of its own, a CRI shim from the
// checkout runs next to it; the node's system bus and logind run beside them. containerd.ts and docker.ts are two such declarations; a backend
// package writes a third without touching the harness.
import {
  DEFAULT_NODE_RELEASE,
  type NodeRelease,
  type NodeRuntimeSpec,
  nodeImageInfo,
  nodeImageName,
  type StartedNodeContainer,
} from '@kh/testkit';
import Docker from 'dockerode';
import { ContainerHost } from '../node/container-host.js';
import type { NodeProcess } from '../node/host.js';
import { startSystemBus } from '../node/system-bus.js';
import { kindNode, nodeMemoryLimitBytes, restoreSandboxImage, waitForCri } from './cri.js';
import type { BackendContext, RuntimeBackend, StartedBackend, StaticCapability } from './types.js';

/** A CRI server that the harness starts in the node, in front of a runtime that has none. */
export interface CriShim {
  /** Process name (pid file, log prefix). */
  name: string;
  /** argv in the node; it must listen on node.criEndpointInNode. */
  command(node: StartedNodeContainer, ctx: BackendContext): string[];
}

export interface KindBackendDefinition {
  name: string;
  /** Other names `--runtime` takes (see RuntimeBackend.aliases). */
  aliases?: readonly string[];
  description: string;
  capabilities: Iterable<StaticCapability>;
  /** The Debian release whose node image the node runs (default DEFAULT_NODE_RELEASE). */
  release?: NodeRelease;
  /** The runtime line the column's name promises (see RuntimeBackend.expectedVersion). */
  expectedVersion?: string;
  runtime: NodeRuntimeSpec;
  shim?: CriShim;
  /**
   * Runs once the runtime answers CRI, before the agent starts: a probe that throws
   * BackendUnavailableError when the runtime cannot run pods on this machine.
   */
  check?(started: StartedBackend, node: StartedNodeContainer, ctx: BackendContext): Promise<void>;
}

/** Lines of the runtime's (and shim's) output a start-up failure quotes. */
const FAILURE_LINES = 20;

export function kindBackend(def: KindBackendDefinition): RuntimeBackend {
  const release = def.release ?? DEFAULT_NODE_RELEASE;
  return {
    name: def.name,
    ...(def.aliases?.length ? { aliases: def.aliases } : {}),
    description: def.description,
    // Every kind node runs a system bus and logind (startSystemBus).
    capabilities: new Set([...def.capabilities, 'logind']),
    ...(def.expectedVersion ? { expectedVersion: def.expectedVersion } : {}),
    release,
    images: [nodeImageName(release)],
    async start(ctx) {
      const node = kindNode(ctx, def.runtime, release).withPauseImage(ctx.images.pause);
      // A runtime that does not preload the sandbox image gets it as an ordinary image.
      if (!def.runtime.preloadsSandboxImage) node.withImages(ctx.images.pause);
      const started = await node.start();
      const host = new ContainerHost(new Docker(), started.id);
      let shim: NodeProcess | undefined;
      const shimTail = async () => shim?.tail(FAILURE_LINES).join('\n') ?? '';
      const nodeTail = () => started.logs(FAILURE_LINES);
      const startShim = async () => {
        if (!def.shim) return;
        ctx.progress(`starting ${def.shim.name}`);
        shim = await host.spawn(def.shim.command(started, ctx), { name: def.shim.name });
      };
      const stopShim = async () => {
        await shim?.stop('SIGTERM');
        shim = undefined;
      };
      const waitCri = () => waitForCri(started.criEndpointOnHost, 30_000, def.shim ? shimTail : nodeTail);
      try {
        await startShim();
        await waitCri();
        ctx.progress('starting the system bus and elogind');
        await startSystemBus(host);
        const backend: StartedBackend = {
          nodeCriEndpoint: started.criEndpointInNode,
          hostCriEndpoint: started.criEndpointOnHost,
          nodeImage: await nodeImageInfo(started.image),
          restoreSandboxImage: () => restoreSandboxImage(started, ctx.images.pause),
          nodeIp: started.ipAddress(ctx.network),
          host,
          memoryLimitBytes: nodeMemoryLimitBytes(ctx),
          cgroupParent: started.cgroupParent,
          restart: {
            // The runtime really exits, as `systemctl stop` would; a shim stays up, so the agent
            // must see the runtime's absence through it (RuntimeReady=false).
            stop: () => started.stopRuntime(),
            start: async () => {
              await started.startRuntime();
              if (def.shim) await waitCri();
            },
            // A crash of the runtime and of its CRI shim at once; the supervisor restarts the
            // runtime, and the shim is started again as its unit would be.
            kill: async () => {
              await Promise.all([shim?.stop('SIGKILL'), started.killRuntime()]);
              await startShim();
              await waitCri();
            },
          },
          dumpRuntimeStacks: () => started.dumpRuntimeStacks(),
          runtimeLogs: async (lines) => {
            const own = (await started.logs(lines)).split('\n');
            if (!shim) return own;
            return [...shim.tail(lines), ...own.map((l) => `${def.runtime.name}: ${l}`)];
          },
          stop: async () => {
            await stopShim().catch(() => {});
            await started.stop();
          },
        };
        await def.check?.(backend, started, ctx);
        return backend;
      } catch (err) {
        await stopShim().catch(() => {});
        await started.stop();
        throw err;
      }
    },
  };
}
