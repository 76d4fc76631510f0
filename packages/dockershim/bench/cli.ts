#!/usr/bin/env node
// Benchmark: the pod lifecycle through the dockershim vs the same Docker calls made directly, and
// containerd's built-in CRI (in a node container) on the same workload; then the exec round trip
// (streaming Exec, ExecSync) against Docker's own exec. Writes JSON to .reports/bench/.
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { normalizeImageRef } from '@kh/apimachinery';
import { CriClient } from '@kh/cri-api';
import { ensureImages, NodeContainer } from '@kh/testkit';
import { connectDocker } from '../src/shim/docker_endpoint.js';
import { DockerShim } from '../src/shim/service.js';
import { benchExec, EXEC_PATHS, type ExecPath, execRoundTrips } from './exec.js';
import { type LatencySummary, percentile, summarize } from './stats.js';
import { criDriver, directDockerDriver, OPERATIONS, type Operation, type PodDriver } from './workload.js';

const TARGET_RATIO = 1.15;
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

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      pods: { type: 'string', default: '30' },
      warmup: { type: 'string', default: '3' },
      'skip-containerd': { type: 'boolean', default: false },
      execs: { type: 'string', default: '200' },
      out: { type: 'string', default: '.reports/bench' },
    },
  });
  const pods = Number(values.pods);
  const warmup = Number(values.warmup);
  const execs = Number(values.execs);
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const runId = `bench-${randomBytes(4).toString('hex')}`;
  const labels = { 'kh.run': runId, 'kh.owner': 'test' };
  const refs = await ensureImages(['pause', 'node', 'busybox'], { progress: log });
  const docker = connectDocker();
  const dir = await mkdtemp(join(tmpdir(), 'kh-bench-'));
  const shim = await DockerShim.start({
    docker,
    socketPath: join(dir, 'dockershim.sock'),
    podInfraContainerImage: refs.pause,
    restrictOomScoreAdj: true,
    log,
  });
  const client = await CriClient.connect(shim.endpoint);
  const samples: Record<string, Samples> = { dockershim: emptySamples(), 'docker-direct': emptySamples() };
  let containerdVersion: string | undefined;
  let execSamples: Record<ExecPath, number[]> | undefined;
  try {
    const drivers = [
      criDriver('dockershim', client, refs.pause, labels),
      directDockerDriver(docker, refs.pause, labels),
    ];
    log(`bench: ${warmup} warm-up pods each, then ${pods} measured pods, dockershim and direct interleaved`);
    for (const d of drivers) await runPods(d, -warmup, warmup, undefined);
    // Interleaving pod by pod spreads background noise evenly over both paths.
    for (let i = 0; i < pods; i++) {
      for (const d of drivers) await runPods(d, i, 1, samples[d.name]);
      if ((i + 1) % 10 === 0) log(`bench: ${i + 1}/${pods} pods`);
    }
    if (execs > 0) {
      log(`bench: exec round trips, ${execs} rounds of ${EXEC_PATHS.join(', ')}, interleaved`);
      const containerId = await execContainer(client, refs.busybox, labels);
      execSamples = await benchExec(execRoundTrips(client, docker, containerId), execs, 10, log);
    }
    if (!values['skip-containerd']) {
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
  } finally {
    client.close();
    await shim.close();
    const left = await docker.listContainers({ all: true, filters: { label: [`kh.run=${runId}`] } });
    await Promise.all(
      left.map((c) =>
        docker
          .getContainer(c.Id)
          .remove({ force: true })
          .catch(() => undefined),
      ),
    );
    await rm(dir, { recursive: true, force: true });
  }

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
    ratios,
    lifecycleRatio,
    meetsTarget: Object.fromEntries(OPERATIONS.map((op) => [op, ratios[op] <= TARGET_RATIO])),
    results,
    exec,
  };
  await mkdir(values.out, { recursive: true });
  const file = join(values.out, `dockershim-${report.date.replace(/[:.]/g, '-')}.json`);
  await writeFile(file, `${JSON.stringify(report, null, 2)}\n`);
  await writeFile(join(values.out, 'dockershim-latest.json'), `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`${table(results)}\n\n`);
  for (const op of OPERATIONS) {
    process.stdout.write(
      `${op.padEnd(18)} shim/direct p50 = ${ratios[op].toFixed(3)}${ratios[op] <= TARGET_RATIO ? '' : '  (above 1.15)'}\n`,
    );
  }
  process.stdout.write(`whole lifecycle (sum of p50) shim/direct = ${lifecycleRatio.toFixed(3)}\n`);
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
  process.stdout.write(`written ${file}\n`);
}

/** A pod with one sleeping busybox container to exec in, made through the shim. */
async function execContainer(client: CriClient, image: string, labels: Record<string, string>) {
  const sandboxConfig = {
    metadata: {
      name: 'bench-exec',
      namespace: 'bench',
      uid: `exec-${randomBytes(3).toString('hex')}`,
      attempt: 0,
    },
    labels,
  };
  const { podSandboxId } = await client.runPodSandbox({ config: sandboxConfig });
  const { containerId } = await client.createContainer({
    podSandboxId,
    config: { metadata: { name: 'exec', attempt: 0 }, image: { image }, command: ['sleep', '3600'], labels },
    sandboxConfig,
  });
  await client.startContainer({ containerId });
  return containerId;
}

function execReport(samples: Record<ExecPath, number[]>) {
  const results = Object.fromEntries(
    EXEC_PATHS.map((path) => {
      const p99 = percentile(
        [...samples[path]].sort((a, b) => a - b),
        99,
      );
      return [path, { ...summarize(samples[path]), p99: Math.round(p99 * 100) / 100 }];
    }),
  ) as Record<ExecPath, LatencySummary & { p99: number }>;
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

main().catch((err: unknown) => {
  process.stderr.write(`bench: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
