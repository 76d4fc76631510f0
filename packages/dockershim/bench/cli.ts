#!/usr/bin/env node
// The dockershim benchmark; what it measures and its options: USAGE.
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ParseArgsOptionsConfig } from 'node:util';
import { normalizeImageRef } from '@kh/apimachinery';
import { CriClient, type CriServer } from '@kh/cri-api';
import {
  benchArgs,
  cleanUpOnInterrupt,
  criTools,
  criToolsDir,
  ensureImages,
  HostContainerd,
  NodeContainer,
  numberOption,
} from '@kh/testkit';
import type Dockerode from 'dockerode';
import { connectDocker } from '../src/docker/api_client.js';
import type { DockerOperationStats } from '../src/docker/instrumented.js';
import { KubernetesLabels, LabelKeys } from '../src/model/labels.js';
import { DockerShim } from '../src/service.js';
import { CRITEST_OPERATIONS, type CritestBenchmarkParams, runCritestBenchmark } from './critest.js';
import { DOCKER_FLOOR_CALLS, RecordingDockerClient, runDockerFloor } from './docker_floor.js';
import { benchExec, EXEC_PATHS, type ExecPath, execRoundTrips } from './exec.js';
import { type GrpcFloorParams, grpcFloorClient, runGrpcFloor, serveNoopStatus } from './grpc_floor.js';
import { type LatencySummary, summarize } from './stats.js';
import { CRITEST_TARGET_RATIO, critestVerdict, floorOf, ratio, type Verdict } from './verdict.js';
import { criDriver, directDockerDriver, OPERATIONS, type Operation, type PodDriver } from './workload.js';

const TARGET_RATIO = 1.1;
const EXEC_TARGET_RATIO = 1.2;

type Samples = Record<Operation, number[]>;
const emptySamples = (): Samples =>
  Object.fromEntries(OPERATIONS.map((op) => [op, [] as number[]])) as unknown as Samples;

async function runPods(
  driver: PodDriver,
  from: number,
  count: number,
  samples: Samples | undefined,
): Promise<void> {
  for (let i = from; i < from + count; i++) {
    await driver.runPod(i, async (op, fn) => {
      const t0 = performance.now();
      const result = await fn();
      samples?.[op].push(performance.now() - t0);
      return result;
    });
  }
}

function table(results: Record<string, Record<Operation, LatencySummary>>): string {
  const names = Object.keys(results);
  const lines = [`${'operation'.padEnd(18)}${names.map((n) => `${n} p50/p90 ms`.padStart(28)).join('')}`];
  for (const op of OPERATIONS) {
    const cells = names.map((n) => {
      const s = results[n]?.[op];
      return (s ? `${s.p50.toFixed(1)} / ${s.p90.toFixed(1)}` : '-').padStart(28);
    });
    lines.push(`${op.padEnd(18)}${cells.join('')}`);
  }
  return lines.join('\n');
}

const USAGE = `Usage: npm run bench -w @kh/dockershim [-- options]

The pod lifecycle (RunPodSandbox, CreateContainer, StartContainer, StopContainer, StopPodSandbox,
RemovePodSandbox) through the dockershim vs the same Docker calls made directly, and containerd's
built-in CRI (in a node container) on the same workload; then the exec round trip (streaming Exec,
ExecSync) against Docker's own exec; then upstream \`critest -benchmark\` on the dockershim and on a
host containerd, side by side, with the same benchmarks replayed as direct Engine calls (Docker's
floor) and ContainerStatus timed by a Go client against both and a no-op server on the shim's gRPC
stack (the gRPC floor). Writes JSON to --out. The critest step alone: --pods 0 --execs 0.

Options:
  --pods <n>                measured pods per side (default 30; 0 skips the lifecycle and its containerd side)
  --warmup <n>              warm-up pods per side before them, not measured (default 3)
  --skip-containerd         no containerd side of the lifecycle
  --execs <n>               exec round trips of each path (default 200; 0 skips them)
  --skip-critest            no critest step (nor its floors)
  --critest-count <n>       pods and containers per critest benchmark (default 20)
  --critest-rounds <n>      critest rounds, each on both runtimes and Docker's floor (default 2)
  --critest-version <v>     cri-tools release of critest (default 1.33.0)
  --grpc-floor-calls <n>    ContainerStatus calls per target and round (default 200; 0 skips the gRPC floor)
  --out <dir>               where the JSON goes (default .reports/bench)
  -h, --help                show this help`;

