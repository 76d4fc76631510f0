import { spawn } from 'node:child_process';
import {
  closeSync,
  fdatasyncSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { ParseArgsOptionsConfig } from 'node:util';
import { benchArgs, numberOption, UsageError } from '@kh/testkit';
import { summary } from './client.js';
import { runLoad } from './load.js';
import { cleanUpOnExit, cpuSeconds, memory, servingUrl } from './proc.js';

/**
 * Kubernetes' published scalability thresholds (issue 21, item 5), a write with --data-dir allowed
 * its fdatasync (issue 32), and how much each p99 may grow from the first step to the last.
 */
const TARGETS = {
  writeP99Ms: 25,
  writeP99MsDataDir: 50,
  watchDeliveryP99Ms: 100,
  listAllPodsMs: 2000,
  peakRssBytes: 4 * 2 ** 30,
  p99GrowthFirstToLast: 5,
};

const log = (line: string) => console.error(`[bench] ${line}`);
const BENCH_DIR = join(import.meta.dirname, '..', '..', '.reports', 'bench');
const mib = (b: number) => Math.round(b / 2 ** 20);

const { live } = cleanUpOnExit();

interface StepConfig {
  nodes: number;
  podsPerNode: number;
  watchersPerNode: number;
  durationSeconds: number;
  durable: boolean;
  listRepeats: number;
  serverNodeArgs: string[];
}

async function runStep(s: StepConfig) {
  // The apiserver runs as its own process (one node process, as in a run), on loopback.
  const cli = join(import.meta.dirname, '..', '..', 'dist', 'cli.js');
  const dataDir = s.durable ? mkdtempSync(join(tmpdir(), 'kh-apiserver-bench-')) : undefined;
  live.dataDir = dataDir;
  // The disk's own floor for a durable write, measured on the same file system before the server starts.
  const fdatasyncFloor = dataDir ? fdatasyncLatency(dataDir) : undefined;
  const args = [
    ...s.serverNodeArgs,
    cli,
    '--port',
    '0',
    '--anonymous',
    ...(dataDir ? ['--data-dir', dataDir] : []),
  ];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  live.child = child;
  const url = await servingUrl(child);
  const pods = s.nodes * s.podsPerNode;
  const watchers = Math.max(3, Math.round(s.nodes * s.watchersPerNode));
  log(
    `${s.nodes} nodes, ${pods} pods, ${watchers} watchers${dataDir ? ', --data-dir' : ''}: apiserver pid ${child.pid}`,
  );
  const loadBefore = loadavg();
  try {
    const config = {
      url,
      durable: s.durable,
      nodes: s.nodes,
      pods,
      watchers,
      durationSeconds: s.durationSeconds,
      leaseRenewSeconds: 10,
      nodeChangeFraction: 0.1,
      // 20/s per 1 000 nodes, as the 1k baseline had.
      podStatusPerSecond: Math.round((20 * s.nodes) / 1000),
      listRepeats: s.listRepeats,
    };
    const r = await runLoad({
      ...config,
      progress: log,
      rss: () => memory(child.pid!).rss,
      cpuSeconds: () => cpuSeconds(child.pid!),
    });
    const mem = memory(child.pid!);
    const verdict = (measured: number, target: number) => ({ measured, target, met: measured <= target });
    const { url: _u, ...shown } = config;
    return {
      ...shown,
      dataDir: s.durable,
      ...(fdatasyncFloor ? { fdatasyncFloorMs: fdatasyncFloor } : {}),
      loadAverageBefore: loadBefore.map((l) => Math.round(l * 10) / 10),
      loadAverageAfter: loadavg().map((l) => Math.round(l * 10) / 10),
      ...r,
      rssMiB: mib(mem.rss),
      peakRssMiB: mib(mem.peak),
      targets: {
        writeP99Ms: verdict(r.writes.p99, s.durable ? TARGETS.writeP99MsDataDir : TARGETS.writeP99Ms),
        watchDeliveryP99Ms: verdict(r.watchDelivery.p99, TARGETS.watchDeliveryP99Ms),
        listAllPodsMs: verdict(r.listAllPods.max, TARGETS.listAllPodsMs),
        peakRssMiB: verdict(mib(mem.peak), mib(TARGETS.peakRssBytes)),
      },
    };
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    live.child = undefined;
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    live.dataDir = undefined;
  }
}

type StepResult = Awaited<ReturnType<typeof runStep>>;

/** How each figure grows from the smallest step to the largest (`rs` sorted by nodes): whether it scales. */
function growthOf(rs: StepResult[]) {
  const first = rs[0]!;
  const last = rs[rs.length - 1]!;
  const figure = (get: (r: StepResult) => number) => ({
    ...Object.fromEntries(rs.map((r) => [`${r.nodes}`, get(r)])),
    growth: Math.round((get(last) / get(first)) * 100) / 100,
  });
  const p99 = (get: (r: StepResult) => number) => {
    const f = figure(get);
    return { ...f, target: TARGETS.p99GrowthFirstToLast, met: f.growth <= TARGETS.p99GrowthFirstToLast };
  };
  return {
    loadGrowth: last.nodes / first.nodes,
    writeP99Ms: p99((r) => r.writes.p99),
    writeP50Ms: figure((r) => r.writes.p50),
    watchDeliveryP99Ms: p99((r) => r.watchDelivery.p99),
    serverCpuPerWriteUs: figure((r) => r.serverCpuPerWriteUs),
    serverCpuPerDeliveredEventUs: figure((r) => r.serverCpuPerDeliveredEventUs),
    listAllPodsMs: figure((r) => r.listAllPods.max),
    listAllPodsPagedMs: figure((r) => r.listAllPodsPaged.ms),
    peakRssMiB: figure((r) => r.peakRssMiB),
    serverCpuPercentOfOneCore: figure((r) => r.serverCpuPercentOfOneCore),
  };
}

function scaling(runs: StepResult[]) {
  const out: Record<string, ReturnType<typeof growthOf>> = {};
  for (const durable of [false, true]) {
    const rs = runs.filter((r) => r.dataDir === durable).sort((a, b) => a.nodes - b.nodes);
    if (rs.length >= 2) out[durable ? 'dataDir' : 'inMemory'] = growthOf(rs);
  }
  return out;
}

/** fdatasync of a small append, as the log's group commit does, for `seconds` on `dir`'s file system. */
function fdatasyncLatency(dir: string, seconds = 2) {
  const path = join(dir, 'fdatasync-probe');
  const fd = openSync(path, 'a');
  const ms: number[] = [];
  const until = performance.now() + seconds * 1000;
  try {
    while (performance.now() < until) {
      const t = performance.now();
      writeSync(fd, `${'x'.repeat(500)}\n`);
      fdatasyncSync(fd);
      ms.push(performance.now() - t);
    }
  } finally {
    closeSync(fd);
    rmSync(path, { force: true });
  }
  return summary(ms);
}

function table(runs: StepResult[]): string {
  const ok = (v: { met: boolean }) => (v.met ? '' : ' ✗');
  const rows = runs.map(
    (r) =>
      `| ${r.nodes} / ${r.pods} / ${r.watchers} | ${r.dataDir ? 'data dir' : 'memory'} | ${r.writes.p50} / ${r.writes.p99}${ok(r.targets.writeP99Ms)} | ${r.watchDelivery.p50} / ${r.watchDelivery.p99}${ok(r.targets.watchDeliveryP99Ms)} | ${Math.round(r.listAllPods.duringLoadMs)} / ${Math.round(r.listAllPods.max)}${ok(r.targets.listAllPodsMs)} | ${r.listAllPodsPaged.ms} (${r.listAllPodsPaged.pages} × ${r.listAllPodsPaged.limit}) | ${r.peakRssMiB}${ok(r.targets.peakRssMiB)} | ${r.serverCpuPercentOfOneCore} % (${r.serverCpuPerWriteUs} / ${r.serverCpuPerDeliveredEventUs}) | ${r.loadAverageBefore[0]} |`,
  );
  return [
    '| nodes / pods / watchers | storage | write p50 / p99 ms | watch p50 / p99 ms | LIST all pods ms (under load / max) | paged LIST ms (pages × limit) | peak RSS MiB | server CPU (µs per write / per event read) | load avg |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

const USAGE = `Usage: npm run bench -w @kh/fake-apiserver [-- options]

The fake apiserver at Kubernetes' published scalability thresholds, kwok-style load: for each step
and storage, a fresh server process with that many nodes (leases renewed, status patched), their
pods bound by the built-in scheduler and pod status patches, and watchers of leases, nodes and
pods. Each figure against its target (write and watch delivery p99, LIST of every pod, peak RSS)
goes to --out and apiserver-latest.json beside it.

Options:
  --steps <n,...>               nodes of each step (default 1000,2000,5000)
  --pods-per-node <n>           (default 30)
  --watchers-per-node <x>       watchers per node, at least 3 in all (default 0.1)
  --duration <seconds>          steady state of each step (default 20)
  --storage <memory,data-dir>   each step in memory, with --data-dir (a temp dir), or both (default both)
  --list-repeats <n>            idle LISTs of every pod after the one under load (default 2)
  --server-node-arg <arg>       a Node flag for the server process, repeatable, e.g. --server-node-arg --cpu-prof
  --out <file>                  the JSON (default .reports/bench/apiserver-<time>.json)
  -h, --help                    show this help`;

const STORAGES = ['memory', 'data-dir'];

const OPTIONS = {
  steps: { type: 'string', default: '1000,2000,5000' },
  'pods-per-node': { type: 'string', default: '30' },
  'watchers-per-node': { type: 'string', default: '0.1' },
  duration: { type: 'string', default: '20' },
  storage: { type: 'string', default: STORAGES.join(',') },
  'list-repeats': { type: 'string', default: '2' },
  'server-node-arg': { type: 'string', multiple: true, default: [] },
  // One file per run, so the runs before stay for the history (kubelet-harness history --bench).
  out: {
    type: 'string',
    default: join(BENCH_DIR, `apiserver-${new Date().toISOString().replace(/[:.]/g, '-')}.json`),
  },
} satisfies ParseArgsOptionsConfig;

async function main() {
  const o = await benchArgs({ prog: 'fake-apiserver bench', usage: USAGE, options: OPTIONS }, (v) => {
    const storage = v.storage.split(',');
    const unknown = storage.find((m) => !STORAGES.includes(m));
    if (unknown !== undefined)
      throw new UsageError(`--storage takes ${STORAGES.join(', ')} (comma-separated), not "${unknown}"`);
    return {
      steps: v.steps.split(',').map((n) => numberOption('--steps', n, { min: 1 })),
      storage,
      podsPerNode: numberOption('--pods-per-node', v['pods-per-node']),
      watchersPerNode: numberOption('--watchers-per-node', v['watchers-per-node'], { integer: false }),
      durationSeconds: numberOption('--duration', v.duration, { integer: false, min: 1 }),
      listRepeats: numberOption('--list-repeats', v['list-repeats']),
      serverNodeArgs: v['server-node-arg'],
      out: v.out,
    };
  });
  const runs: StepResult[] = [];
  const started = Date.now();
  const report = () => ({
    benchmark: 'fake-apiserver at Kubernetes scalability thresholds (kwok-style load)',
    date: new Date().toISOString(),
    totalSeconds: Math.round((Date.now() - started) / 1000),
    machine: { cpus: cpus().length, node: process.version },
    targets: {
      writeP99Ms: TARGETS.writeP99Ms,
      writeP99MsDataDir: TARGETS.writeP99MsDataDir,
      p99GrowthFirstToLast: TARGETS.p99GrowthFirstToLast,
      watchDeliveryP99Ms: TARGETS.watchDeliveryP99Ms,
      listAllPodsMs: TARGETS.listAllPodsMs,
      peakRssMiB: mib(TARGETS.peakRssBytes),
    },
    allTargetsMet:
      runs.every((r) => Object.values(r.targets).every((t) => t.met)) &&
      Object.values(scaling(runs)).every((g) => g.writeP99Ms.met && g.watchDeliveryP99Ms.met),
    runs,
    scaling: scaling(runs),
    table: table(runs),
  });
  for (const nodes of o.steps) {
    for (const mode of o.storage) {
      runs.push(
        await runStep({
          nodes,
          podsPerNode: o.podsPerNode,
          watchersPerNode: o.watchersPerNode,
          durationSeconds: o.durationSeconds,
          durable: mode === 'data-dir',
          listRepeats: o.listRepeats,
          serverNodeArgs: o.serverNodeArgs,
        }),
      );
      const r = runs[runs.length - 1]!;
      log(
        `=> writes p50=${r.writes.p50} p99=${r.writes.p99}ms (n=${r.writes.count}, failures=${r.writeFailures}); watch p50=${r.watchDelivery.p50} p99=${r.watchDelivery.p99}ms (n=${r.watchDelivery.count}); LIST ${Math.round(r.listAllPods.max)}ms, in pages ${r.listAllPodsPaged.ms}ms; peak rss ${r.peakRssMiB} MiB; cpu ${r.serverCpuPercentOfOneCore}%; nodes not Ready ${r.nodesNotReady}`,
      );
      // Written after every step: a long run interrupted still leaves what it measured.
      mkdirSync(dirname(o.out), { recursive: true });
      const json = `${JSON.stringify(report(), null, 2)}\n`;
      writeFileSync(o.out, json);
      writeFileSync(join(dirname(o.out), 'apiserver-latest.json'), json);
    }
  }
  console.error(table(runs));
  log(`wrote ${o.out} (${Math.round((Date.now() - started) / 1000)}s)`);
}

main().catch((e: Error) => {
  console.error(`[bench] failed: ${e.stack ?? e.message}`);
  process.exit(1);
});
