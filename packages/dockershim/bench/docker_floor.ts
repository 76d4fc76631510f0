import { randomBytes } from 'node:crypto';
import type Dockerode from 'dockerode';
import { DockerodeClient } from '../src/docker/api_client.js';
import type { ContainerCreateRequest } from '../src/docker/client.js';
import { ContainerType, LabelKeys } from '../src/model/labels.js';
import type { CritestBenchmarkParams } from './critest.js';

// critest -benchmark's pod and container benchmarks replayed as the Engine calls Docker itself
// needs for each timed CRI call, made directly with dockerode, with critest's sample count and
// parallelism: the floor of a Docker-backed CRI runtime. Where this floor is already above 1.5x
// containerd's p50, no shim can meet the target; the shim's own cost is its p50 over this one.

// The creates replay the shim's own requests (ShimCreateRequests), so the floor asks Docker for
// exactly what the shim asks: the same security options, cgroup parent, log config and labels.
// Docker's create time depends on them; a bare create would set the floor too low.

/** The Engine calls that stand for each timed CRI call (what `docker` itself would do). */
export const DOCKER_FLOOR_CALLS: Record<string, string> = {
  RunPodSandbox: "create (the shim's own request for its pause container) + start",
  PodSandboxStatus: 'inspect of the pause container',
  StopPodSandbox: 'stop of the pause container (t=0)',
  RemovePodSandbox: 'remove of the pause container',
  CreateContainer: "create (the shim's own request) in the pause container's namespaces",
  StartContainer: 'start',
  ContainerStatus: 'inspect',
  StopContainer: 'stop (t=60, as critest asks)',
  RemoveContainer: 'remove',
};

type Timed = <T>(op: string, fn: () => Promise<T>) => Promise<T>;

/** The shim's last create request of each kind, as it went to the Engine. */
export type ShimCreateRequests = Partial<Record<ContainerType, ContainerCreateRequest>>;

/** The shim's Engine client, keeping its last create request of each kind for the floor to replay. */
export class RecordingDockerClient extends DockerodeClient {
  readonly creates: ShimCreateRequests = {};

  override createContainer(request: ContainerCreateRequest): Promise<string> {
    const kind = request.Labels?.[LabelKeys.containerType];
    if (kind === ContainerType.sandbox || kind === ContainerType.container)
      this.creates[kind] = structuredClone(request);
    return super.createContainer(request);
  }
}

/**
 * One of the shim's create requests as the floor's own: its name; its labels under `kh.floor/`
 * keys beside the run's (so the shim never takes a floor container for one of its own, and the
 * request keeps its size); and the shim's sandbox id, wherever it appears (network, IPC and PID
 * modes, labels), swapped for the floor's pause container.
 */
export function replayRequest(
  request: ContainerCreateRequest,
  name: string,
  labels: Record<string, string>,
  sandboxId?: string,
): Dockerode.ContainerCreateOptions {
  const shimSandbox = request.Labels?.[LabelKeys.sandboxId];
  let json = JSON.stringify({
    ...request,
    name,
    Labels: {
      ...Object.fromEntries(Object.entries(request.Labels ?? {}).map(([k, v]) => [`kh.floor/${k}`, v])),
      ...labels,
    },
  });
  if (shimSandbox && sandboxId) json = json.replaceAll(shimSandbox, sandboxId);
  return JSON.parse(json) as Dockerode.ContainerCreateOptions;
}

/**
 * Runs `count` samples of each benchmark, `parallel` at once, as gmeasure hands them out, and
 * returns the latencies in ms per operation (critest's names mapped to the CRI calls).
 */
export async function runDockerFloor(
  docker: Dockerode,
  requests: ShimCreateRequests,
  params: CritestBenchmarkParams,
  labels: Record<string, string>,
): Promise<Record<string, number[]>> {
  const { [ContainerType.sandbox]: sandboxRequest, [ContainerType.container]: containerRequest } = requests;
  if (!sandboxRequest || !containerRequest) {
    throw new Error(
      "Docker's floor replays the shim's create requests, and the shim has not made both kinds yet",
    );
  }
  const run = randomBytes(3).toString('hex');
  const samples: Record<string, number[]> = {};
  const timed: Timed = async (op, fn) => {
    const t0 = performance.now();
    const result = await fn();
    samples[op] = [...(samples[op] ?? []), performance.now() - t0];
    return result;
  };
  const pause = (name: string) => docker.createContainer(replayRequest(sandboxRequest, name, labels));
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
        docker.createContainer(replayRequest(containerRequest, `floor_app_${run}_${i}`, labels, sandbox.id)),
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
