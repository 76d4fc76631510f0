// The agent benchmark; what it measures and its options: USAGE in bench/args.ts. Its files live in
// the node's shared directory, which \`kubelet-harness cleanup\` removes with the node (testkit's
// NodeContainer labels the node's volumes too).
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { get as httpsGet } from 'node:https';
import { createServer } from 'node:net';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { realClock } from '@kh/apimachinery';
import { CriClient } from '@kh/cri-api';
import { createApiServer } from '@kh/fake-apiserver';
import { benchArgs, ensureImages, NodeContainer, nodeImageName } from '@kh/testkit';
import { CoreV1Api } from '@kubernetes/client-node';
import { loadKubeConfig } from '../src/api/node_api.js';
import { cgroupRootForKubepods } from '../src/cm/cgroup_name.js';
import { KubePodListWatch } from '../src/podconfig/apiserver_source.js';
import { type PodStartupList, PREPARE_STEPS } from '../src/pods/startup_tracker.js';
import { agentMallocEnv } from '../src/util/malloc_env.js';
import { agentBenchArgs, OPTIONS, USAGE } from './args.js';
import { resourceCollectorPercentile } from './cpu.js';
import { summarizeHeapSnapshot } from './heap_summary.js';
import { type DensityMemory, densityMemory, mib, type ProcessMemory, processMemory } from './memory.js';
import { PodStarts } from './pod_starts.js';
import { BENCH_STAGES, podStageRows } from './startup_stages.js';

const here = dirname(fileURLToPath(import.meta.url));
const {
  pods: PODS,
  rounds: ROUNDS,
  densityPods: DENSITY_PODS,
  rssPods: RSS_PODS,
  settleSeconds: SETTLE_S,
  label: LABEL,
  agentNodeOptions: AGENT_NODE_OPTIONS,
  agentRuntimeOptions: AGENT_RUNTIME_OPTIONS,
  agentConfig: AGENT_CONFIG,
  agentEnv: AGENT_ENV,
  heapSnapshot: HEAP_SNAPSHOT,
  nodeRelease: NODE_RELEASE,
} = await benchArgs({ prog: 'node-agent bench', usage: USAGE, options: OPTIONS }, agentBenchArgs);
const NODE_IMAGE = NODE_RELEASE ? nodeImageName(NODE_RELEASE) : 'node';
// The agent's CPU while its pods start, judged as upstream's density test judges the kubelet's
// (test/e2e_node/resource_collector.go): each figure is the rate over one housekeeping interval
// of the standalone cAdvisor it reads (1 s); the 500 ms samples beside it show the bursts finer.
const CADVISOR_HOUSEKEEPING_MS = 1000;
const CPU_SAMPLE_MS = 500;
const log = (s: string) => process.stderr.write(`[bench] ${s}\n`);

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? Number.NaN) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length))) - 1] ?? Number.NaN;
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

const load = () => loadavg().map((l) => Math.round(l * 100) / 100);

/** CPU time (user + system) a process used so far, in ms. */
function cpuMs(pid: number): number {
  // Fields 14 and 15 of /proc/<pid>/stat, after the parenthesised command name.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // USER_HZ is 100 on Linux
}

/**
 * Issue 32's targets. The CPU ones are upstream's density test's for the kubelet while 10 pods
 * start one after another beside 50 running ("create a sequence of pods": 0.30/0.50 cores, p50/
 * p95; a batch of 10 at once is held to 0.10/0.20), applied here to 30 pods at once; the memory
 * targets are RssAnon, its definition (bench/memory.ts).
 */
const TARGETS = {
  overheadP99Ms: 300,
  agentCpuP50Cores: 0.3,
  agentCpuP95Cores: 0.5,
  densityRssMiB: 60,
  rssMiB: 100,
  /** The Kubernetes pod start-up SLO. */
  podStartupP99Ms: 5_000,
};

