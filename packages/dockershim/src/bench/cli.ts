#!/usr/bin/env node
// Benchmark: the pod lifecycle through the dockershim vs the same Docker calls made directly, and
// containerd's built-in CRI (in a node container) on the same workload. Writes JSON to .reports/bench/.
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CriClient } from '@kh/cri-api';
import { ensureImages, NodeContainer, normalizeImageRef } from '@kh/testkit';
import { connectDocker } from '../docker_endpoint.js';
import { DockerShim } from '../shim/service.js';
import { type LatencySummary, summarize } from './stats.js';
import { criDriver, directDockerDriver, OPERATIONS, type Operation, type PodDriver } from './workload.js';

const TARGET_RATIO = 1.15;

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
      out: { type: 'string', default: '.reports/bench' },
    },
  });
  const pods = Number(values.pods);
  const warmup = Number(values.warmup);
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const runId = `bench-${randomBytes(4).toString('hex')}`;
  const labels = { 'kh.run': runId, 'kh.owner': 'test' };
  const refs = await ensureImages(['pause', 'node'], { progress: log });
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
  process.stdout.write(
    `whole lifecycle (sum of p50) shim/direct = ${lifecycleRatio.toFixed(3)}\nwritten ${file}\n`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
