// Pod start-up latency as Kubernetes' SLO measures it, on real containerd: N pods created at
// once, each timed from its creation to all its containers started as observed through a watch;
// the same pods started with bare CRI calls give the runtime's own share. The two alternate for
// a few rounds. Then the agent's RSS with maxPods (110) pods running, once it settled. Results
// go to .reports/bench/.
//   npm run bench -w @kh/node-agent [-- --pods 30 --rounds 3 --rss-pods 110 --settle-seconds 30 --label after
//                                       --agent-node-options "--cpu-prof --cpu-prof-dir=/tmp/prof"
//                                       --agent-runtime-options '{"podStatusCacheTtlMs":2000}']
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { get as httpsGet } from 'node:https';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CriClient } from '@kh/cri-api';
import { createApiServer } from '@kh/fake-apiserver';
import { ensureImages, NodeContainer } from '@kh/testkit';
import { CoreV1Api, type V1Pod, Watch } from '@kubernetes/client-node';
import { loadKubeConfig } from '../src/api/node_api.js';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const stringArg = (name: string, dflt: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? (args[i + 1] ?? dflt) : dflt;
};
const arg = (name: string, dflt: number) => Number(stringArg(name, String(dflt)));
const PODS = arg('pods', 30);
const ROUNDS = arg('rounds', 3);
const RSS_PODS = arg('rss-pods', 110);
// RSS right after a burst still holds the burst's garbage; what a node pays for is the steady state.
const SETTLE_S = arg('settle-seconds', 30);
const LABEL = stringArg('label', 'run');
const AGENT_NODE_OPTIONS = stringArg('agent-node-options', '').split(' ').filter(Boolean);
// Runtime manager options to try on the agent (JSON), over the ones the command sets.
const AGENT_RUNTIME_OPTIONS = JSON.parse(stringArg('agent-runtime-options', '{}')) as Record<string, unknown>;
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

/** VmRSS (now) or VmHWM (peak) of a process, in bytes. */
function procStatusBytes(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const kb = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) * 1024;
}

const mib = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;
const load = () => loadavg().map((l) => Math.round(l * 100) / 100);

/** CPU time (user + system) a process used so far, in ms. */
function cpuMs(pid: number): number {
  // Fields 14 and 15 of /proc/<pid>/stat, after the parenthesised command name.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // USER_HZ is 100 on Linux
}

const P99_TARGET_MS = 5_000;
const RSS_TARGET_BYTES = 150_000_000;
const OVERHEAD_AIM_MS = 300;

/** The result against the targets, for people; the JSON has every number. */
function summary(r: {
  podStartup: { p50Ms: number; p99Ms: number };
  bareCri: { p99Ms: number };
  agentOverheadP99Ms: number;
  rss: { bytes: number; mib: number; peakMib: number; pods: number };
  cpuWhileStarting: { rounds: { agent: ReturnType<ReturnType<typeof cpuWindow>> }[] };
  targets: Record<'podStartupP99' | 'rss' | 'overheadP99', { met: boolean }>;
}): string[] {
  const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  const verdict = (met: boolean) => (met ? 'met' : 'NOT met');
  const cpu = (k: 'agentMs' | 'benchProcessMs' | 'runtimeAndRestMs') =>
    s(median(r.cpuWhileStarting.rounds.map((x) => x.agent[k])));
  return [
    `pod start-up p50 ${s(r.podStartup.p50Ms)}, p99 ${s(r.podStartup.p99Ms)} (target <= 5 s: ${verdict(r.targets.podStartupP99.met)})`,
    `agent overhead over bare CRI (p99 ${s(r.bareCri.p99Ms)}), median of rounds: ${s(r.agentOverheadP99Ms)} (aim <= 0.3 s: ${verdict(r.targets.overheadP99.met)})`,
    `RSS with ${r.rss.pods} pods: ${r.rss.mib} MiB = ${(r.rss.bytes / 1e6).toFixed(1)} MB, peak ${r.rss.peakMib} MiB (target <= 150 MB: ${verdict(r.targets.rss.met)})`,
    `CPU per burst of pods (median): agent ${cpu('agentMs')}, this process with the fake apiserver ${cpu('benchProcessMs')}, runtime ${cpu('runtimeAndRestMs')}`,
  ];
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

/** Asks the agent over IPC: 'memory' (V8 heap, external, per heap space) or 'api-requests'. */
function askAgent<T>(agent: ChildProcess, what: 'memory' | 'api-requests'): Promise<T | undefined> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(undefined), 5_000);
    agent.once('message', (m) => {
      clearTimeout(timer);
      resolve(m as T);
    });
    agent.send(what);
  });
}