interface Target {
  figure: number;
  target: number;
  unit: string;
  met: boolean;
}

const atMost = (figure: number, target: number, unit: string): Target => ({
  figure: Math.round(figure * 100) / 100,
  target,
  unit,
  met: figure <= target,
});

/** The figures against the targets, for people; the JSON has every number. */
function summary(targets: Record<string, Target | string>): string[] {
  return Object.entries(targets).flatMap(([name, t]) =>
    typeof t === 'string'
      ? []
      : [`${name}: ${t.figure} ${t.unit} (target <= ${t.target}: ${t.met ? 'met' : 'NOT met'})`],
  );
}

/**
 * The agent's CPU use in cores over each `intervalMs` from now until the returned function is
 * called (a last, shorter interval counts if it is at least half as long).
 */
function sampleCores(pid: number, intervalMs: number): () => number[] {
  const samples: number[] = [];
  let last = { wall: performance.now(), cpu: cpuMs(pid) };
  const take = () => {
    const now = { wall: performance.now(), cpu: cpuMs(pid) };
    samples.push(Math.round(((now.cpu - last.cpu) / (now.wall - last.wall)) * 100) / 100);
    last = now;
  };
  const timer = setInterval(take, intervalMs);
  return () => {
    clearInterval(timer);
    if (performance.now() - last.wall >= intervalMs / 2) take();
    return samples;
  };
}

/** Busy CPU time of the whole machine so far (all cores, /proc/stat), in ms. */
function machineBusyMs(): number {
  const [, ...ticks] = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/);
  // user nice system idle iowait irq softirq steal: everything but idle and iowait is work.
  const [user, nice, system, , , irq, softirq, steal] = ticks.map(Number);
  return (
    (((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0)) * 1000) / 100
  );
}

/**
 * Who used the CPU while a burst of pods started: the agent, this process (the fake apiserver,
 * the watch and the bare CRI client), and the rest of the machine, which during the benchmark is
 * the runtime: containerd, its shims, runc and the CNI plugins. On two cores that are busy for the
 * whole burst, start-up is bounded by total CPU work, so this shows what the agent's overhead is
 * made of.
 */
function cpuWindow(agentPid: number | undefined) {
  const at = () => ({
    wall: performance.now(),
    machine: machineBusyMs(),
    agent: agentPid ? cpuMs(agentPid) : 0,
    bench: (process.cpuUsage().user + process.cpuUsage().system) / 1000,
  });
  const start = at();
  return () => {
    const end = at();
    const d = (k: keyof typeof start) => Math.round(end[k] - start[k]);
    return {
      wallMs: d('wall'),
      machineMs: d('machine'),
      agentMs: d('agent'),
      benchProcessMs: d('bench'),
      runtimeAndRestMs: d('machine') - d('agent') - d('bench'),
    };
  };
}

/**
 * Asks the agent over IPC: 'memory' (process, V8 heap and code statistics, per heap space),
 * 'api-requests', or `heap-snapshot <file>` (answers when written).
 */
function askAgent<T>(agent: ChildProcess, what: string, timeoutMs = 5_000): Promise<T | undefined> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(undefined), timeoutMs);
    agent.once('message', (m) => {
      clearTimeout(timer);
      resolve(m as T);
    });
    agent.send(what);
  });
}

/** The floor in this run: an idle `node` (with the agent's Node options), read after a second. */
async function idleNodeMemory(): Promise<{ rssAnonMib: number; vmRssMib: number }> {
  const idle = spawn(process.execPath, [...AGENT_NODE_OPTIONS, '-e', 'setInterval(() => {}, 1e3)'], {
    stdio: 'ignore',
  });
  try {
    await new Promise((r) => setTimeout(r, 1_000));
    const m = processMemory(idle.pid as number);
    return { rssAnonMib: mib(m.rssAnonBytes), vmRssMib: mib(m.vmRssBytes) };
  } finally {
    idle.kill();
  }
}

