#!/usr/bin/env node
// The streaming benchmark (issues 15 and 32); what it measures and its options: USAGE.
import { execFile } from 'node:child_process';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { benchArgs, cleanUpOnInterrupt, runId, UsageError } from '@kh/testkit';
import type { V1Pod } from '@kubernetes/client-node';
import { selectBackends } from '../src/backends/registry.js';
import { nodeImagesOf, type RuntimeBackend } from '../src/backends/types.js';
import { ContainerHost } from '../src/node/container-host.js';
import { PROJECT_IN_CONTAINER } from '../src/node/project.js';
import { summarize } from '../src/report/stats.js';
import { startNode } from '../src/run/node.js';
import { list } from '../src/run/options.js';
import { runKubectl, startKubectl } from '../src/support/kubectl.js';
import { consoleProgress } from '../src/support/progress.js';
import { APISERVER_ALIAS, APISERVER_PORT } from '../src/world/apiserver.js';
import { removeRunLeftovers } from '../src/world/leftovers.js';
import { HarnessWorld, nodeNameFor } from '../src/world/world.js';

const CRICTL = '/var/cache/kubelet-harness/cri-tools-1.26.0/crictl';
const EXEC_SAMPLES = 15;
const TRANSFER_RUNS = 3;
const BYTES = 100 * 2 ** 20;
const EXEC_TARGET_RATIO = 1.3;
/** kubectl port-forward's throughput over crictl port-forward's, in the same run. */
const FORWARD_TARGET_SHARE = 0.6;

const run = promisify(execFile);

/** The parts of the admin kubeconfig (JSON) the in-node exec probe needs. */
interface KubeconfigJson {
  clusters: { cluster: { 'certificate-authority-data': string } }[];
  users: { user: { token: string } }[];
}
const progress = consoleProgress();

interface RuntimeResult {
  runtime: string;
  exec: {
    /** One client in one process in the node: through apiserver and agent vs straight to the runtime. */
    apiserverP50Ms?: number;
    runtimeP50Ms?: number;
    ratio?: number;
    targetRatio: number;
    met?: boolean;
    /** Context: the two CLIs, each a new process, and what each takes to start and exit. */
    kubectlP50Ms?: number;
    crictlP50Ms?: number;
    processRatio?: number;
    kubectlStartP50Ms?: number;
    crictlStartP50Ms?: number;
    error?: string;
  };
  portForward: {
    /** kubectl port-forward, dialling the apiserver on the run's network. */
    viaPortForwardMiBps?: number;
    /** Context: the same through the loopback port Docker publishes (its userland proxy in between). */
    viaLoopbackPortForwardMiBps?: number;
    /** crictl port-forward in the node: the runtime's own port-forward, without apiserver and agent. */
    runtimePortForwardMiBps?: number;
    /** via kubectl / via crictl: the judged figure. */
    share?: number;
    targetShare: number;
    met?: boolean;
    /** Context: straight to the pod IP from a client pod, and kubectl's share of it. */
    directMiBps?: number;
    shareOfPodIp?: number;
    /**
     * CPU time (user + system, ms) per MiB: of each whole path (every process it runs through:
     * the node's, the apiserver's, kubectl and the reader on the host; crictl and its reader in
     * the node), and of the two relays alone.
     */
    cpuMsPerMiB?: { viaKubectl: number; viaCrictl: number; apiserver: number; agent: number };
    /**
     * viaCrictl / viaKubectl CPU: the share kubectl's path can reach while both are CPU-bound on
     * the same cores, the floor the target is judged against on a 2-core machine.
     */
    cpuBoundShare?: number;
    error?: string;
  };
}

const timed = async <T>(fn: () => Promise<T>): Promise<[number, T]> => {
  const t0 = performance.now();
  const v = await fn();
  return [performance.now() - t0, v];
};

const median = (xs: number[]) => summarize(xs)!.p50;

/**
 * CPU time (user + system, ms) of the processes in a container whose command line matches
 * `pattern`, a grep regex written so that it does not match itself (e.g. `[n]ode-agent`); ''
 * takes every process there. Processes that have exited are not counted.
 */