/** kubelet_runtime_operations_total by operation, from the agent's /metrics. */
async function criOperations(port: number): Promise<Record<string, number>> {
  const text = await new Promise<string>((resolve, reject) => {
    // The agent's self-signed serving certificate, on loopback.
    httpsGet(`https://127.0.0.1:${port}/metrics`, { rejectUnauthorized: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        body += d;
      });
      res.on('end', () => resolve(body));
    }).on('error', reject);
  });
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^kubelet_runtime_operations_total\{operation_type="([^"]+)"\} (\d+)/gm))
    out[m[1] ?? ''] = Number(m[2]);
  return out;
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

/** Bare CRI: sandbox + container + start per pod, all pods at once. */
async function bareCri(
  endpoint: string,
  image: string,
  n: number,
  cgroupParent: string,
): Promise<{ times: number[]; cpu: ReturnType<ReturnType<typeof cpuWindow>> }> {
  const cri = await CriClient.connect(endpoint, { timeoutMs: 120_000 });
  try {
    const window = cpuWindow(undefined);
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
        const { containerId } = await cri.createContainer({
          podSandboxId,
          config: { metadata: { name: 'main' }, image: { image }, command: ['sleep', '3600'] },
          sandboxConfig: config,
        });
        await cri.startContainer({ containerId });
        return performance.now() - start;
      }),
    );
    const cpu = window();
    const { items } = await cri.listPodSandbox({ filter: {} });
    for (const sb of items.filter((s) => s.metadata?.namespace === 'bench-bare')) {
      await cri.stopPodSandbox({ podSandboxId: sb.id });
      await cri.removePodSandbox({ podSandboxId: sb.id });
    }
    return { times, cpu };
  } finally {
    cri.close();
  }
}

function podStarted(p: V1Pod): boolean {
  const cs = p.status?.containerStatuses ?? [];
  return cs.length > 0 && cs.every((c) => c.started === true && c.state?.running !== undefined);
}