const OPTIONS = {
  pods: { type: 'string', default: '30' },
  warmup: { type: 'string', default: '3' },
  'skip-containerd': { type: 'boolean', default: false },
  execs: { type: 'string', default: '200' },
  'skip-critest': { type: 'boolean', default: false },
  'critest-count': { type: 'string', default: '20' },
  'critest-rounds': { type: 'string', default: '2' },
  // Kubelet 1.33's era, whose CRI client names "localhost" as the kubelet's does; 1.26.0 sends
  // the socket path, which the shim's server then rewrites (cri-api's README).
  'critest-version': { type: 'string', default: '1.33.0' },
  'grpc-floor-calls': { type: 'string', default: '200' },
  out: { type: 'string', default: '.reports/bench' },
} satisfies ParseArgsOptionsConfig;

async function main(): Promise<void> {
  const { values, pods, warmup, execs, critestCount, critestRounds, grpcFloorCalls } = await benchArgs(
    { prog: 'dockershim bench', usage: USAGE, options: OPTIONS },
    (values) => ({
      values,
      pods: numberOption('--pods', values.pods),
      warmup: numberOption('--warmup', values.warmup),
      execs: numberOption('--execs', values.execs),
      critestCount: numberOption('--critest-count', values['critest-count'], { min: 1 }),
      critestRounds: numberOption('--critest-rounds', values['critest-rounds'], { min: 1 }),
      grpcFloorCalls: numberOption('--grpc-floor-calls', values['grpc-floor-calls']),
    }),
  );
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const runId = `bench-${randomBytes(4).toString('hex')}`;
  const labels = { 'kh.run': runId, 'kh.owner': 'test' };
  const refs = await ensureImages(['pause', 'node', 'busybox'], { progress: log });
  const docker = connectDocker();
  const dir = await mkdtemp(join(tmpdir(), 'kh-bench-'));
  // Its create requests are kept for Docker's floor to replay (docker_floor.ts).
  const shimEngine = new RecordingDockerClient(docker);
  const shim = await DockerShim.start({
    docker: shimEngine,
    socketPath: join(dir, 'dockershim.sock'),
    podInfraContainerImage: refs.pause,
    restrictOomScoreAdj: true,
    // Docker's bridge, as the direct side's containers: the overhead measured is the shim's, not CNI's.
    networkPlugin: 'docker',
    log,
  });
  const client = await CriClient.connect(shim.endpoint);
  // Everything the run made carries its label: the shim's pods, the direct side's, the node container.
  const teardown = cleanUpOnInterrupt(async () => {
    client.close();
    await shim.close();
    const left = await docker.listContainers({ all: true, filters: { label: [`kh.run=${runId}`] } });
    await Promise.all(
      left.map((c) =>
        docker
          .getContainer(c.Id)
          .remove({ force: true, v: true })
          .catch(() => undefined),
      ),
    );
    await rm(dir, { recursive: true, force: true });
  });
  const samples: Record<string, Samples> = { dockershim: emptySamples(), 'docker-direct': emptySamples() };
  let containerdVersion: string | undefined;
  let execSamples: Record<ExecPath, number[]> | undefined;
  let critest: CritestSideBySide | undefined;
  try {
    const drivers = [
      criDriver('dockershim', client, refs.pause, labels),
      directDockerDriver(docker, refs.pause, labels),
    ];
    if (pods > 0) {
      log(
        `bench: ${warmup} warm-up pods each, then ${pods} measured pods, dockershim and direct interleaved`,
      );
      for (const d of drivers) await runPods(d, -warmup, warmup, undefined);
    }
    // Interleaving pod by pod spreads background noise evenly over both paths.
    for (let i = 0; i < pods; i++) {
      for (const d of drivers) await runPods(d, i, 1, samples[d.name]);
      if ((i + 1) % 10 === 0) log(`bench: ${i + 1}/${pods} pods`);
    }
    if (execs > 0) {
      log(`bench: exec round trips, ${execs} rounds of ${EXEC_PATHS.join(', ')}, interleaved`);
      const { containerId } = await sleepingContainer(client, refs.busybox, labels, 'bench-exec');
      execSamples = await benchExec(execRoundTrips(client, docker, containerId), execs, 10, log);
    }
    if (!values['skip-containerd'] && pods > 0) {
      log('bench: starting a containerd node container');
      const node = await new NodeContainer(refs.node)
        .withRuntime('containerd')
        .withPauseImage(refs.pause)
        .withLabels(labels)
        .start();
      try {
        const ctrd = await CriClient.connect(node.criEndpointOnHost);
        try {
          containerdVersion = (await ctrd.version({})).runtimeVersion;
          const driver = criDriver('containerd', ctrd, normalizeImageRef(refs.pause), labels);
          samples.containerd = emptySamples();
          await runPods(driver, -warmup, warmup, undefined);
          await runPods(driver, 0, pods, samples.containerd);
        } finally {
          ctrd.close();
        }
      } finally {
        await node.stop();
      }
    }
    if (!values['skip-critest']) {
      critest = await critestSideBySide(
        shim,
        shimEngine,
        docker,
        labels,
        refs,
        { count: critestCount, parallel: 2 },
        critestRounds,
        values['critest-version'],
        { calls: grpcFloorCalls, parallel: 2, gapMs: GRPC_FLOOR_GAP_MS },
        join(dir, 'grpc-floor.sock'),
        log,
      );
    }
  } finally {
    await teardown();
  }
  // critest's pods on the shim are not labelled kh.run: any of their containers still in Docker once
  // the bench removed what critest cut off is a leak. Counted, then removed, so the next run starts clean.
  const shimLeft = critest
    ? (await critestContainers(docker)).filter((c) => !critest.shimContainersBefore.has(c.Id))
    : [];
  for (const c of shimLeft) await docker.getContainer(c.Id).remove({ force: true, v: true });

  const lifecycle = pods > 0 ? lifecycleReport(samples) : undefined;
  const engine = await docker.version();
  const exec = execSamples && execReport(execSamples);
  const report = {
    benchmark: 'dockershim-pod-lifecycle',
    date: new Date().toISOString(),
    pods,
    warmup,
    runtimes: { docker: engine.Version, containerd: containerdVersion },
    unit: 'ms',
    target: { metric: 'dockershim p50 / docker-direct p50', max: TARGET_RATIO },
    ...lifecycle,
    exec,
    critestBenchmark: critest && critestReport(critest, shimLeft.length),
  };
  await mkdir(values.out, { recursive: true });
  const file = join(values.out, `dockershim-${report.date.replace(/[:.]/g, '-')}.json`);
  await writeFile(file, `${JSON.stringify(report, null, 2)}\n`);
  await writeFile(join(values.out, 'dockershim-latest.json'), `${JSON.stringify(report, null, 2)}\n`);
  if (lifecycle) {
    const { results, ratios, lifecycleRatio } = lifecycle;
    process.stdout.write(`${table(results)}\n\n`);
    for (const op of OPERATIONS) {
      process.stdout.write(
        `${op.padEnd(18)} shim/direct p50 = ${ratios[op].toFixed(3)}${ratios[op] <= TARGET_RATIO ? '' : `  (above ${TARGET_RATIO})`}\n`,
      );
    }
    process.stdout.write(`whole lifecycle (sum of p50) shim/direct = ${lifecycleRatio.toFixed(3)}\n`);
  }
  if (exec) {
    process.stdout.write('\nexec round trip of `true`      p50 / p99 ms\n');
    for (const path of EXEC_PATHS) {
      const s = exec.results[path];
      process.stdout.write(`${path.padEnd(30)}${s.p50.toFixed(1)} / ${s.p99.toFixed(1)}\n`);
    }
    process.stdout.write(
      `shim-exec / docker-exec p50 = ${exec.ratio.toFixed(3)} (target <= ${EXEC_TARGET_RATIO}: ${exec.meetsTarget ? 'met' : 'not met'})\n`,
    );
  }
  if (report.critestBenchmark) process.stdout.write(critestTable(report.critestBenchmark));
  process.stdout.write(`written ${file}\n`);
}

