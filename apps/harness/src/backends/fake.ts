// The in-memory fake runtime (fake-cri from @kh/cri-api) in a plain container from the node image:
// no real containers, so it is the fast lane for the node-level scenarios. The container gives the
// node its own hostname, address and kubelet port, like the real backends.
import Docker from 'dockerode';
import { ContainerHost } from '../node/container-host.js';
import type { NodeProcess } from '../node/host.js';
import { inContainer, projectMounts } from '../node/project.js';
import { SupportContainer } from '../node/support-container.js';
import { waitForCri } from './cri.js';
import type { RuntimeBackend } from './types.js';

const SOCKET = 'fake-cri.sock';

export const fakeBackend: RuntimeBackend = {
  name: 'fake',
  description: 'in-memory fake CRI runtime (no real containers)',
  capabilities: new Set(),
  async start(ctx) {
    ctx.progress('starting fake node container');
    const container = await new SupportContainer(ctx.images.node, ctx.nodeName, 'node')
      .withRunNetwork(ctx.network, ctx.nodeName)
      .withBindMounts(projectMounts())
      .start();
    const host = new ContainerHost(new Docker(), container.getId());
    const hostEndpoint = `unix://${container.sharedDirOnHost}/${SOCKET}`;
    let runtime: NodeProcess | undefined;
    const startRuntime = async () => {
      runtime = await host.spawn(
        inContainer('fakeCri', [
          `--listen=unix:///run/kh/${SOCKET}`,
          // The node reports images; give the fake the ones a real node would have loaded.
          `--image=${ctx.images.pause}=1048576`,
          `--image=${ctx.images.busybox}=2097152`,
        ]),
        { name: 'fake-cri' },
      );
      return waitForCri(hostEndpoint, 30_000, async () => runtime?.tail(20).join('\n') ?? '');
    };
    const stopRuntime = async () => {
      await runtime?.stop('SIGTERM');
      runtime = undefined;
    };
    try {
      await startRuntime();
      return {
        nodeCriEndpoint: `unix:///run/kh/${SOCKET}`,
        hostCriEndpoint: hostEndpoint,
        nodeIp: container.getIpAddress(ctx.network.name),
        host,
        restart: {
          stop: stopRuntime,
          start: async () => {
            await startRuntime();
          },
          kill: async () => {
            await runtime?.stop('SIGKILL');
            await startRuntime();
          },
        },
        runtimeLogs: async (lines) => runtime?.tail(lines) ?? [],
        stop: async () => {
          await stopRuntime().catch(() => {});
          await container.stop();
        },
      };
    } catch (err) {
      await stopRuntime().catch(() => {});
      await container.stop();
      throw err;
    }
  },
};
