import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CriClient } from '@kh/cri-api';

// Upstream `critest -benchmark` (cri-tools v1.33 or v1.26, built by scripts/cri-tools.sh): its pod and
// container lifecycle benchmarks, the same binary against the dockershim and a host containerd.

/** critest's operation names, as the CRI calls they time. */
const OPERATION_NAMES: Record<string, string> = {
  CreatePod: 'RunPodSandbox',
  StatusPod: 'PodSandboxStatus',
  StopPod: 'StopPodSandbox',
  RemovePod: 'RemovePodSandbox',
  CreateContainer: 'CreateContainer',
  StartContainer: 'StartContainer',
  StatusContainer: 'ContainerStatus',
  StopContainer: 'StopContainer',
  RemoveContainer: 'RemoveContainer',
};
const CRITEST_TIMEOUT_MS = 15 * 60_000;
const SETTLE_MS = 3_000;

export const CRITEST_OPERATIONS = Object.values(OPERATION_NAMES);

export interface CritestBenchmarkParams {
  /** Pods of the pod benchmark and containers of the container benchmark (each in its own pod). */
  count: number;
  parallel: number;
}

export interface CritestBenchmarkRun {
  /** Latencies in ms per CRI call. */
  samples: Record<string, number[]>;
  /** critest's exit code: non-zero when one of its own checks failed (the samples are still read). */
  exitCode: number | null;
  /**
   * Sandboxes the run left on the runtime (the bench then removes them). `leaked`: of samples critest
   * recorded as done, whose removal the runtime answered; `cutOff`: of the last samples, which
   * critest abandons mid-flight (gmeasure's parallel Sample returns once it has handed out the last
   * index, without waiting for its workers, and critest exits). `containers`: containers still
   * listed after those sandboxes were removed (leaked whatever their sample).
   */
  left: { leaked: string[]; cutOff: string[]; containers: number };
}

/** The datapoints file critest writes per benchmark (pkg/benchmark/util.go). */
interface ResultsSet {
  operationsNames: string[];
  datapoints: { endTime: number; operationsDurationsNs: number[]; metaInfo?: { podId?: string } }[];
}

/**
 * Runs the pod and container benchmarks of critest against one endpoint. Sandboxes that exist
 * afterwards and did not before are what the run left behind: counted, then removed through CRI.
 */
export async function runCritestBenchmark(
  critest: string,
  endpoint: string,
  image: string,
  params: CritestBenchmarkParams,
  progress: (line: string) => void,
): Promise<CritestBenchmarkRun> {
  const client = await CriClient.connect(endpoint);
  const dir = await mkdtemp(join(tmpdir(), 'kh-critest-bench-'));
  try {
    const before = new Set((await client.listPodSandbox({})).items.map((s) => s.id));
    const containersBefore = new Set((await client.listContainers({})).containers.map((c) => c.id));
    const files = {
      images: join(dir, 'images.yaml'),
      params: join(dir, 'params.yaml'),
      out: join(dir, 'out'),
    };
    await mkdir(files.out);
    await mkdir(join(dir, 'tmp'));
    await writeFile(
      files.images,
      `defaultTestContainerImage: ${JSON.stringify(image)}\nwebServerTestImage: ${JSON.stringify(image)}\n`,
    );
    // The image benchmarks stay off (no count): they pull public images. The pod+container start
    // benchmark always runs; its 5 s default limit is raised so a loaded machine does not fail it.
    await writeFile(
      files.params,
      [
        `podsNumber: ${params.count}`,
        `podsNumberParallel: ${params.parallel}`,
        `containersNumber: ${params.count}`,
        `containersNumberParallel: ${params.parallel}`,
        'podContainerStartBenchmarkTimeoutSeconds: 60',
        '',
      ].join('\n'),
    );
    const exitCode = await runLogged(
      critest,
      [
        '-benchmark',
        `--runtime-endpoint=${endpoint}`,
        `--image-endpoint=${endpoint}`,
        `--test-images-file=${files.images}`,
        `--benchmarking-params-file=${files.params}`,
        `--benchmarking-output-dir=${files.out}`,
        '--ginkgo.no-color',
      ],
      { ...process.env, TMPDIR: join(dir, 'tmp') },
      join(dir, 'critest.log'),
      CRITEST_TIMEOUT_MS,
    );
    if (exitCode !== 0) {
      const log = await readFile(join(dir, 'critest.log'), 'utf8').catch(() => '');
      progress(`critest -benchmark exited ${exitCode}:\n${log.trim().split('\n').slice(-15).join('\n')}`);
    }
    const samples: Record<string, number[]> = {};
    const recorded = new Set<string>();
    for (const file of ['pod_benchmark_data.json', 'container_benchmark_data.json']) {
      const set = JSON.parse(await readFile(join(files.out, file), 'utf8')) as ResultsSet;
      set.operationsNames.forEach((name, i) => {
        const op = OPERATION_NAMES[name] ?? name;
        samples[op] = set.datapoints.map((d) => (d.operationsDurationsNs[i] ?? Number.NaN) / 1e6);
      });
      // The pod benchmark removes its pod within the sample; the container benchmark after recording
      // it, so a worker's last container sample may have been cut off during that removal.
      const done = file.startsWith('pod_')
        ? set.datapoints
        : [...set.datapoints].sort((a, b) => a.endTime - b.endTime).slice(0, -params.parallel);
      for (const d of done) if (d.metaInfo?.podId) recorded.add(d.metaInfo.podId);
    }
    // critest may exit with calls in flight, which the runtime still finishes (or undoes): let them.
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    const left = (await client.listPodSandbox({})).items.filter((s) => !before.has(s.id)).map((s) => s.id);
    for (const id of left) {
      await client.stopPodSandbox({ podSandboxId: id }).catch(() => undefined);
      await client.removePodSandbox({ podSandboxId: id }).catch(() => undefined);
    }
    const containers = (await client.listContainers({})).containers.filter(
      (c) => !containersBefore.has(c.id),
    );
    return {
      samples,
      exitCode,
      left: {
        leaked: left.filter((id) => recorded.has(id)),
        cutOff: left.filter((id) => !recorded.has(id)),
        containers: containers.length,
      },
    };
  } finally {
    client.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Runs a program with its output in a log file; kills it after `timeoutMs`. Resolves with its exit code. */
function runLogged(
  program: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  logPath: string,
  timeoutMs: number,
) {
  return new Promise<number | null>((resolve, reject) => {
    const log = createWriteStream(logPath);
    const child = spawn(program, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.stdout.pipe(log, { end: false });
    child.stderr.pipe(log, { end: false });
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      log.end(() => resolve(code));
    });
  });
}