/** The lifecycle's figures: per side and operation, and the shim's p50 over the direct side's. */
function lifecycleReport(samples: Record<string, Samples>) {
  const results = Object.fromEntries(
    Object.entries(samples).map(([name, s]) => [
      name,
      Object.fromEntries(OPERATIONS.map((op) => [op, summarize(s[op])])) as Record<Operation, LatencySummary>,
    ]),
  );
  const shimResults = results.dockershim as Record<Operation, LatencySummary>;
  const directResults = results['docker-direct'] as Record<Operation, LatencySummary>;
  const ratios = Object.fromEntries(
    OPERATIONS.map((op) => [op, Math.round((shimResults[op].p50 / directResults[op].p50) * 1000) / 1000]),
  ) as Record<Operation, number>;
  const sumP50 = (r: Record<Operation, LatencySummary>) => OPERATIONS.reduce((s, op) => s + r[op].p50, 0);
  const lifecycleRatio = Math.round((sumP50(shimResults) / sumP50(directResults)) * 1000) / 1000;
  return {
    ratios,
    lifecycleRatio,
    meetsTarget: Object.fromEntries(OPERATIONS.map((op) => [op, ratios[op] <= TARGET_RATIO])),
    results,
  };
}

/** A pod with one sleeping busybox container (to exec in, to ask the status of); its pod's id too. */
async function sleepingContainer(
  client: CriClient,
  image: string,
  labels: Record<string, string>,
  name: string,
) {
  const sandboxConfig = {
    metadata: {
      name,
      namespace: 'bench',
      uid: `${name}-${randomBytes(3).toString('hex')}`,
      attempt: 0,
    },
    labels,
  };
  const { podSandboxId } = await client.runPodSandbox({ config: sandboxConfig });
  const { containerId } = await client.createContainer({
    podSandboxId,
    config: { metadata: { name: 'app', attempt: 0 }, image: { image }, command: ['sleep', '3600'], labels },
    sandboxConfig,
  });
  await client.startContainer({ containerId });
  return { podSandboxId, containerId };
}

