#!/usr/bin/env node
// Benchmark: sync N pods (default 100) one after another and report the agent-side overhead
// per pod (sync wall time minus time inside CRI calls) at p50/p99, for the first sync (sandbox
// + container creation) and a steady-state sync (nothing to change). Runs on real containerd in
// a testkit node (default) or on the in-memory fake (`--runtime fake`, labelled as such).
//   npm run bench -w @kh/runtime-manager -- [--runtime containerd|fake] [--pods 100] [--out FILE]
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CriClient, FakeRuntime } from '@kh/cri-api';
import type { V1Pod } from '@kubernetes/client-node';
import { KubeGenericRuntimeManager } from '../src/kuberuntime/manager.js';
import { newCrashLoopBackoff } from '../src/util/backoff.js';
import { startContainerdNode } from './containerd_node.js';
import { CriTimeline, percentile, type Sample } from './overhead.js';

const TargetP99Ms = 20;

interface Phase {
  pods: number;
  overheadMs: { p50: number; p99: number; max: number; mean: number };
  totalMs: { p50: number; p99: number };
  criMs: { p50: number; p99: number };
  /** Process CPU time per pod: an upper bound on the agent's own work, free of scheduling delays. */
  cpuMs: { p50: number; p99: number };
  failedSteps: number;
  /** The five slowest pods by overhead, to tell warm-up and scheduling spikes from steady cost. */
  slowest: { pod: number; overheadMs: number; totalMs: number; cpuMs: number }[];
}

function summarize(samples: Sample[], failedSteps: number): Phase {
  const o = samples.map((s) => s.overheadMs);
  const round = (n: number) => Math.round(n * 1000) / 1000;
  return {
    pods: samples.length,
    overheadMs: {
      p50: round(percentile(o, 50)),
      p99: round(percentile(o, 99)),
      max: round(Math.max(...o)),
      mean: round(o.reduce((a, b) => a + b, 0) / o.length),
    },
    totalMs: {
      p50: round(
        percentile(
          samples.map((s) => s.totalMs),
          50,
        ),
      ),
      p99: round(
        percentile(
          samples.map((s) => s.totalMs),
          99,
        ),
      ),
    },
    criMs: {
      p50: round(
        percentile(
          samples.map((s) => s.criMs),
          50,
        ),
      ),
      p99: round(
        percentile(
          samples.map((s) => s.criMs),
          99,
        ),
      ),
    },
    cpuMs: {
      p50: round(
        percentile(
          samples.map((s) => s.cpuMs),
          50,
        ),
      ),
      p99: round(
        percentile(
          samples.map((s) => s.cpuMs),
          99,
        ),
      ),
    },
    failedSteps,
    slowest: samples
      .map((s, pod) => ({
        pod,
        overheadMs: round(s.overheadMs),
        totalMs: round(s.totalMs),
        cpuMs: round(s.cpuMs),
      }))
      .sort((a, b) => b.overheadMs - a.overheadMs)
      .slice(0, 5),
  };
}

function benchPod(i: number, image: string): V1Pod {
  return {
    metadata: { name: `bench-${i}`, namespace: 'bench', uid: `bench-uid-${process.pid}-${i}` },
    spec: {
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'app', image, imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] }],
    },
  };
}