async function cpuMsOf(container: string, pattern: string): Promise<number> {
  const script =
    't=0; for p in /proc/[0-9]*; do if grep -qa -- "$1" $p/cmdline 2>/dev/null; then ' +
    'set -- "$1" $(cut -d\' \' -f14,15 $p/stat); t=$((t + $2 + $3)); fi; done; ' +
    'echo $t $(getconf CLK_TCK 2>/dev/null || echo 100)';
  const { stdout } = await run('docker', ['exec', container, 'sh', '-c', script, 'sh', pattern]);
  const [ticks, hz] = stdout.trim().split(' ').map(Number);
  if (!Number.isFinite(ticks) || !hz)
    throw new Error(`cannot read the CPU time of ${pattern} in ${container}`);
  return (ticks! * 1000) / hz;
}

/** CPU time (ms) of this machine's processes whose argv holds every one of `args`. */
async function hostCpuMs(...args: string[]): Promise<number> {
  let ms = 0;
  for (const pid of (await readdir('/proc')).filter((d) => /^\d+$/.test(d))) {
    const argv = await readFile(`/proc/${pid}/cmdline`, 'utf8').then(
      (c) => c.split('\0'),
      (): string[] => [],
    );
    if (!args.every((a) => argv.includes(a))) continue;
    // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    ms += (Number(f[11]) + Number(f[12])) * 10; // USER_HZ is 100 on Linux
  }
  return ms;
}

interface KubectlForward {
  /** Downloads /big through the forward; resolves to the time it took (ms). */
  download(): Promise<number>;
  stop(): Promise<unknown>;
}

/** `kubectl port-forward pod/srv :8080` (with `args`), once httpd answers through it. */
async function kubectlForward(kubeconfig: string, ns: string, args: string[] = []): Promise<KubectlForward> {
  const pf = startKubectl(kubeconfig, [...args, '-n', ns, 'port-forward', 'pod/srv', ':8080']);
  try {
    let port = '';
    for (let i = 0; i < 100 && !port; i++) {
      port = /127\.0\.0\.1:(\d+)/.exec(pf.stdout())?.[1] ?? '';
      if (!port) await new Promise((r) => setTimeout(r, 100));
    }
    if (!port) throw new Error(`port-forward did not listen: ${pf.stderr().trim()}`);
    // Running is not listening: wait until httpd answers through the forward.
    for (let i = 0; ; i++) {
      const ok = await fetch(`http://127.0.0.1:${port}/big`, { method: 'HEAD' }).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      if (i === 50) throw new Error('httpd in pod srv did not answer through port-forward');
      await new Promise((r) => setTimeout(r, 200));
    }
    const download = async () => {
      const [ms, got] = await timed(async () => {
        const res = await fetch(`http://127.0.0.1:${port}/big`);
        let n = 0;
        for await (const chunk of res.body!) n += (chunk as Uint8Array).byteLength;
        return n;
      });
      if (got !== BYTES) throw new Error(`port-forward delivered ${got} of ${BYTES} bytes`);
      return ms;
    };
    return { download, stop: () => pf.stop() };
  } catch (err) {
    await pf.stop();
    throw err;
  }
}

const ownCpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** The children's user and system time from dash's `times` (its second line: "0m1.23s 0m0.45s"). */
function childrenCpuMs(times: string): number {
  const m = /(\d+)m([\d.]+)s (\d+)m([\d.]+)s\s*$/.exec(times.trim());
  if (!m) throw new Error(`cannot read times: ${times}`);
  return (Number(m[1]) * 60 + Number(m[2]) + Number(m[3]) * 60 + Number(m[4])) * 1000;
}

function pod(ns: string, name: string, nodeName: string, image: string, script: string): V1Pod {
  return {
    metadata: { name, namespace: ns },
    spec: {
      nodeName,
      terminationGracePeriodSeconds: 1,
      containers: [{ name, image, command: ['sh', '-c', script] }],
    },
  };
}