function execReport(samples: Record<ExecPath, number[]>) {
  const results = Object.fromEntries(EXEC_PATHS.map((path) => [path, summarize(samples[path])])) as Record<
    ExecPath,
    LatencySummary
  >;
  const ratio = Math.round((results['shim-exec'].p50 / results['docker-exec'].p50) * 1000) / 1000;
  return {
    rounds: samples['shim-exec'].length,
    target: { metric: 'exec round-trip p50: shim-exec / docker-exec', max: EXEC_TARGET_RATIO },
    ratio,
    meetsTarget: ratio <= EXEC_TARGET_RATIO,
    execSyncRatio: Math.round((results['shim-execsync'].p50 / results['docker-exec'].p50) * 1000) / 1000,
    results,
  };
}

type CritestSide = 'dockershim' | 'containerd';
/** critest's pods: its namespaces all start so (cri-tools' DefaultNamespacePrefix). */
const CRITEST_NAMESPACE_PREFIX = 'cri-test-namespace';

interface CritestSideBySide {
  params: CritestBenchmarkParams;
  rounds: number;
  /** cri-tools' version of the critest binary (scripts/cri-tools.sh). */
  critestVersion: string;
  versions: Record<CritestSide, string>;
  samples: Record<CritestSide | 'docker-floor', Record<string, number[]>>;
  exitCodes: Record<CritestSide, (number | null)[]>;
  left: Record<CritestSide, { leaked: number; cutOff: number; containers: number }>;
  /** The shim's Engine calls during its critest runs, per operation (instrumented client). */
  shimEngineCalls: EngineCalls;
  /** Docker's containers of critest pods before the runs: any other one left after is a leak. */
  shimContainersBefore: Set<string>;
  /** ContainerStatus(verbose) from the Go client, per target, all rounds (bench/grpc_floor.ts). */
  grpcFloor?: {
    params: GrpcFloorParams;
    samples: Record<GrpcFloorTargetName, number[]>;
    responseBytes: Record<GrpcFloorTargetName, number>;
    /** The shim's Engine calls while the Go client ran: none when its statuses came from memory. */
    shimEngineCalls: EngineCalls;
  };
}

