// Pod start-up latency as Kubernetes' SLO measures it, on real containerd: N pods created at
// once, each timed from its creation to all its containers started as observed through a watch;
// the same pods started with bare CRI calls give the runtime's own share. Then the agent's RSS
// with maxPods (110) pods running. Results go to .reports/bench.json.
//   npm run bench -w @kh/node-agent [-- --pods 30 --rss-pods 110]
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CriClient } from '@kh/cri-api';
import { createApiServer } from '@kh/fake-apiserver';
import { ensureImages, NodeContainer } from '@kh/testkit';
import { CoreV1Api, type V1Pod, Watch } from '@kubernetes/client-node';
import { loadKubeConfig } from '../api/node_api.js';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const arg = (name: string, dflt: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const PODS = arg('pods', 30);
const RSS_PODS = arg('rss-pods', 110);
const log = (s: string) => process.stderr.write(`[bench] ${s}\n`);

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

function rssBytes(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) * 1024;
}

/** Bare CRI: sandbox + container + start per pod, all pods at once. */
async function bareCri(endpoint: string, image: string, n: number, cgroupParent: string): Promise<number[]> {
  const cri = await CriClient.connect(endpoint, { timeoutMs: 120_000 });
  try {
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
    const { items } = await cri.listPodSandbox({ filter: {} });
    for (const sb of items.filter((s) => s.metadata?.namespace === 'bench-bare')) {
      await cri.stopPodSandbox({ podSandboxId: sb.id });
      await cri.removePodSandbox({ podSandboxId: sb.id });
    }
    return times;
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
    if (agent && agent.exitCode === null) agent.kill('SIGTERM');
    void Promise.allSettled([server.close(), node.stop()]).then(() => process.exit(1));
  });
  try {
    log(`bare CRI: ${PODS} pods at once`);
    const bare = await bareCri(node.criEndpointOnHost, busybox, PODS, node.cgroupParent);

    const spec = {
      flags: [
        `--kubeconfig=${kubeconfig}`,
        `--container-runtime-endpoint=${node.criEndpointOnHost}`,
        `--root-dir=${join(dir, 'root')}`,
        `--cgroup-root=${node.cgroupParent}`,
        '--hostname-override=bench-node',
        '--node-ip=127.0.0.1',
        '--address=127.0.0.1',
        `--port=${await freePort()}`,
        '--healthz-port=0',
        '--serialize-image-pulls=false',
      ],
      config: { podLogsDir: join(node.sharedDirOnHost, 'logs') },
      runtimeManager: {
        podsDir: join(node.sharedDirOnHost, 'pods'),
        pathMapping: { agentRoot: node.sharedDirOnHost, runtimeRoot: node.sharedDirInNode },
        podSandboxImage: refs.pause,
      },
    };
    agent = spawn(process.execPath, [join(here, 'agent_process.js'), JSON.stringify(spec)], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
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
      return [...createdAt].map(([name, t]) => (startedAt.get(name) ?? Number.NaN) - t);
    };

    log(`agent: ${PODS} pods at once`);
    const latencies = await runPods('start-', PODS);
    log('deleting them');
    await Promise.all(
      latencies.map((_, i) => core.deleteNamespacedPod({ namespace: 'default', name: `start-${i}` })),
    );
    for (let i = 0; i < 600; i++) {
      const { items } = await core.listNamespacedPod({ namespace: 'default' });
      if (items.length === 0) break;
      await new Promise((r) => setTimeout(r, 200));
    }

    log(`RSS: ${RSS_PODS} pods`);
    if (RSS_PODS > 0) await runPods('rss-', RSS_PODS);
    await new Promise((r) => setTimeout(r, 5_000)); // a few status and lease periods with all pods up
    const rss = rssBytes(agent.pid as number);

    const result = {
      at: new Date().toISOString(),
      runtime: (await node.criVersion()).runtimeVersion,
      pods: PODS,
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
      agentOverheadP99Ms: percentile(latencies, 99) - percentile(bare, 99),
      rss: { pods: RSS_PODS, bytes: rss, mib: Math.round(rss / 1024 / 1024) },
      targets: { p99Ms: 5000, overheadP99Ms: 300, rssMib: 150 },
    };
    const out = join(here, '..', '..', '.reports', 'bench.json');
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    log(`written to ${out}`);
  } finally {
    if (agent && agent.exitCode === null) {
      agent.kill('SIGTERM');
      await new Promise((r) => agent?.once('exit', r));
    }
    await server.close();
    await node.stop();
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