async function main(): Promise<void> {
  const refs = await ensureImages(['pause', 'busybox', 'node'], { progress: log });
  const busybox = `docker.io/${refs.busybox}`;
  log('starting a containerd node');
  const node = await new NodeContainer(refs.node)
    .withRuntime('containerd')
    .withPauseImage(refs.pause)
    .withImages(refs.busybox)
    .start();
  const server = await createApiServer({
    port: 0,
    tls: true,
    tokens: { t: 'admin' },
    scheduler: false,
    nodeLifecycle: false,
  });
  const dir = mkdtempSync(join(tmpdir(), 'kh-bench-'));
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(kubeconfig, server.kubeconfig());
  const kc = loadKubeConfig(kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  let agent: ChildProcess | undefined;
  // An error thrown outside this promise chain (a stream emitting one) must not leak the node
  // container or the agent either.
  process.once('uncaughtException', (err) => {
    process.stderr.write(`bench failed: ${err.stack ?? err}\n`);
    if (agent && agent.exitCode === null) {
      agent.kill('SIGCONT');
      agent.kill('SIGTERM');
    }
    void Promise.allSettled([server.close(), node.stop()]).then(() => process.exit(1));
  });
  const loadAt: Record<string, number[]> = { start: load() };
  try {
    const kubeletPort = await freePort();
    const spec = {
      flags: [
        `--kubeconfig=${kubeconfig}`,
        `--container-runtime-endpoint=${node.criEndpointOnHost}`,
        `--root-dir=${join(dir, 'root')}`,
        `--cgroup-root=${node.cgroupParent}`,
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
      },
      runtimeManager: {
        podsDir: join(node.sharedDirOnHost, 'pods'),
        pathMapping: { agentRoot: node.sharedDirOnHost, runtimeRoot: node.sharedDirInNode },
        podSandboxImage: refs.pause,
        ...AGENT_RUNTIME_OPTIONS,
      },
    };
    agent = spawn(
      process.execPath,
      [...AGENT_NODE_OPTIONS, join(here, 'bench-agent.mjs'), JSON.stringify(spec)],
      {
        stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      },
    );
    const agentLog: string[] = [];
    agent.stderr?.on('data', (d) => agentLog.push(String(d)));
    log(`agent pid ${agent.pid}; waiting for the node to be Ready`);
    for (let i = 0; ; i++) {
      const n = await core.readNode({ name: 'bench-node' }).catch(() => undefined);
      if (n?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) break;
      if (i > 300) throw new Error(`node never became Ready:\n${agentLog.join('').slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }

    const runPods = async (prefix: string, n: number) => {
      const createdAt = new Map<string, number>();
      const startedAt = new Map<string, number>();
      const all = new Promise<void>((resolve, reject) => {
        new Watch(kc)
          .watch(
            '/api/v1/namespaces/default/pods',
            {},
            (_type, obj: V1Pod) => {
              const name = obj.metadata?.name ?? '';
              if (!name.startsWith(prefix) || startedAt.has(name) || !podStarted(obj)) return;
              startedAt.set(name, performance.now());
              if (startedAt.size === n) resolve();
            },
            (err) => (err ? reject(err) : undefined),
          )
          .then((ctl) => all.finally(() => ctl.abort()), reject);
      });
      await new Promise((r) => setTimeout(r, 200)); // let the watch subscribe
      const window = cpuWindow(agent?.pid);
      await Promise.all(
        Array.from({ length: n }, async (_, i) => {
          const name = `${prefix}${i}`;
          createdAt.set(name, performance.now());
          await core.createNamespacedPod({
            namespace: 'default',
            body: {
              metadata: { name },
              spec: {
                nodeName: 'bench-node',
                terminationGracePeriodSeconds: 1,
                containers: [
                  {
                    name: 'main',
                    image: busybox,
                    imagePullPolicy: 'IfNotPresent',
                    command: ['sleep', '3600'],
                  },
                ],
              },
            },
          });
        }),
      );
      await Promise.race([
        all,
        new Promise((_, reject) =>
          setTimeout(() => reject(new Error(`only ${startedAt.size}/${n} pods started`)), 600_000),
        ),
      ]);
      const cpu = window();
      return { latencies: [...createdAt].map(([name, t]) => (startedAt.get(name) ?? Number.NaN) - t), cpu };
    };

    const pid = agent.pid as number;
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
    const calls: Record<string, { cri: Record<string, number>; api: Record<string, number> }> = {};
    const agentProcess = agent;
    const snapshotCalls = async () => ({
      cri: await criOperations(kubeletPort),
      api: (await askAgent<Record<string, number>>(agentProcess, 'api-requests')) ?? {},
    });
    let callsBefore = await snapshotCalls();
    const countCalls = async (stage: string) => {
      const now = await snapshotCalls();
      calls[stage] = { cri: delta(now.cri, callsBefore.cri), api: delta(now.api, callsBefore.api) };
      callsBefore = now;
    };

    // Bare CRI and the agent take turns, each pair seconds apart, so both halves of a pair see
    // the same load on this shared machine. The agent is stopped (SIGSTOP) while bare CRI runs:
    // it neither competes for the CPU nor sees those pods, which are gone before it resumes.
    type CpuWindow = ReturnType<ReturnType<typeof cpuWindow>>;
    const rounds: { bare: number[]; agent: number[]; bareCpu: CpuWindow; agentCpu: CpuWindow }[] = [];
    for (let r = 1; r <= ROUNDS; r++) {
      log(`round ${r}/${ROUNDS}: bare CRI, ${PODS} pods at once`);
      agentProcess.kill('SIGSTOP');
      const { times: bare, cpu: bareCpu } = await bareCri(
        node.criEndpointOnHost,
        busybox,
        PODS,
        node.cgroupParent,
      ).finally(() => agentProcess.kill('SIGCONT'));
      loadAt[`bareCri${r}`] = load();
      cpuSince();
      await countCalls(`bareCri${r}`);
      log(`round ${r}/${ROUNDS}: agent, ${PODS} pods at once`);
      const prefix = `start-${r}-`;
      const { latencies, cpu } = await runPods(prefix, PODS);
      agentCpuMs[`startPods${r}`] = cpuSince();
      await countCalls(`startPods${r}`);
      loadAt[`agentPods${r}`] = load();
      rounds.push({ bare, agent: latencies, bareCpu, agentCpu: cpu });
      await Promise.all(
        latencies.map((_, i) => core.deleteNamespacedPod({ namespace: 'default', name: `${prefix}${i}` })),
      );
      for (let i = 0; i < 600; i++) {
        const { items } = await core.listNamespacedPod({ namespace: 'default' });
        if (items.length === 0) break;
        await new Promise((res) => setTimeout(res, 200));
      }
      agentCpuMs[`deletePods${r}`] = cpuSince();
      await countCalls(`deletePods${r}`);
    }
    const latencies = rounds.flatMap((r) => r.agent);
    const bare = rounds.flatMap((r) => r.bare);

    log(`RSS: ${RSS_PODS} pods`);
    if (RSS_PODS > 0) await runPods('rss-', RSS_PODS);
    agentCpuMs.startRssPods = cpuSince();
    await countCalls('startRssPods');
    const rssAllStarted = procStatusBytes(pid, 'VmRSS');
    // Several status, lease and PLEG periods with every pod up.
    const samples: number[] = [];
    for (let s = 0; s < SETTLE_S; s++) {
      await new Promise((r) => setTimeout(r, 1_000));
      samples.push(mib(procStatusBytes(pid, 'VmRSS')));
    }
    agentCpuMs.settledPerSecond = Math.round(cpuSince() / SETTLE_S);
    const rss = procStatusBytes(pid, 'VmRSS');
    await countCalls(`settle${SETTLE_S}s`);
    const memory = await askAgent(agent, 'memory');
    loadAt.end = load();

    const overhead = median(rounds.map((r) => percentile(r.agent, 99) - percentile(r.bare, 99)));
    const result = {
      label: LABEL,
      at: new Date().toISOString(),
      runtime: (await node.criVersion()).runtimeVersion,
      agentNodeOptions: AGENT_NODE_OPTIONS,
      agentRuntimeOptions: AGENT_RUNTIME_OPTIONS,
      loadAverage: { note: '1/5/15 min load average at each stage (2 cores)', ...loadAt },
      pods: PODS,
      note: `p50/p99 over all ${ROUNDS} rounds; the overhead is the median over rounds of agent p99 - bare CRI p99`,
      podStartup: {
        note: 'client create request to all containers started, observed via watch (ms)',
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
      rounds: rounds.map((r) => ({
        agentP50Ms: percentile(r.agent, 50),
        agentP99Ms: percentile(r.agent, 99),
        bareP50Ms: percentile(r.bare, 50),
        bareP99Ms: percentile(r.bare, 99),
        overheadP99Ms: percentile(r.agent, 99) - percentile(r.bare, 99),
      })),
      cpuWhileStarting: {
        note: 'CPU ms used from the first request to the last pod started, per round: the whole machine (2 cores), the agent, this process (fake apiserver, watch, bare CRI client), and the rest (the runtime)',
        rounds: rounds.map((r) => ({ bare: r.bareCpu, agent: r.agentCpu })),
      },
      agentCpuMs,
      agentCalls: {
        note: 'CRI operations (agent /metrics) and API requests the agent sent, per stage',
        ...calls,
      },
      rss: {
        note: `agent VmRSS ${SETTLE_S} s after all pods started (sampled each second); peak is VmHWM`,
        pods: RSS_PODS,
        bytes: rss,
        mib: mib(rss),
        allStartedMib: mib(rssAllStarted),
        peakMib: mib(procStatusBytes(pid, 'VmHWM')),
        samplesMib: samples,
        agent: memory,
      },
      targets: {
        note: "issue 6's targets (p99 as the Kubernetes SLO, RSS in MB = 10^6 bytes) and its aim for the overhead",
        podStartupP99: { limitMs: P99_TARGET_MS, met: percentile(latencies, 99) <= P99_TARGET_MS },
        rss: { limitBytes: RSS_TARGET_BYTES, met: rss <= RSS_TARGET_BYTES },
        overheadP99: { aimMs: OVERHEAD_AIM_MS, met: overhead <= OVERHEAD_AIM_MS },
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
    for (const line of summary(result)) log(line);
  } finally {
    if (agent && agent.exitCode === null) {
      agent.kill('SIGCONT'); // stopped if a bare CRI round failed
      agent.kill('SIGTERM');
      await new Promise((r) => agent?.once('exit', r));
    }
    await server.close();
    await node.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

// Exit explicitly: keep-alive sockets of the Docker and API clients would hold the process open.
main().then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(`bench failed: ${(e as Error).stack ?? e}\n`);
    process.exit(1);
  },
);