/** kubelet_runtime_operations_total by operation, from the agent's /metrics. */
/** GET a path of the agent's kubelet server (its self-signed serving certificate, on loopback). */
function agentGet(port: number, path: string): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    httpsGet(`https://127.0.0.1:${port}${path}`, { rejectUnauthorized: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        body += d;
      });
      res.on('end', () => resolve(body));
    }).on('error', reject);
  });
}

/**
 * From the agent's /metrics: its CRI operations by type, and its relists' count and summed
 * duration and interval (the PLEG's histograms), as `pleg_*` keys.
 */
async function agentMetrics(
  port: number,
): Promise<{ cri: Record<string, number>; pleg: Record<string, number> }> {
  const text = await agentGet(port, '/metrics');
  const cri: Record<string, number> = {};
  for (const m of text.matchAll(/^kubelet_runtime_operations_total\{operation_type="([^"]+)"\} (\d+)/gm))
    cri[m[1] ?? ''] = Number(m[2]);
  const pleg: Record<string, number> = {};
  for (const m of text.matchAll(/^kubelet_pleg_relist_(duration|interval)_seconds_(sum|count) (\S+)/gm))
    pleg[`${m[1]}_${m[2]}`] = Number(m[3]);
  return { cri, pleg };
}

/** The relists between two readings: how many, and their mean duration and interval in ms. */
function relists(after: Record<string, number>, before: Record<string, number>) {
  const d = (k: string) => (after[k] ?? 0) - (before[k] ?? 0);
  const mean = (sum: string, count: string) =>
    d(count) > 0 ? Math.round((d(sum) / d(count)) * 1000) : undefined;
  return {
    relists: d('duration_count'),
    meanDurationMs: mean('duration_sum', 'duration_count'),
    meanIntervalMs: mean('interval_sum', 'interval_count'),
  };
}

/** after - before, per key, leaving out zeros. */
function delta(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  return Object.fromEntries(
    Object.entries(after)
      .map(([k, v]) => [k, v - (before[k] ?? 0)] as const)
      .filter(([, v]) => v !== 0)
      .sort(([a], [b]) => a.localeCompare(b)),
  );
}

/** One bare pod's three calls, ms. */
interface BareCalls {
  sandbox: number;
  create: number;
  start: number;
}

/** Bare CRI: sandbox + container + start per pod, all pods at once. */
async function bareCri(
  endpoint: string,
  image: string,
  n: number,
  cgroupParent: string,
): Promise<{ times: number[]; calls: BareCalls[]; cpu: ReturnType<ReturnType<typeof cpuWindow>> }> {
  const cri = await CriClient.connect(endpoint, { timeoutMs: 120_000 });
  try {
    const window = cpuWindow(undefined);
    const calls: BareCalls[] = [];
    const times = await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const start = performance.now();
        const config = {
          metadata: {
            name: `bare-${i}`,
            namespace: 'bench-bare',
            uid: `bare-${i}-${Date.now()}`,
            attempt: 0,
          },
          linux: { cgroupParent },
          logDirectory: '',
        };
        const { podSandboxId } = await cri.runPodSandbox({ config });
        const sandboxReady = performance.now();
        const { containerId } = await cri.createContainer({
          podSandboxId,
          config: { metadata: { name: 'main' }, image: { image }, command: ['sleep', '3600'] },
          sandboxConfig: config,
        });
        const created = performance.now();
        await cri.startContainer({ containerId });
        const end = performance.now();
        calls.push({ sandbox: sandboxReady - start, create: created - sandboxReady, start: end - created });
        return end - start;
      }),
    );
    const cpu = window();
    const { items } = await cri.listPodSandbox({ filter: {} });
    for (const sb of items.filter((s) => s.metadata?.namespace === 'bench-bare')) {
      await cri.stopPodSandbox({ podSandboxId: sb.id });
      await cri.removePodSandbox({ podSandboxId: sb.id });
    }
    return { times, calls, cpu };
  } finally {
    cri.close();
  }
}