async function benchRuntime(
  world: HarnessWorld,
  name: string,
  backend: RuntimeBackend,
  kubeconfig: string,
): Promise<RuntimeResult> {
  const node = await startNode(world, backend, progress.child(name));
  const result: RuntimeResult = {
    runtime: name,
    exec: { targetRatio: EXEC_TARGET_RATIO },
    portForward: { targetShare: FORWARD_TARGET_SHARE },
  };
  // One namespace per runtime: deleting the previous one finishes in the background.
  const NS = `bench-${name}`;
  try {
    const nodeName = node.started.nodeName;
    const host = node.started.host;
    if (!(host instanceof ContainerHost)) throw new Error(`${name}: the node is not a container`);
    await run('docker', ['cp', CRICTL, `${host.containerId}:/usr/local/bin/crictl`]);
    const crictl = `crictl --runtime-endpoint ${node.started.nodeCriEndpoint}`;
    /** Runs a shell command line in the node; resolves to its duration there in ms. */
    const timedInNode = async (cmd: string): Promise<number> => {
      const r = await host.exec([
        'sh',
        '-c',
        `s=$(date +%s%N); ${cmd} >/dev/null || exit 1; e=$(date +%s%N); echo $((e - s))`,
      ]);
      if (r.exitCode !== 0) throw new Error(`${cmd}: ${r.output.trim()}`);
      return Number(r.output.trim().split('\n').pop()) / 1e6;
    };
    const crictlInNode = (args: string) => timedInNode(`${crictl} ${args}`);
    await world.core.createNamespace({ body: { metadata: { name: NS } } });
    await world.core.createNamespacedPod({
      namespace: NS,
      body: pod(
        NS,
        'srv',
        nodeName,
        world.images.busybox,
        `head -c ${BYTES} /dev/zero > /tmp/big && exec httpd -f -p 8080 -h /tmp`,
      ),
    });
    await world.core.createNamespacedPod({
      namespace: NS,
      body: pod(NS, 'client', nodeName, world.images.busybox, 'exec sleep 3600'),
    });
    let srvIp = '';
    for (let i = 0; i < 120; i++) {
      const pods = (await world.core.listNamespacedPod({ namespace: NS })).items;
      if (pods.length === 2 && pods.every((p) => p.status?.phase === 'Running')) {
        srvIp = pods.find((p) => p.metadata?.name === 'srv')?.status?.podIP ?? '';
        break;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    if (!srvIp) throw new Error('bench pods did not start');
    const ps = await host.exec(['sh', '-c', `${crictl} ps -q --label io.kubernetes.pod.name=client`]);
    const clientId = ps.output.trim();
    progress.ok(`${name}: pods running (srv ${srvIp}, client container ${clientId.slice(0, 12)})`);

    // exec, the judged figure: one client, one process, both paths alternating in the node.
    try {
      const admin = JSON.parse(await readFile(kubeconfig, 'utf8')) as KubeconfigJson;
      const r = await host.exec([
        'node',
        `${PROJECT_IN_CONTAINER}/apps/harness/bench/dist/bench/exec_probe.js`,
        `--endpoint=${node.started.nodeCriEndpoint}`,
        `--container=${clientId}`,
        '--apiserver=https://apiserver:6443',
        `--ca-data=${admin.clusters[0]!.cluster['certificate-authority-data']}`,
        `--token=${admin.users[0]!.user.token}`,
        `--namespace=${NS}`,
        '--pod=client',
        `--samples=${EXEC_SAMPLES}`,
      ]);
      if (r.exitCode !== 0) throw new Error(r.output.trim());
      const probe = JSON.parse(r.output.trim().split('\n').pop()!) as {
        runtimeMs: number[];
        apiserverMs: number[];
      };
      const a = median(probe.apiserverMs);
      const d = median(probe.runtimeMs);
      Object.assign(result.exec, {
        apiserverP50Ms: a,
        runtimeP50Ms: d,
        ratio: a / d,
        met: a / d <= EXEC_TARGET_RATIO,
      });
    } catch (err) {
      result.exec.error = `exec probe: ${(err as Error).message}`;
    }
    // Context: the CLIs, alternating so drift on a shared machine hits both alike.
    try {
      const viaApi: number[] = [];
      const direct: number[] = [];
      const kubectlStart: number[] = [];
      const crictlStart: number[] = [];
      for (let i = 0; i < EXEC_SAMPLES; i++) {
        direct.push(await crictlInNode(`exec ${clientId} true`));
        crictlStart.push(await crictlInNode('--version'));
        const [ms, r] = await timed(() => runKubectl(kubeconfig, ['-n', NS, 'exec', 'client', '--', 'true']));
        if (r.code !== 0) throw new Error(`kubectl exec: exit ${r.code}: ${r.stderr.trim()}`);
        viaApi.push(ms);
        kubectlStart.push((await timed(() => runKubectl(kubeconfig, ['version', '--client'])))[0]);
      }
      Object.assign(result.exec, {
        kubectlP50Ms: median(viaApi),
        crictlP50Ms: median(direct),
        processRatio: median(viaApi) / median(direct),
        kubectlStartP50Ms: median(kubectlStart),
        crictlStartP50Ms: median(crictlStart),
      });
    } catch (err) {
      result.exec.error = [result.exec.error, (err as Error).message].filter(Boolean).join('; ');
    }

    // port-forward: kubectl's, the runtime's own (crictl) and the pod IP, alternating.
    try {
      const viaForward: number[] = [];
      const viaLoopback: number[] = [];
      const runtimeForward: number[] = [];
      const straight: number[] = [];
      const cpuMs = { viaKubectl: 0, viaCrictl: 0, apiserver: 0, agent: 0 };
      const apiserverContainer = (
        await run('docker', ['ps', '-q', '--filter', `name=^kh-${runId}-apiserver$`])
      ).stdout.trim();
      if (!apiserverContainer) throw new Error('no apiserver container');
      // kubectl as a client on the run's network reaches the apiserver, as in a cluster; through
      // the loopback port Docker publishes, Docker's userland proxy is one more relay (context).
      const apiserverIp = (
        await run('docker', [
          'inspect',
          '-f',
          '{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}',
          apiserverContainer,
        ])
      ).stdout
        .trim()
        .split(' ')[0];
      if (!apiserverIp) throw new Error('the apiserver container has no address on the run network');
      const server = `--server=https://${apiserverIp}:${APISERVER_PORT}`;
      const onNetwork = [server, `--tls-server-name=${APISERVER_ALIAS}`];
      const cpuSample = async () => ({
        node: await cpuMsOf(host.containerId, ''),
        agent: await cpuMsOf(host.containerId, '[n]ode-agent'),
        apiserver: await cpuMsOf(apiserverContainer, ''),
        kubectl: await hostCpuMs(`--kubeconfig=${kubeconfig}`, 'port-forward', server),
        reader: ownCpuMs(),
      });
      // The runtime's own port-forward, in the node: crictl port-forward to the same pod, read by
      // the node's Node.js (the node has no wget or curl; a start costs ~50 ms of ~1 s). A fresh
      // forward per download, timed once it listens: containerd's streaming server timed out a
      // second connection through one crictl session here.
      const download = `node -e 'fetch(process.argv[1]).then(async (r) => { let n = 0; for await (const c of r.body) n += c.length; process.exit(n === ${BYTES} ? 0 : 1); })' http://127.0.0.1:18080/big`;
      const sandbox = (
        await host.exec(['sh', '-c', `${crictl} pods -q --name srv --namespace ${NS} --state ready`])
      ).output.trim();
      /** One download through crictl port-forward: its time and the CPU of the whole path (ms). */
      const ownForward = async (): Promise<[number, number]> => {
        const node0 = await cpuMsOf(host.containerId, '');
        const own = await host.exec([
          'sh',
          '-c',
          [
            `${crictl} port-forward ${sandbox} 18080:8080 >/tmp/kh-pf.log 2>&1 & pf=$!`,
            'for j in $(seq 50); do grep -q Forwarding /tmp/kh-pf.log && break; sleep 0.1; done',
            `b=$(date +%s%N); ${download} || { kill $pf; cat /tmp/kh-pf.log; exit 1; }; e=$(date +%s%N)`,
            'kill $pf; wait $pf 2>/dev/null; echo $((e - b)); times',
          ].join('\n'),
        ]);
        if (own.exitCode !== 0) throw new Error(`crictl port-forward: ${own.output.trim()}`);
        const node1 = await cpuMsOf(host.containerId, '');
        const [ns, , children] = own.output.trim().split('\n').slice(-3);
        // The node's long-lived processes (runtime, httpd) and what the script ran (crictl, reader).
        return [Number(ns) / 1e6, node1 - node0 + childrenCpuMs(children ?? '')];
      };
      const forwards = [
        await kubectlForward(kubeconfig, NS, onNetwork),
        await kubectlForward(kubeconfig, NS),
      ];
      const [network, loopback] = forwards as [KubectlForward, KubectlForward];
      try {
        for (let i = 0; i < TRANSFER_RUNS; i++) {
          const cpu0 = await cpuSample();
          const ms = await network.download();
          const cpu1 = await cpuSample();
          viaForward.push(ms);
          const delta = (k: keyof typeof cpu0) => cpu1[k] - cpu0[k];
          cpuMs.viaKubectl += delta('node') + delta('apiserver') + delta('kubectl') + delta('reader');
          cpuMs.apiserver += delta('apiserver');
          cpuMs.agent += delta('agent');
          const [ownMs, ownCpu] = await ownForward();
          runtimeForward.push(ownMs);
          cpuMs.viaCrictl += ownCpu;
          viaLoopback.push(await loopback.download());
          straight.push(await crictlInNode(`exec ${clientId} wget -q -O /dev/null http://${srvIp}:8080/big`));
        }
      } finally {
        for (const f of forwards) await f.stop();
      }
      const mibps = (ms: number) => BYTES / 2 ** 20 / (ms / 1000);
      const f = mibps(median(viaForward));
      const own = mibps(median(runtimeForward));
      const d = mibps(median(straight));
      const perMiB = (ms: number) => ms / TRANSFER_RUNS / (BYTES / 2 ** 20);
      Object.assign(result.portForward, {
        viaPortForwardMiBps: f,
        viaLoopbackPortForwardMiBps: mibps(median(viaLoopback)),
        runtimePortForwardMiBps: own,
        share: f / own,
        met: f / own >= FORWARD_TARGET_SHARE,
        directMiBps: d,
        shareOfPodIp: f / d,
        cpuMsPerMiB: {
          viaKubectl: perMiB(cpuMs.viaKubectl),
          viaCrictl: perMiB(cpuMs.viaCrictl),
          apiserver: perMiB(cpuMs.apiserver),
          agent: perMiB(cpuMs.agent),
        },
        cpuBoundShare: cpuMs.viaCrictl / cpuMs.viaKubectl,
      });
    } catch (err) {
      const cause = (err as Error & { cause?: Error }).cause;
      result.portForward.error = `${(err as Error).message}${cause ? `: ${cause.message}` : ''}`;
    }
  } finally {
    await world.core.deleteNamespace({ name: NS }).catch(() => {});
    await node.stop();
  }
  return result;
}

const USAGE = `Usage: npm run bench -w @kh/harness [-- options]

kubectl's streaming verbs through the fake apiserver and our agent, side by side with the runtime's
own path on the same node, in one run:
  exec          the round trip of an exec of \`true\` with one client, in one process inside the
                node (bench/exec_probe.ts): SPDY through the apiserver and the agent vs CRI Exec
                and SPDY straight to the runtime, as crictl does (target: p50 at most ${EXEC_TARGET_RATIO}×).
                Also, as context: \`kubectl exec\` from the host vs \`crictl exec\` in the node, each
                a process, with what each binary takes to start.
  port-forward  100 MiB from a busybox httpd pod through \`kubectl port-forward\`, read on the host,
                vs \`crictl port-forward\` in the node, the runtime's own port-forward that every
                path through the apiserver and the agent ends in (target: ≥ ${FORWARD_TARGET_SHARE * 100} % of it),
                alternating; the same download from a client pod straight to the pod IP as
                context. What the two relays (apiserver, agent) spend in CPU per MiB is the
                floor of the path through them on this machine.
Writes .reports/bench/streaming-<time>.json.

Options:
  -r, --runtime <names>   comma-separated runtimes, one node each, in this order (default containerd,docker)
  -h, --help              show this help`;

async function main(): Promise<number> {
  const { runtimes, backends } = await benchArgs(
    { prog: 'harness streaming bench', usage: USAGE, options: { runtime: { type: 'string', short: 'r' } } },
    (values) => {
      const runtimes = list(values.runtime) ?? ['containerd', 'docker'];
      try {
        // One backend per runtime asked for, in the order asked (selectBackends keeps the registry's).
        return { runtimes, backends: runtimes.map((r) => selectBackends([r])[0]!) };
      } catch (err) {
        throw new UsageError(`--runtime: ${(err as Error).message}`);
      }
    },
  );
  const results: RuntimeResult[] = [];
  const world = await HarnessWorld.start({
    runId,
    // Nodes named and made as `run` makes them: after the backend (containerd-1.7), from its image.
    nodes: backends.map((b) => nodeNameFor(runId, b.name)),
    images: nodeImagesOf(backends),
    progress,
  });
  const teardown = cleanUpOnInterrupt(async () => {
    await world.stop().catch(() => {});
    await removeRunLeftovers(runId);
  });
  try {
    const kubeconfig = world.kubeconfigFile;
    // One node at a time: two cores, and each measurement wants the machine to itself.
    for (const [i, name] of runtimes.entries())
      results.push(await benchRuntime(world, name, backends[i]!, kubeconfig));
  } finally {
    await teardown();
  }
  const fmt = (v: number | undefined, d = 1) => (v === undefined ? '-' : v.toFixed(d));
  for (const r of results) {
    process.stdout.write(
      `${r.runtime}: exec round trip p50 through apiserver and agent ${fmt(r.exec.apiserverP50Ms)} ms vs straight to the runtime ${fmt(r.exec.runtimeP50Ms)} ms = ${fmt(r.exec.ratio, 2)}× (target ≤ ${EXEC_TARGET_RATIO}×)${r.exec.error ? ` error: ${r.exec.error}` : ''}\n` +
        `${r.runtime}:   as processes: kubectl exec ${fmt(r.exec.kubectlP50Ms)} ms vs crictl exec ${fmt(r.exec.crictlP50Ms)} ms = ${fmt(r.exec.processRatio, 2)}× (starting kubectl ${fmt(r.exec.kubectlStartP50Ms)} ms, crictl ${fmt(r.exec.crictlStartP50Ms)} ms)\n` +
        `${r.runtime}: 100 MiB kubectl port-forward ${fmt(r.portForward.viaPortForwardMiBps)} MiB/s vs crictl port-forward in the node ${fmt(r.portForward.runtimePortForwardMiBps)} MiB/s = ${fmt((r.portForward.share ?? Number.NaN) * 100, 0)} % (target ≥ ${FORWARD_TARGET_SHARE * 100} %); pod IP ${fmt(r.portForward.directMiBps)} MiB/s; CPU per MiB via kubectl ${fmt(r.portForward.cpuMsPerMiB?.viaKubectl, 2)} ms (apiserver ${fmt(r.portForward.cpuMsPerMiB?.apiserver, 2)}, agent ${fmt(r.portForward.cpuMsPerMiB?.agent, 2)}) vs via crictl ${fmt(r.portForward.cpuMsPerMiB?.viaCrictl, 2)} ms: CPU-bound share ${fmt((r.portForward.cpuBoundShare ?? Number.NaN) * 100, 0)} %${r.portForward.error ? ` error: ${r.portForward.error}` : ''}\n`,
    );
  }
  const dir = join(process.cwd(), '.reports', 'bench');
  await mkdir(dir, { recursive: true });
  const file = join(dir, `streaming-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  await writeFile(
    file,
    `${JSON.stringify({ benchmark: 'streaming', at: new Date().toISOString(), results }, null, 2)}\n`,
  );
  process.stdout.write(`${file}\n`);
  // A missed target is a result (in the JSON), not a failure: `npx turbo run bench` goes on.
  return 0;
}

process.env.TESTCONTAINERS_RYUK_DISABLED ??= 'true';
main().then(
  (code) => process.exit(code),
  (err: Error) => {
    process.stderr.write(`bench: ${err.stack ?? err.message}\n`);
    process.exit(1);
  },
);
