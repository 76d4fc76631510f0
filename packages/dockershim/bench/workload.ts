import { randomBytes } from 'node:crypto';
import type { CriClient } from '@kh/cri-api';
import type Dockerode from 'dockerode';

/** The pod lifecycle kubelet drives, one step per CRI call. */
export const OPERATIONS = [
  'RunPodSandbox',
  'CreateContainer',
  'StartContainer',
  'StopContainer',
  'StopPodSandbox',
  'RemovePodSandbox',
] as const;
export type Operation = (typeof OPERATIONS)[number];

/** One way to run the lifecycle of a pod with one container; each step is timed on its own. */
export interface PodDriver {
  readonly name: string;
  runPod(index: number, timed: <T>(op: Operation, fn: () => Promise<T>) => Promise<T>): Promise<void>;
}

/** Through a CRI endpoint: the dockershim, or containerd's built-in CRI. */
export function criDriver(
  name: string,
  client: CriClient,
  image: string,
  labels: Record<string, string>,
): PodDriver {
  const run = randomBytes(3).toString('hex');
  return {
    name,
    async runPod(i, timed) {
      const sandboxConfig = {
        metadata: { name: `bench-${i}`, namespace: 'bench', uid: `${run}-${i}`, attempt: 0 },
        labels,
      };
      const { podSandboxId } = await timed('RunPodSandbox', () =>
        client.runPodSandbox({ config: sandboxConfig }),
      );
      const { containerId } = await timed('CreateContainer', () =>
        client.createContainer({
          podSandboxId,
          config: { metadata: { name: 'app', attempt: 0 }, image: { image }, labels },
          sandboxConfig,
        }),
      );
      await timed('StartContainer', () => client.startContainer({ containerId }));
      await timed('StopContainer', () => client.stopContainer({ containerId, timeout: 10n }));
      await timed('StopPodSandbox', () => client.stopPodSandbox({ podSandboxId }));
      await timed('RemovePodSandbox', () => client.removePodSandbox({ podSandboxId }));
    },
  };
}

/**
 * The same Docker operations the shim performs for each step, issued directly with dockerode: the
 * floor the shim's overhead is measured against.
 */
export function directDockerDriver(
  docker: Dockerode,
  image: string,
  labels: Record<string, string>,
): PodDriver {
  const run = randomBytes(3).toString('hex');
  return {
    name: 'docker-direct',
    async runPod(i, timed) {
      const sandbox = await timed('RunPodSandbox', async () => {
        const c = await docker.createContainer({
          name: `bench_POD_${run}_${i}`,
          Image: image,
          Labels: labels,
          HostConfig: { NetworkMode: 'bridge', IpcMode: 'shareable' },
        });
        await c.start();
        return c;
      });
      const app = await timed('CreateContainer', () =>
        docker.createContainer({
          name: `bench_app_${run}_${i}`,
          Image: image,
          Labels: labels,
          HostConfig: { NetworkMode: `container:${sandbox.id}`, IpcMode: `container:${sandbox.id}` },
        }),
      );
      await timed('StartContainer', () => app.start());
      await timed('StopContainer', () => app.stop({ t: 10 }));
      await timed('StopPodSandbox', () => sandbox.stop({ t: 0 }));
      await timed('RemovePodSandbox', async () => {
        await app.remove({ force: true });
        await sandbox.remove({ force: true });
      });
    },
  };
}