/** What to undo on the way out, in the order it was set up; run once, by the first exit path. */
const undo: (() => unknown)[] = [];
let tornDown: Promise<void> | undefined;
function teardown(): Promise<void> {
  tornDown ??= (async () => {
    for (const step of undo.reverse())
      await Promise.resolve()
        .then(step)
        .catch((e: unknown) => log(`teardown: ${(e as Error).message ?? e}`));
  })();
  return tornDown;
}

/** Every way out waits for the same teardown, so an exit cannot cut a container's removal short. */
function fail(err: unknown): void {
  process.stderr.write(`bench failed: ${(err as Error)?.stack ?? err}\n`);
  void teardown().then(() => process.exit(1));
}

/** Stops the agent, waking it first in case a bare CRI round had it stopped. */
async function stopAgent(agent: ChildProcess): Promise<void> {
  if (agent.exitCode !== null || agent.signalCode !== null) return;
  const exited = new Promise((r) => agent.once('exit', r));
  agent.kill('SIGCONT');
  agent.kill('SIGTERM');
  const timer = setTimeout(() => agent.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

async function main(): Promise<void> {
  const refs = await ensureImages(['pause', 'busybox', NODE_IMAGE], { progress: log });
  const busybox = `docker.io/${refs.busybox}`;
  log(`starting a containerd node (${refs[NODE_IMAGE]})`);
  const node = await new NodeContainer(refs[NODE_IMAGE])
    .withRuntime('containerd')
    .withPauseImage(refs.pause)
    .withImages(refs.busybox)
    .withLabels({ 'kh.bench': 'node-agent' })
    .start();
  undo.push(() => node.stop());
  const server = await createApiServer({
    port: 0,
    tls: true,
    tokens: { t: 'admin' },
    scheduler: false,
    nodeLifecycle: false,
  });
  undo.push(() => server.close());
  // In the node's shared directory: it goes with the node, or with `cleanup` if this is killed.
  const dir = join(node.sharedDirOnHost, 'bench');
  mkdirSync(dir);
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(kubeconfig, server.kubeconfig());
  const kc = loadKubeConfig(kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  const starts = new PodStarts(new KubePodListWatch(kc, 'bench-node'), realClock);
  undo.push(() => starts.stop());
  const loadAt: Record<string, number[]> = { start: load() };

  const kubeletPort = await freePort();
  const spec = {
    flags: [
      `--kubeconfig=${kubeconfig}`,
      `--container-runtime-endpoint=${node.criEndpointOnHost}`,
      `--root-dir=${join(dir, 'root')}`,
      `--cgroup-root=${cgroupRootForKubepods(node.cgroupParent)}`,
      '--hostname-override=bench-node',
      '--node-ip=127.0.0.1',
      '--address=127.0.0.1',
      `--port=${kubeletPort}`,
      '--healthz-port=0',
      '--serialize-image-pulls=false',
    ],
    config: {
      podLogsDir: join(node.sharedDirOnHost, 'logs'),
      // The fake apiserver has no TokenReview: the bench reads /metrics anonymously, on loopback.
      authentication: { anonymous: { enabled: true }, webhook: { enabled: false } },
      authorization: { mode: 'AlwaysAllow' as const },
      ...AGENT_CONFIG,
    },
    runtimeManager: {
      podsDir: join(node.sharedDirOnHost, 'pods'),
      pathMapping: { agentRoot: node.sharedDirOnHost, runtimeRoot: node.sharedDirInNode },
      podSandboxImage: refs.pause,
      ...AGENT_RUNTIME_OPTIONS,
    },
  };
  const agent = spawn(
    process.execPath,
    [...AGENT_NODE_OPTIONS, join(here, 'bench-agent.mjs'), JSON.stringify(spec)],
    // glibc's mmap threshold as the command's launcher sets it, which cannot exec with the IPC channel.
    {
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      env: { ...(agentMallocEnv(process.env) ?? process.env), ...AGENT_ENV },
    },
  );
  undo.push(() => stopAgent(agent));
  const agentLog: string[] = [];
  agent.stderr?.on('data', (d) => agentLog.push(String(d)));
  log(`agent pid ${agent.pid}; waiting for the node to be Ready`);
  for (let i = 0; ; i++) {
    const n = await core.readNode({ name: 'bench-node' }).catch(() => undefined);
    if (n?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') && starts.ready())
      break;
    if (i > 300) throw new Error(`node never became Ready:\n${agentLog.join('').slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const pid = agent.pid as number;
  const deletePods = async (prefix: string, n: number) => {
    await Promise.all(
      Array.from({ length: n }, (_, i) =>
        core.deleteNamespacedPod({ namespace: 'default', name: `${prefix}${i}` }),
      ),
    );
    for (let i = 0; i < 600; i++) {
      const { items } = await core.listNamespacedPod({ namespace: 'default' });
      if (items.length === 0) break;
      await new Promise((res) => setTimeout(res, 200));
    }
  };

  const runPods = async (prefix: string, n: number) => {
    const names = Array.from({ length: n }, (_, i) => `${prefix}${i}`);
    const createdAt = new Map<string, number>();
    const window = cpuWindow(pid);
    const cores = sampleCores(pid, CPU_SAMPLE_MS);
    const coresPerHousekeeping = sampleCores(pid, CADVISOR_HOUSEKEEPING_MS);
    await Promise.all(
      names.map(async (name) => {
        createdAt.set(name, performance.now());
        await core.createNamespacedPod({
          namespace: 'default',
          body: {
            metadata: { name },
            spec: {
              nodeName: 'bench-node',
              terminationGracePeriodSeconds: 1,
              containers: [
                { name: 'main', image: busybox, imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] },
              ],
            },
          },
        });
      }),
    );
    const startedAt = await starts.started(names, AbortSignal.timeout(600_000)).catch((err: unknown) => {
      throw new Error(`only ${starts.count(names)}/${n} pods started`, { cause: err });
    });
    // Upstream's memory sample: the latest one when the last pod is seen running.
    const memory = processMemory(pid);
    const cpu = window();
    const unix = (m: ReadonlyMap<string, number>) =>
      new Map([...m].map(([name, t]) => [name, performance.timeOrigin + t]));
    const { items } = JSON.parse(
      await agentGet(kubeletPort, '/debug/startup?namespace=default'),
    ) as PodStartupList;
    return {
      memory,
      latencies: names.map((name) => (startedAt.get(name) ?? Number.NaN) - (createdAt.get(name) ?? 0)),
      stages: podStageRows(items, unix(createdAt), unix(startedAt)),
      cpu,
      cores: cores(),
      coresPerHousekeeping: coresPerHousekeeping(),
    };
  };

  // The agent's CPU time per stage: unlike latency, it does not depend on what else runs.
  const cpuAt = [cpuMs(pid)];
  const cpuSince = () => {
    cpuAt.push(cpuMs(pid));
    return Math.round((cpuAt.at(-1) ?? 0) - (cpuAt.at(-2) ?? 0));
  };
  const agentCpuMs: Record<string, number | string> = {
    note: 'agent user+system CPU time per stage (ms)',
    startup: cpuAt[0] ?? 0,
  };
  // What the agent asked of the runtime and of the API server in each stage.
  const calls: Record<
    string,
    { cri: Record<string, number>; api: Record<string, number>; pleg: ReturnType<typeof relists> }
  > = {};
  const snapshotCalls = async () => ({
    ...(await agentMetrics(kubeletPort)),
    api: (await askAgent<Record<string, number>>(agent, 'api-requests')) ?? {},
  });
  let callsBefore = await snapshotCalls();
  const countCalls = async (stage: string) => {
    const now = await snapshotCalls();
    calls[stage] = {
      cri: delta(now.cri, callsBefore.cri),
      api: delta(now.api, callsBefore.api),
      pleg: relists(now.pleg, callsBefore.pleg),
    };
    callsBefore = now;
  };

  // Bare CRI and the agent take turns, each pair seconds apart, so both halves of a pair see
  // the same load on this shared machine. The agent is stopped (SIGSTOP) while bare CRI runs:
  // it neither competes for the CPU nor sees those pods, which are gone before it resumes.
  type CpuWindow = ReturnType<ReturnType<typeof cpuWindow>>;
  const rounds: {
    bare: number[];
    bareCalls: BareCalls[];
    agent: number[];
    stages: ReturnType<typeof podStageRows>;
    bareCpu: CpuWindow;
    agentCpu: CpuWindow;
    cores: number[];
    coresPerHousekeeping: number[];
  }[] = [];
  for (let r = 1; r <= ROUNDS; r++) {
    log(`round ${r}/${ROUNDS}: bare CRI, ${PODS} pods at once`);
    agent.kill('SIGSTOP');
    const {
      times: bare,
      calls: bareCalls,
      cpu: bareCpu,
    } = await bareCri(node.criEndpointOnHost, busybox, PODS, node.cgroupParent).finally(() =>
      agent.kill('SIGCONT'),
    );
    loadAt[`bareCri${r}`] = load();
    cpuSince();
    await countCalls(`bareCri${r}`);
    log(`round ${r}/${ROUNDS}: agent, ${PODS} pods at once`);
    const prefix = `start-${r}-`;
    const { latencies, stages, cpu, cores, coresPerHousekeeping } = await runPods(prefix, PODS);
    agentCpuMs[`startPods${r}`] = cpuSince();
    await countCalls(`startPods${r}`);
    loadAt[`agentPods${r}`] = load();
    rounds.push({
      bare,
      bareCalls,
      agent: latencies,
      stages,
      bareCpu,
      agentCpu: cpu,
      cores,
      coresPerHousekeeping,
    });
    await deletePods(prefix, PODS);
    agentCpuMs[`deletePods${r}`] = cpuSince();
    await countCalls(`deletePods${r}`);
  }
  const latencies = rounds.flatMap((r) => r.agent);
  const bare = rounds.flatMap((r) => r.bare);
  const cores = rounds.flatMap((r) => r.cores);
  const coresPerHousekeeping = rounds.flatMap((r) => r.coresPerHousekeeping);
  const stageRows = rounds.flatMap((r) => r.stages.rows);

  // Memory with n pods running: upstream's sample when the last one started, then each second
  // for SETTLE_S (several status, lease and PLEG periods with every pod up).
  const densityStep = async (prefix: string, n: number): Promise<DensityMemory> => {
    log(`memory: ${n} pods`);
    const { memory } = await runPods(prefix, n);
    agentCpuMs[`start${n}Pods`] = cpuSince();
    await countCalls(`start${n}Pods`);
    const settle: ProcessMemory[] = [];
    for (let s = 0; s < SETTLE_S; s++) {
      await new Promise((r) => setTimeout(r, 1_000));
      settle.push(processMemory(pid));
    }
    agentCpuMs[`settled${n}PodsPerSecond`] = Math.round(cpuSince() / SETTLE_S);
    await countCalls(`settle${n}Pods${SETTLE_S}s`);
    return densityMemory(n, memory, settle);
  };
  const density = DENSITY_PODS > 0 ? await densityStep('density-', DENSITY_PODS) : undefined;
  if (density) {
    await deletePods('density-', DENSITY_PODS);
    cpuSince();
    await countCalls(`delete${DENSITY_PODS}Pods`);
  }
  const maxPods = RSS_PODS > 0 ? await densityStep('rss-', RSS_PODS) : undefined;
  const agentMemory = await askAgent(agent, 'memory');
  const floor = await idleNodeMemory();
  let heap: ReturnType<typeof summarizeHeapSnapshot> | undefined;
  if (HEAP_SNAPSHOT) {
    log(`writing the agent's heap snapshot to ${HEAP_SNAPSHOT}`);
    if (await askAgent(agent, `heap-snapshot ${HEAP_SNAPSHOT}`, 300_000))
      heap = summarizeHeapSnapshot(readFileSync(HEAP_SNAPSHOT, 'utf8'));
  }
  loadAt.end = load();

  const overhead = median(rounds.map((r) => percentile(r.agent, 99) - percentile(r.bare, 99)));
  const targets = {
    note: `issue 32's targets, each figure from this run: the overhead is the median over rounds of agent p99 - bare CRI p99 (${PODS} pods); CPU is the agent's while its ${PODS} pods started, over all rounds, as upstream's density test reads the kubelet's: cores per ${CADVISOR_HOUSEKEEPING_MS} ms (cAdvisor's housekeeping interval), percentiles as resource_collector.go's (index int(n * q) - 1; cpuPer500ms has the finer samples); memory is upstream's density-test RSS, the agent's RssAnon (anonymous resident memory, what cAdvisor's RSS of the kubelet's cgroup counts) when the last of ${DENSITY_PODS} and of ${RSS_PODS} pods was seen running (MiB = 2^20 bytes)`,
    overheadP99: atMost(overhead, TARGETS.overheadP99Ms, 'ms'),
    agentCpuP50: atMost(
      resourceCollectorPercentile(coresPerHousekeeping, 0.5),
      TARGETS.agentCpuP50Cores,
      'cores',
    ),
    agentCpuP95: atMost(
      resourceCollectorPercentile(coresPerHousekeeping, 0.95),
      TARGETS.agentCpuP95Cores,
      'cores',
    ),
    ...(density ? { rssDensityPods: atMost(density.rssAnonMib, TARGETS.densityRssMiB, 'MiB') } : {}),
    ...(maxPods ? { rssMaxPods: atMost(maxPods.rssAnonMib, TARGETS.rssMiB, 'MiB') } : {}),
    podStartupP99: atMost(percentile(latencies, 99), TARGETS.podStartupP99Ms, 'ms'),
  };
  const result = {
    label: LABEL,
    at: new Date().toISOString(),
    runtime: (await node.criVersion()).runtimeVersion,
    agentNodeOptions: AGENT_NODE_OPTIONS,
    agentEnv: AGENT_ENV,
    agentRuntimeOptions: AGENT_RUNTIME_OPTIONS,
    agentConfig: AGENT_CONFIG,
    targets,
    cpuPer500ms: {
      note: "the agent's CPU in cores per 500 ms sample while its pods started, over all rounds (the figure judged before 2026-12-02)",
      p50: percentile(cores, 50),
      p95: percentile(cores, 95),
    },
    loadAverage: { note: '1/5/15 min load average at each stage (2 cores)', ...loadAt },
    pods: PODS,
    note: `p50/p99 over all ${ROUNDS} rounds; the overhead is the median over rounds of agent p99 - bare CRI p99`,
    podStartup: {
      note: 'client create request to all containers started, observed via list/watch (ms)',
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
      maxMs: Math.max(...latencies),
    },
    bareCri: {
      note: 'RunPodSandbox + CreateContainer + StartContainer per pod, all pods at once (ms)',
      p50Ms: percentile(bare, 50),
      p99Ms: percentile(bare, 99),
    },
    agentOverheadP99Ms: overhead,
    startupStages: {
      note: `where the agent's pod start-ups went, stage by stage (the agent's GET /debug/startup, as the harness's breakdown; observed: status accepted -> the benchmark's watch saw it), p50/p99 over all rounds' pods, ms; toStarted: creation to the last StartContainer (the stages before status); bare: the same three CRI calls without the agent`,
      pods: stageRows.length,
      incomplete: rounds.reduce((a, r) => a + r.stages.incomplete, 0),
      stages: BENCH_STAGES.map((stage, i) => {
        const ms = stageRows.map((row) => row[i] ?? Number.NaN);
        return { stage, p50Ms: percentile(ms, 50), p99Ms: percentile(ms, 99) };
      }),
      // Where `prepare` went (the agent's steps before RunPodSandbox).
      prepare: PREPARE_STEPS.map((step, i) => {
        const ms = rounds.flatMap((r) => r.stages.prepareRows.map((row) => row[i] ?? Number.NaN));
        return { step, p50Ms: percentile(ms, 50), p99Ms: percentile(ms, 99) };
      }),
      // Creation to the last StartContainer: what bare CRI's figure covers, plus the API and admission path.
      toStarted: (() => {
        const upTo = BENCH_STAGES.indexOf('start');
        const ms = stageRows.map((row) => row.slice(0, upTo + 1).reduce((a, b) => a + b, 0));
        return { p50Ms: percentile(ms, 50), p99Ms: percentile(ms, 99) };
      })(),
      bare: (['sandbox', 'create', 'start'] as const).map((stage) => {
        const ms = rounds.flatMap((r) => r.bareCalls.map((c) => c[stage]));
        return { stage, p50Ms: percentile(ms, 50), p99Ms: percentile(ms, 99) };
      }),
    },
    observer: {
      note: 'list and watch requests of the bench’s pod observer: one list and one watch unless a watch was resumed (watches) or relisted after 410 (lists); a pod seen on a resume or relist was timed then',
      ...starts.requests,
    },
    rounds: rounds.map((r) => ({
      agentP50Ms: percentile(r.agent, 50),
      agentP99Ms: percentile(r.agent, 99),
      bareP50Ms: percentile(r.bare, 50),
      bareP99Ms: percentile(r.bare, 99),
      overheadP99Ms: percentile(r.agent, 99) - percentile(r.bare, 99),
      agentCores: r.cores,
      agentCoresPerHousekeeping: r.coresPerHousekeeping,
    })),
    cpuWhileStarting: {
      note: 'CPU ms used from the first request to the last pod started, per round: the whole machine (2 cores), the agent, this process (fake apiserver, watch, bare CRI client), and the rest (the runtime)',
      rounds: rounds.map((r) => ({ bare: r.bareCpu, agent: r.agentCpu })),
    },
    agentCpuMs,
    agentCalls: {
      note: 'CRI operations (agent /metrics), API requests the agent sent, and its PLEG relists (count, mean duration and interval, ms, from its histograms), per stage',
      ...calls,
    },
    memory: {
      note: 'RssAnon (upstream: cAdvisor RSS) when the last pod was seen running, then each second; VmRSS adds the file-backed pages (the node binary); floor is an idle node process (node -e setInterval) with the same Node options',
      floor,
      densityPods: density,
      maxPods,
      agent: agentMemory,
      ...(heap ? { heapSnapshot: heap } : {}),
    },
  };
  const dirOut = join(here, '..', '..', '.reports', 'bench');
  mkdirSync(dirOut, { recursive: true });
  const json = `${JSON.stringify(result, null, 2)}\n`;
  const out = join(dirOut, `${LABEL}-${result.at.replace(/[:.]/g, '-')}.json`);
  writeFileSync(out, json);
  writeFileSync(join(dirOut, 'latest.json'), json);
  process.stdout.write(json);
  log(`written to ${out} and latest.json`);
  for (const line of summary(targets)) log(line);
}

// Errors during the teardown are reported too, without cutting it short.
process.on('uncaughtException', fail);
process.on('unhandledRejection', fail);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
  process.once(signal, () => fail(new Error(signal)));
// Exit explicitly: keep-alive sockets of the Docker and API clients would hold the process open.
main()
  .then(teardown)
  .then(() => process.exit(0), fail);
