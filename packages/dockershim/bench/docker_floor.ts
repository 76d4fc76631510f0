import { randomBytes } from 'node:crypto';
import type Dockerode from 'dockerode';
import type { CritestBenchmarkParams } from './critest.js';

// critest -benchmark's pod and container benchmarks replayed as the Engine calls Docker itself
// needs for each timed CRI call, made directly with dockerode, with critest's sample count and
// parallelism: the floor of a Docker-backed CRI runtime. Where this floor is already above 1.5x
// containerd's p50, no shim can meet the target; the shim's own cost is its p50 over this one.

/** The Engine calls that stand for each timed CRI call (what `docker` itself would do). */
export const DOCKER_FLOOR_CALLS: Record<string, string> = {
  RunPodSandbox: 'create + start of the pause container',
  PodSandboxStatus: 'inspect of the pause container',
  StopPodSandbox: 'stop of the pause container (t=0)',
  RemovePodSandbox: 'remove of the pause container',
  CreateContainer: 'create in the pause container namespaces',
  StartContainer: 'start',
  ContainerStatus: 'inspect',
  StopContainer: 'stop (t=60, as critest asks)',
  RemoveContainer: 'remove',
};

type Timed = <T>(op: string, fn: () => Promise<T>) => Promise<T>;

/**
 * Runs `count` samples of each benchmark, `parallel` at once, as gmeasure hands them out, and
 * returns the latencies in ms per operation (critest's names mapped to the CRI calls).
 */
export async function runDockerFloor(
  docker: Dockerode,
  images: { pause: string; busybox: string },
  params: CritestBenchmarkParams,
  labels: Record<string, string>,
): Promise<Record<string, number[]>> {
  const run = randomBytes(3).toString('hex');
  const samples: Record<string, number[]> = {};
  const timed: Timed = async (op, fn) => {
    const t0 = performance.now();
    const result = await fn();
    samples[op] = [...(samples[op] ?? []), performance.now() - t0];
    return result;
  };
  const pause = (name: string) =>
    docker.createContainer({
      name,
      Image: images.pause,
      Labels: labels,
      HostConfig: { NetworkMode: 'bridge', IpcMode: 'shareable' },
    });
  const podSample = async (i: number) => {
    const sandbox = await timed('RunPodSandbox', async () => {
      const c = await pause(`floor_POD_${run}_${i}`);
      await c.start();
      return c;
    });
    await timed('PodSandboxStatus', () => sandbox.inspect());
    await timed('StopPodSandbox', () => sandbox.stop({ t: 0 }));
    await timed('RemovePodSandbox', () => sandbox.remove({ force: true, v: true }));
  };
  const containerSample = async (i: number) => {
    const sandbox = await pause(`floor_CPOD_${run}_${i}`);
    await sandbox.start();
    try {
      const app = await timed('CreateContainer', () =>
        docker.createContainer({
          name: `floor_app_${run}_${i}`,
          Image: images.busybox,
          Cmd: ['top'],
          Labels: labels,
          HostConfig: {
            NetworkMode: `container:${sandbox.id}`,
            IpcMode: `container:${sandbox.id}`,
          },
        }),
      );
      await timed('StartContainer', () => app.start());
      await timed('ContainerStatus', () => app.inspect());
      await timed('StopContainer', () => app.stop({ t: 60 }));
      await timed('RemoveContainer', () => app.remove({ force: true, v: true }));
    } finally {
      await sandbox.remove({ force: true, v: true });
    }
  };
  await inParallel(params.count, params.parallel, podSample);
  await inParallel(params.count, params.parallel, containerSample);
  return samples;
}

/** Samples 0..count-1, `parallel` workers taking the next index as they finish, as gmeasure does. */
async function inParallel(count: number, parallel: number, sample: (i: number) => Promise<void>) {
  let next = 0;
  const worker = async () => {
    while (next < count) await sample(next++);
  };
  await Promise.all(Array.from({ length: Math.max(1, parallel) }, worker));
}