async function syncAll(
  manager: KubeGenericRuntimeManager,
  timeline: CriTimeline,
  pods: V1Pod[],
  label: string,
): Promise<Phase> {
  const backoff = newCrashLoopBackoff();
  const samples: Sample[] = [];
  let failed = 0;
  for (const [i, pod] of pods.entries()) {
    // One pod worker iteration: read the pod's state from the runtime, then sync it.
    const m = await timeline.measure(async () => {
      const st = await manager.getPodStatus(
        pod.metadata!.uid!,
        pod.metadata!.name!,
        pod.metadata!.namespace!,
      );
      const r = await manager.syncPod(pod, st, [], backoff);
      for (const s of r.steps) {
        if (s.error) {
          failed++;
          console.error(`  ${pod.metadata!.name} ${s.action} ${s.target}: ${s.reason}: ${s.message}`);
        }
      }
    });
    samples.push(m);
    if ((i + 1) % 10 === 0) console.log(`  ${label}: ${i + 1}/${pods.length} pods`);
  }
  return summarize(samples, failed);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      runtime: { type: 'string', default: 'containerd' },
      pods: { type: 'string', default: '100' },
      out: { type: 'string' },
    },
  });
  const runtime = values.runtime;
  if (runtime !== 'containerd' && runtime !== 'fake')
    throw new Error(`--runtime must be containerd or fake, got "${runtime}"`);
  const n = Number(values.pods);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`--pods must be a positive integer, got "${values.pods}"`);
  const out = resolve(values.out ?? join('.reports', 'bench', `runtime-manager-${runtime}.json`));

  const timeline = new CriTimeline();
  let manager: KubeGenericRuntimeManager;
  let image: string;
  let cleanup: () => Promise<void>;
  if (runtime === 'containerd') {
    const node = await startContainerdNode({
      onCall: timeline.onCall,
      progress: (l) => console.log(`  ${l}`),
    });
    manager = node.manager;
    image = node.busybox;
    cleanup = () => node.stop();
  } else {
    const fake = await FakeRuntime.start();
    image = 'kubelet-harness/busybox:bench';
    fake.addImage(image, 2_000_000);
    const dir = await mkdtemp(join(tmpdir(), 'kh-rm-bench-'));
    const cri = await CriClient.connect(fake.endpoint, { onCall: timeline.onCall });
    manager = await KubeGenericRuntimeManager.create({
      cri,
      podLogsRootDir: join(dir, 'logs'),
      podsDir: join(dir, 'pods'),
    });
    cleanup = async () => {
      cri.close();
      await fake.stop();
      await rm(dir, { recursive: true, force: true });
    };
  }

  try {
    const version = await manager.version();
    console.log(`runtime ${manager.type()} ${version}; syncing ${n} pods`);
    const pods = Array.from({ length: n }, (_, i) => benchPod(i, image));
    const create = await syncAll(manager, timeline, pods, 'create');
    const steady = await syncAll(manager, timeline, pods, 'steady');
    console.log('  tearing down');
    // In parallel batches: each stop may take the 2s minimum grace period.
    const running = await manager.getPods(true);
    for (let i = 0; i < running.length; i += 20) {
      await Promise.all(running.slice(i, i + 20).map((p) => manager.killPod(undefined, p, 0)));
    }
    await manager
      .garbageCollect({ minAgeMs: 0, maxPerPodContainer: 0, maxContainers: 0 }, true, true)
      .catch(() => undefined);

    const report = {
      benchmark: 'runtime-manager sync overhead',
      runtime: runtime === 'fake' ? 'fake (in-memory FakeRuntime, not a real runtime)' : 'containerd',
      runtimeName: manager.type(),
      runtimeVersion: version,
      pods: n,
      method:
        'per pod: getPodStatus + syncPod, sequential; overhead = wall time - union of CRI call intervals (CriClient onCall)',
      create,
      steady,
      targetP99Ms: TargetP99Ms,
      meetsTarget: create.overheadMs.p99 <= TargetP99Ms && steady.overheadMs.p99 <= TargetP99Ms,
      // Other work on the machine shows up as overhead (the agent waits to be scheduled): keep the load with the result.
      machine: {
        cpus: cpus().length,
        node: process.version,
        loadAverage1m: Math.round(loadavg()[0]! * 100) / 100,
      },
      at: new Date().toISOString(),
    };
    await mkdir(dirname(out), { recursive: true });
    await writeFile(out, `${JSON.stringify(report, null, 2)}\n`);
    console.log(
      `create: overhead p50 ${create.overheadMs.p50} ms, p99 ${create.overheadMs.p99} ms (CRI p50 ${create.criMs.p50} ms, agent CPU p99 ${create.cpuMs.p99} ms)`,
    );
    console.log(`steady: overhead p50 ${steady.overheadMs.p50} ms, p99 ${steady.overheadMs.p99} ms`);
    console.log(`target p99 <= ${TargetP99Ms} ms: ${report.meetsTarget ? 'met' : 'NOT met'}; wrote ${out}`);
  } finally {
    await cleanup();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exit(1);
});