/** The gRPC floor's targets: containerd, the shim, and the no-op server on the shim's gRPC stack. */
const GRPC_FLOOR_TARGETS = ['containerd', 'dockershim', 'noop-node'] as const;
type GrpcFloorTargetName = (typeof GRPC_FLOOR_TARGETS)[number];
/** A Go worker's pause between its calls: critest's status calls are ~100 ms apart and rarely overlap. */
const GRPC_FLOOR_GAP_MS = 10;

/**
 * A running container on containerd and on the shim for the Go client to ask the status of, and the
 * no-op server, answering the shim's own verbose status of its container from memory. `close`
 * stops the server and removes the pods.
 */
async function grpcFloorTargets(
  sides: readonly (readonly [string, string, string])[],
  labels: Record<string, string>,
  socketPath: string,
) {
  const pods: { client: CriClient; podSandboxId: string }[] = [];
  let noop: CriServer | undefined;
  const close = async () => {
    await noop?.close();
    for (const { client, podSandboxId } of pods) {
      await client.stopPodSandbox({ podSandboxId }).catch(() => undefined);
      await client.removePodSandbox({ podSandboxId }).catch(() => undefined);
      client.close();
    }
  };
  try {
    const targets = {} as Record<GrpcFloorTargetName, { endpoint: string; containerId: string }>;
    for (const [name, endpoint, image] of sides) {
      const client = await CriClient.connect(endpoint);
      const { podSandboxId, containerId } = await sleepingContainer(client, image, labels, 'bench-status');
      pods.push({ client, podSandboxId });
      if (name === 'dockershim') {
        targets.dockershim = { endpoint, containerId };
        noop = await serveNoopStatus(
          await client.containerStatus({ containerId, verbose: true }),
          socketPath,
        );
        targets['noop-node'] = { endpoint: noop.endpoint, containerId };
      } else targets.containerd = { endpoint, containerId };
    }
    return { targets, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/**
 * critest -benchmark on the shim (host dockerd) and on a host containerd with the same images, and
 * the same benchmarks as direct Engine calls (runDockerFloor), alternating round by round so
 * background load falls on all three alike.
 */
async function critestSideBySide(
  shim: DockerShim,
  engine: RecordingDockerClient,
  docker: Dockerode,
  labels: Record<string, string>,
  refs: { pause: string; busybox: string },
  params: CritestBenchmarkParams,
  rounds: number,
  critestVersion: string,
  grpcFloorParams: GrpcFloorParams,
  grpcFloorSocket: string,
  log: (line: string) => void,
): Promise<CritestSideBySide> {
  const { critest } = await criTools(criToolsDir(critestVersion));
  const grpcClient = grpcFloorParams.calls > 0 ? await grpcFloorClient(log) : undefined;
  log(
    `bench: critest -benchmark, ${rounds} round(s) of ${params.count} pods and ${params.count} containers (${params.parallel} at once) per runtime, and as direct Engine calls`,
  );
  const ctrd = await new HostContainerd()
    .withPauseImage(refs.pause)
    .withImages([refs.busybox])
    .withProgress(log)
    .start();
  const stopContainerd = cleanUpOnInterrupt(() => ctrd.stop());
  let stopFloor: (() => Promise<void>) | undefined;
  try {
    const result: CritestSideBySide = {
      params,
      rounds,
      critestVersion,
      versions: {
        dockershim: await runtimeVersion(shim.endpoint),
        containerd: await runtimeVersion(ctrd.endpoint),
      },
      samples: { dockershim: {}, containerd: {}, 'docker-floor': {} },
      exitCodes: { dockershim: [], containerd: [] },
      left: {
        dockershim: { leaked: 0, cutOff: 0, containers: 0 },
        containerd: { leaked: 0, cutOff: 0, containers: 0 },
      },
      shimEngineCalls: {},
      shimContainersBefore: new Set((await critestContainers(docker)).map((c) => c.Id)),
    };
    const sides = [
      ['dockershim', shim.endpoint, refs.busybox],
      ['containerd', ctrd.endpoint, ctrd.images[1] ?? refs.busybox],
    ] as const;
    const add = (into: Record<string, number[]>, from: Record<string, number[]>) => {
      for (const [op, values] of Object.entries(from)) into[op] = [...(into[op] ?? []), ...values];
    };
    const floor = grpcClient && (await grpcFloorTargets(sides, labels, grpcFloorSocket));
    if (floor) {
      stopFloor = cleanUpOnInterrupt(floor.close);
      result.grpcFloor = {
        params: grpcFloorParams,
        samples: { containerd: [], dockershim: [], 'noop-node': [] },
        responseBytes: { containerd: 0, dockershim: 0, 'noop-node': 0 },
        shimEngineCalls: {},
      };
    }
    for (let round = 1; round <= rounds; round++) {
      for (const [name, endpoint, image] of sides) {
        const before = name === 'dockershim' ? shim.dockerOperations.snapshot() : [];
        const run = await runCritestBenchmark(critest, endpoint, image, params, log);
        if (name === 'dockershim')
          countCalls(result.shimEngineCalls, before, shim.dockerOperations.snapshot());
        add(result.samples[name], run.samples);
        result.exitCodes[name].push(run.exitCode);
        const left = result.left[name];
        left.leaked += run.left.leaked.length;
        left.cutOff += run.left.cutOff.length;
        left.containers += run.left.containers;
        log(
          `bench: critest round ${round} on ${name}: exit ${run.exitCode}, sandboxes left: ${run.left.leaked.length} leaked, ${run.left.cutOff.length} of samples critest cut off; containers leaked: ${run.left.containers}`,
        );
      }
      add(result.samples['docker-floor'], await runDockerFloor(docker, engine.creates, params, labels));
      log(`bench: critest round ${round} as direct Engine calls done`);
      if (grpcClient && floor && result.grpcFloor) {
        const before = shim.dockerOperations.snapshot();
        const run = await runGrpcFloor(grpcClient, floor.targets, grpcFloorParams);
        countCalls(result.grpcFloor.shimEngineCalls, before, shim.dockerOperations.snapshot());
        for (const t of GRPC_FLOOR_TARGETS) {
          result.grpcFloor.samples[t].push(...(run[t]?.samples ?? []));
          result.grpcFloor.responseBytes[t] = run[t]?.responseBytes ?? Number.NaN;
        }
        log(
          `bench: gRPC floor round ${round}: ContainerStatus p50 ${GRPC_FLOOR_TARGETS.map((t) => `${t} ${run[t]?.p50.toFixed(2)} ms`).join(', ')}`,
        );
      }
    }
    return result;
  } finally {
    await stopFloor?.();
    await stopContainerd();
  }
}

/** Docker's containers (sandboxes and containers) of critest's pods, whichever shim made them. */
async function critestContainers(docker: Dockerode) {
  const all = await docker.listContainers({ all: true, filters: { label: [LabelKeys.containerType] } });
  return all.filter((c) => c.Labels[KubernetesLabels.podNamespace]?.startsWith(CRITEST_NAMESPACE_PREFIX));
}

/** Adds each operation's calls between two snapshots of the shim's Engine metrics to `into`. */
/** Engine calls per operation, and the seconds the shim waited for their answers. */
type EngineCalls = Record<string, { calls: number; seconds: number }>;

/** Adds the calls made between two snapshots of the shim's instrumented client. */
function countCalls(into: EngineCalls, before: DockerOperationStats[], after: DockerOperationStats[]): void {
  for (const s of after) {
    const b = before.find((o) => o.operation === s.operation);
    const calls = s.count - (b?.count ?? 0);
    if (calls <= 0) continue;
    const sum = into[s.operation] ?? { calls: 0, seconds: 0 };
    into[s.operation] = {
      calls: sum.calls + calls,
      seconds: sum.seconds + s.sumSeconds - (b?.sumSeconds ?? 0),
    };
  }
}

const callCounts = (calls: EngineCalls) =>
  Object.fromEntries(Object.entries(calls).map(([op, c]) => [op, c.calls]));

async function runtimeVersion(endpoint: string): Promise<string> {
  const client = await CriClient.connect(endpoint);
  try {
    const v = await client.version({});
    return `${v.runtimeName} ${v.runtimeVersion}`;
  } finally {
    client.close();
  }
}

/**
 * The Go client's ContainerStatus figures per target, the no-op server's p50 over containerd's and
 * the shim's over the no-op server's, all from one client.
 */
function grpcFloorReport(g: NonNullable<CritestSideBySide['grpcFloor']>) {
  const targets = Object.fromEntries(
    GRPC_FLOOR_TARGETS.map((t) => [t, { ...summarize(g.samples[t]), responseBytes: g.responseBytes[t] }]),
  ) as Record<GrpcFloorTargetName, LatencySummary & { responseBytes: number }>;
  const quiet = floorOf({
    floor: targets['noop-node'].p50,
    containerd: targets.containerd.p50,
    shim: targets.dockershim.p50,
  });
  return {
    client:
      "bench/grpc_floor/main.go: critest v1.33's CRI client (k8s.io/cri-client/pkg), Go from cri-tools' vendored modules",
    call: "ContainerStatus(verbose=true) of a running busybox container; noop-node answers the shim's own response from memory with @kh/cri-api's serveCri",
    params: g.params,
    targets,
    noopOverContainerd: quiet.overContainerd,
    shimOverNoop: quiet.shimOverFloor,
    shimOverContainerd: ratio(targets.dockershim.p50, targets.containerd.p50),
    shimEngineCalls: callCounts(g.shimEngineCalls),
  };
}

function critestReport(r: CritestSideBySide, shimContainersLeft: number) {
  const p50 = (side: keyof CritestSideBySide['samples'], op: string) => {
    const values = r.samples[side][op];
    return values?.length ? summarize(values) : undefined;
  };
  const grpcFloor = r.grpcFloor && grpcFloorReport(r.grpcFloor);
  const operations = Object.fromEntries(
    CRITEST_OPERATIONS.flatMap((op) => {
      const shim = p50('dockershim', op);
      const containerd = p50('containerd', op);
      const floor = p50('docker-floor', op);
      if (!shim || !containerd || !floor) return [];
      const shimRatio = ratio(shim.p50, containerd.p50);
      const docker = floorOf({ floor: floor.p50, containerd: containerd.p50, shim: shim.p50 });
      // The gRPC floor is ContainerStatus's, the one call that reaches no Engine: the no-op server
      // against containerd from the same Go client, and critest's shim figure against the no-op
      // server, as Docker's floor is judged (the no-op server's calls come without critest's other
      // work beside them, so this errs against the floor).
      const grpc =
        op === 'ContainerStatus' && grpcFloor
          ? {
              overContainerd: grpcFloor.noopOverContainerd,
              shimOverFloor: ratio(shim.p50, grpcFloor.targets['noop-node'].p50),
            }
          : undefined;
      const verdict = critestVerdict(shimRatio, { docker, grpc });
      return [
        [
          op,
          {
            dockershimP50: shim.p50,
            containerdP50: containerd.p50,
            ratio: shimRatio,
            dockerFloorP50: floor.p50,
            dockerFloorRatio: docker.overContainerd,
            overFloor: docker.shimOverFloor,
            ...(grpc && { grpcFloorRatio: grpc.overContainerd, overGrpcFloor: grpc.shimOverFloor }),
            // target and met make each ratio a figure of the bench history's trend.
            target: CRITEST_TARGET_RATIO,
            met: verdict === 'met',
            verdict,
          },
        ],
      ];
    }),
  ) as Record<
    string,
    {
      dockershimP50: number;
      containerdP50: number;
      ratio: number;
      dockerFloorP50: number;
      dockerFloorRatio: number;
      overFloor: number;
      grpcFloorRatio?: number;
      overGrpcFloor?: number;
      target: number;
      met: boolean;
      verdict: Verdict;
    }
  >;
  const samplesPerRun = r.params.count * 2 * r.rounds;
  return {
    critest: `v${r.critestVersion} -benchmark (pod and container lifecycle benchmarks)`,
    params: r.params,
    rounds: r.rounds,
    runtimes: r.versions,
    target: {
      metric: 'dockershim p50 / containerd p50, every operation',
      max: CRITEST_TARGET_RATIO,
      leaked: 0,
      dockerFloor:
        "the same benchmarks as the Engine calls Docker itself needs, made directly with dockerode in the same run (verdict 'missed: docker floor' when those alone exceed the target and the shim is within the target's factor of them)",
      grpcFloor:
        "ContainerStatus timed by one Go client against containerd, the shim and a no-op server on the shim's gRPC stack, in the same run (verdict 'missed: grpc floor' when the no-op server alone exceeds the target over containerd and the shim is within the target's factor of it)",
    },
    dockerFloorCalls: DOCKER_FLOOR_CALLS,
    grpcFloor,
    operations,
    meetsTarget: {
      ...Object.fromEntries(Object.entries(operations).map(([op, o]) => [op, o.verdict === 'met'])),
      nothingLeaked:
        r.left.dockershim.leaked === 0 && r.left.dockershim.containers === 0 && shimContainersLeft === 0,
    },
    left: { ...r.left, dockershimEngineContainers: shimContainersLeft },
    /** Engine calls the shim made during its critest runs, per sample (pod and container samples). */
    shimEngineCallsPerSample: Object.fromEntries(
      Object.entries(r.shimEngineCalls).map(([op, c]) => [
        op,
        Math.round((c.calls / samplesPerRun) * 100) / 100,
      ]),
    ),
    /**
     * How long the shim waited for each Engine call's answer, on average, during its critest runs:
     * beside the floor's p50 it tells Docker's share of a CRI call from the shim's own.
     */
    shimEngineMsPerCall: Object.fromEntries(
      Object.entries(r.shimEngineCalls).map(([op, c]) => [op, Math.round((c.seconds / c.calls) * 1e5) / 100]),
    ),
    critestExitCodes: r.exitCodes,
    results: Object.fromEntries(
      (['dockershim', 'containerd', 'docker-floor'] as const).map((side) => [
        side,
        Object.fromEntries(
          CRITEST_OPERATIONS.flatMap((op) => {
            const s = p50(side, op);
            return s ? [[op, s]] : [];
          }),
        ),
      ]),
    ) as Record<'dockershim' | 'containerd' | 'docker-floor', Record<string, LatencySummary>>,
  };
}

function critestTable(c: ReturnType<typeof critestReport>): string {
  const lines = [
    '',
    `critest -benchmark p50 ms (${c.rounds} x ${c.params.count}, ${c.params.parallel} at once); docker floor = the Engine calls alone`,
    `${'operation'.padEnd(18)}${'dockershim'.padStart(12)}${'containerd'.padStart(12)}${'ratio'.padStart(8)}${'floor'.padStart(9)}${'floor/ctrd'.padStart(12)}  verdict`,
  ];
  for (const [op, o] of Object.entries(c.operations)) {
    lines.push(
      `${op.padEnd(18)}${o.dockershimP50.toFixed(1).padStart(12)}${o.containerdP50.toFixed(1).padStart(12)}${o.ratio.toFixed(2).padStart(8)}${o.dockerFloorP50.toFixed(1).padStart(9)}${o.dockerFloorRatio.toFixed(2).padStart(12)}  ${o.verdict}`,
    );
  }
  const left = (side: CritestSide) =>
    `${c.left[side].leaked} sandboxes leaked + ${c.left[side].cutOff} cut off by critest, ${c.left[side].containers} containers leaked`;
  lines.push(`left: dockershim ${left('dockershim')}; containerd ${left('containerd')}`);
  lines.push(`Docker containers of critest pods left after the bench: ${c.left.dockershimEngineContainers}`);
  const g = c.grpcFloor;
  if (g) {
    const t = (name: GrpcFloorTargetName) =>
      `${name} ${g.targets[name].p50.toFixed(2)} / ${g.targets[name].p99.toFixed(2)} (${g.targets[name].responseBytes} B)`;
    lines.push(
      `gRPC floor, ContainerStatus(verbose) from Go, p50 / p99 ms: ${GRPC_FLOOR_TARGETS.map(t).join('; ')}`,
      `  noop/containerd ${g.noopOverContainerd.toFixed(2)}, shim/noop ${g.shimOverNoop.toFixed(2)}, shim/containerd ${g.shimOverContainerd.toFixed(2)}`,
    );
  }
  lines.push(
    `shim Engine calls per sample (mean ms each): ${Object.entries(c.shimEngineCallsPerSample)
      .map(([op, n]) => `${op} ${n} (${c.shimEngineMsPerCall[op]?.toFixed(1)})`)
      .join(', ')}`,
  );
  return `${lines.join('\n')}\n`;
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
