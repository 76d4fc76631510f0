// A CRI endpoint the user already runs (`--cri-endpoint unix:///run/x.sock`): no node container,
// the agent runs on this machine against the socket, its files under a temp dir of its own. The
// host is shared, so nothing that needs a node of its own (a memory limit for eviction, a runtime
// the harness may stop, a runtime that resolves the run's registry) is claimed: those scenarios
// are skipped with the capability they lack.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { LocalHost } from '../node/local-host.js';
import { onHost } from '../node/project.js';
import { waitForCri } from './cri.js';
import { BackendUnavailableError, type RuntimeBackend } from './types.js';

export const ENDPOINT_BACKEND = 'endpoint';

export function endpointBackend(criEndpoint: string | undefined): RuntimeBackend {
  return {
    name: ENDPOINT_BACKEND,
    description:
      'a CRI endpoint you run (--cri-endpoint unix:///...), the agent on this host; no node isolation',
    capabilities: new Set(['real-containers']),
    // Every node of this backend would be the same runtime.
    maxNodes: 1,
    async start(ctx) {
      if (!criEndpoint)
        throw new BackendUnavailableError(
          'no CRI endpoint given: pass --cri-endpoint unix:///path/to/cri.sock (or set KH_CRI_ENDPOINT)',
        );
      await waitForCri(criEndpoint, 15_000);
      // The apiserver, on the run's network, reaches this machine at the network's gateway.
      const net = await new Docker().getNetwork(ctx.network.id).inspect();
      const gateway = (net.IPAM?.Config ?? []).map((c: { Gateway?: string }) => c.Gateway).find(Boolean);
      if (!gateway) throw new Error(`network ${ctx.network.name} has no gateway address`);
      const dir = await mkdtemp(join(tmpdir(), `kh-endpoint-${ctx.runId}-`));
      const host = new LocalHost();
      return {
        nodeCriEndpoint: criEndpoint,
        hostCriEndpoint: criEndpoint,
        nodeIp: gateway,
        host,
        agent: {
          dir,
          command: (args) => onHost('nodeAgent', args),
          apiserver: 'host',
          // The runtime's images and disk are the user's: no image GC (100 turns it off, as in
          // the kubelet) and no disk eviction signals, whose reclaim would delete images too.
          config: {
            imageGCHighThresholdPercent: 100,
            imageGCLowThresholdPercent: 99,
            evictionHard: { 'memory.available': '100Mi' },
          },
        },
        runtimeLogs: async () => [],
        stop: async () => {
          await host.stopAll();
          await rm(dir, { recursive: true, force: true });
        },
      };
    },
  };
}
