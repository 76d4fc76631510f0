import type { KObject } from '@kh/fake-apiserver';
import { BenchClient, pool, summary } from './client.js';
import { type ListResult, listIn, startLister } from './lister.js';
import { cpuSeconds } from './proc.js';
import { startWatchers, stopWatchers } from './watchers.js';

export interface LoadOptions {
  url: string;
  durable: boolean;
  nodes: number;
  pods: number;
  watchers: number;
  durationSeconds: number;
  leaseRenewSeconds: number;
  /** Fraction of nodes whose status changes per renew interval (the kubelet patches only on change). */
  nodeChangeFraction: number;
  /** Pod status updates per second during steady state (containers starting, probes flipping). */
  podStatusPerSecond: number;
  /** LISTs of every pod after the steady state (one more runs in its middle, as a relisting informer would). */
  listRepeats: number;
  progress: (line: string) => void;
  /** Samples the server's memory (RSS bytes). */
  rss: () => number;
  /** The server's CPU time so far (seconds). */
  cpuSeconds: () => number;
}

const SENT = 'bench.kh.io/sent';
/** kubectl get's --chunk-size and client-go's pager default. */
const PAGE_LIMIT = 500;

/**
 * LISTs `path` in pages of `limit` following `continue`, as kubectl does. `items` is what the
 * first page counted (its own plus `remainingItemCount`).
 */
async function listInPages(c: BenchClient, path: string, limit: number) {
  const t = performance.now();
  const pageMs: number[] = [];
  let cont: string | undefined;
  let items: number | undefined;
  do {
    const p = await c.fetchPage(
      `${path}?limit=${limit}${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`,
    );
    if (p.status !== 200) throw new Error(`LIST page ${pageMs.length + 1} of ${path} answered ${p.status}`);
    pageMs.push(p.ms);
    items ??= p.remainingItemCount === undefined ? undefined : p.remainingItemCount + limit;
    cont = p.continue;
  } while (cont);
  return {
    limit,
    items,
    pages: pageMs.length,
    ms: Math.round(performance.now() - t),
    pageMs: summary(pageMs),
  };
}
/** The `n` slowest writes: when each was sent (s into the steady state), how long it took, its kind. */
export function slowest(
  spans: [number, number, string][],
  steadyStart: number,
  overlapsList: (s: [number, number, string]) => boolean,
  n = 5,
) {
  return [...spans]
    .sort((a, b) => b[1] - b[0] - (a[1] - a[0]))
    .slice(0, n)
    .map((s) => ({
      atS: Math.round((s[0] - steadyStart) / 10) / 100,
      ms: Math.round(s[1] - s[0]),
      kind: s[2],
      duringList: overlapsList(s),
    }));
}
const micro = (ms: number) => new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

function node(name: string, now: number): KObject {
  const ts = new Date(now).toISOString().replace(/\.\d+Z$/, 'Z');
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name, type: 'kwok' } },
    status: {
      capacity: { cpu: '32', memory: '128Gi', pods: '110' },
      conditions: ['MemoryPressure', 'DiskPressure', 'PIDPressure']
        .map((type) => ({
          type,
          status: 'False',
          reason: `KubeletHasNo${type}`,
          lastHeartbeatTime: ts,
          lastTransitionTime: ts,
        }))
        .concat([
          {
            type: 'Ready',
            status: 'True',
            reason: 'KubeletReady',
            lastHeartbeatTime: ts,
            lastTransitionTime: ts,
          },
        ]),
      addresses: [
        { type: 'InternalIP', address: '10.0.0.1' },
        { type: 'Hostname', address: name },
      ],
      nodeInfo: {
        kubeletVersion: 'v1.33.0',
        containerRuntimeVersion: 'fake://1',
        osImage: 'kwok',
        kernelVersion: '6.1',
        operatingSystem: 'linux',
        architecture: 'amd64',
        machineID: name,
        systemUUID: name,
        bootID: name,
        kubeProxyVersion: '',
      },
    },
  };
}

function pod(i: number): KObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `pod-${i}`, namespace: 'bench', labels: { app: `app-${i % 50}` } },
    spec: {
      containers: [
        { name: 'c', image: 'registry:5000/app:1', resources: { requests: { cpu: '10m', memory: '16Mi' } } },
      ],
    },
  };
}

/**
 * kwok-style load: nodes registered with leases, pods scheduled onto them, then a steady state
 * where every node renews its lease every `leaseRenewSeconds`, a fraction patches its status,
 * some pods change status, and `watchers` watches receive it all. Leases are renewed from the
 * nodes' registration on, as kubelets do: a long setup must not let the node lifecycle controller
 * find them gone.
 */
export async function runLoad(o: LoadOptions) {
  const c = new BenchClient(o.url);
  const setupLatency: number[] = [];
  const timed = async (fn: () => Promise<{ status: number; body: KObject }>, into: number[]) => {
    const t = performance.now();
    const r = await fn();
    into.push(performance.now() - t);
    if (r.status >= 300)
      throw new Error(`bench write failed: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
    return r;
  };

  const setupStart = Date.now();
  o.progress(`setup: ${o.nodes} nodes with leases`);
  await c.send('POST', '/api/v1/namespaces', { metadata: { name: 'bench' } });
  const names = Array.from({ length: o.nodes }, (_, i) => `kwok-node-${i}`);
  const leaseRv = new Map<string, string>();
  await pool(names, 32, async (n) => {
    await timed(() => c.send('POST', '/api/v1/nodes', node(n, Date.now())), setupLatency);
    const l = await timed(
      () =>
        c.send('POST', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', {
          metadata: { name: n },
          spec: { holderIdentity: n, leaseDurationSeconds: 40, renewTime: micro(Date.now()) },
        }),
      setupLatency,
    );
    leaseRv.set(n, l.body.metadata.resourceVersion);
  });

  // The kubelets' side from now on: leases always, node and pod status once steady.
  const writeLatency: number[] = [];
  /** [sent, answered, kind] of every measured write (performance.now()), to set apart those a LIST overlapped. */
  const writeSpans: [number, number, string][] = [];
  const byKind: Record<string, number[]> = { lease: [], nodeStatus: [], podStatus: [] };
  let measuring = false;
  let steady = false;
  let stopped = false;
  let failures = 0;
  const inflight = new Set<Promise<void>>();
  const fire = (kind: string, fn: () => Promise<{ status: number; body: KObject }>) => {
    const t = performance.now();
    const counted = measuring;
    const p = fn()
      .then((r) => {
        if (!counted) return;
        const end = performance.now();
        const ms = end - t;
        writeLatency.push(ms);
        writeSpans.push([t, end, kind]);
        byKind[kind]!.push(ms);
        if (r.status >= 300) failures++;
      })
      .catch(() => {
        if (counted) failures++;
      })
      .finally(() => inflight.delete(p));
    inflight.add(p);
  };
  // Fine-grained ticks spread the nodes' renewals over the interval, as independent kubelets would.
  const tickMs = 10;
  const ticksPerRenew = (o.leaseRenewSeconds * 1000) / tickMs;
  const tick = (t: number) => {
    for (let i = t % ticksPerRenew; i < names.length; i += ticksPerRenew) {
      const n = names[i]!;
      // The kubelet renews with an update carrying the resourceVersion it last saw.
      fire('lease', async () => {
        const r = await c.send('PUT', `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${n}`, {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: n, namespace: 'kube-node-lease', resourceVersion: leaseRv.get(n) },
          spec: { holderIdentity: n, leaseDurationSeconds: 40, renewTime: micro(Date.now()) },
        });
        if (r.status === 200) leaseRv.set(n, r.body.metadata.resourceVersion);
        return r;
      });
      if (steady && Math.random() < o.nodeChangeFraction) {
        const ts = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
        fire('nodeStatus', () =>
          c.send(
            'PATCH',
            `/api/v1/nodes/${n}/status`,
            {
              metadata: { annotations: { [SENT]: String(Date.now()) } },
              status: {
                // The kubelet's node status patch: changed entries plus the list order.
                '$setElementOrder/conditions': ['MemoryPressure', 'DiskPressure', 'PIDPressure', 'Ready'].map(
                  (type) => ({ type }),
                ),
                conditions: [
                  { type: 'Ready', status: 'True', reason: 'KubeletReady', lastHeartbeatTime: ts },
                ],
                allocatable: { memory: `${120 + Math.floor(Math.random() * 8)}Gi` },
              },
            },
            'application/strategic-merge-patch+json',
          ),
        );
      }
    }
    if (!steady) return;
    podCredit += (o.podStatusPerSecond * tickMs) / 1000;
    for (; podCredit >= 1; podCredit--) {
      const i = podCursor++ % o.pods;
      const ts = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
      fire('podStatus', () =>
        c.send(
          'PATCH',
          `/api/v1/namespaces/bench/pods/pod-${i}/status`,
          {
            metadata: { annotations: { [SENT]: String(Date.now()) } },
            status: {
              phase: 'Running',
              conditions: [
                { type: 'Ready', status: podCursor % 2 === 0 ? 'True' : 'False', lastTransitionTime: ts },
              ],
              podIP: `10.1.${(i >> 8) & 255}.${i & 255}`,
            },
          },
          'application/strategic-merge-patch+json',
        ),
      );
    }
  };
  let podCursor = 0;
  let podCredit = 0;
  let ticks = 0;
  const driverStart = Date.now();
  const driver = (async () => {
    while (!stopped) {
      tick(ticks++);
      const wait = ticks * tickMs - (Date.now() - driverStart);
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
  })();

  o.progress(`setup: ${o.pods} pods`);
  const podIdx = Array.from({ length: o.pods }, (_, i) => i);
  await pool(podIdx, 32, async (i) => {
    await timed(() => c.send('POST', '/api/v1/namespaces/bench/pods', pod(i)), setupLatency);
    if (i % 10000 === 9999) o.progress(`  ${i + 1} pods created`);
  });
  o.progress('setup: waiting for the scheduler to bind every pod');
  for (;;) {
    const unbound = await c.send(
      'GET',
      '/api/v1/namespaces/bench/pods?fieldSelector=spec.nodeName%3D&limit=1',
    );
    if ((unbound.body.items?.length ?? 0) === 0) break;
    o.progress('  pods still unbound');
    await new Promise((r) => setTimeout(r, 1000));
  }
  const setupSeconds = Math.round((Date.now() - setupStart) / 1000);
  o.progress(`setup took ${setupSeconds}s; steady state: ${o.watchers} watchers, ${o.durationSeconds}s`);

  const collections = [
    '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases',
    '/api/v1/nodes',
    '/api/v1/namespaces/bench/pods',
  ];
  // One list per collection, as one informer per resource would: a list per watcher took seconds
  // at 150 000 pods, and the watchers then started with seconds of backlog each.
  const rvs = new Map<string, string>();
  for (const path of collections)
    rvs.set(path, (await c.send('GET', `${path}?limit=1`)).body.metadata.resourceVersion);
  const paths = Array.from({ length: o.watchers }, (_, w) => {
    const path = collections[w % collections.length]!;
    return `${path}?watch=true&allowWatchBookmarks=true&resourceVersion=${rvs.get(path)}`;
  });
  const watchers = await startWatchers({ url: o.url, paths });
  const lister = await startLister(o.url);
  steady = true;
  // Let the first node and pod status patches settle in before measuring.
  await new Promise((r) => setTimeout(r, 1000));
  watchers.send('measure');
  measuring = true;

  const rssSamples: number[] = [];
  const cpuAtStart = o.cpuSeconds();
  const readerCpuAtStart = cpuSeconds(watchers.pid!);
  const ownCpuAtStart = process.cpuUsage();
  const steadyStart = Date.now();
  const midList = new Promise<ListResult>((resolve, reject) =>
    setTimeout(() => listIn(lister, '/api/v1/pods').then(resolve, reject), (o.durationSeconds * 1000) / 2),
  );
  for (let t = 5; t <= o.durationSeconds; t += 5) {
    await new Promise((r) => setTimeout(r, steadyStart + t * 1000 - Date.now()));
    rssSamples.push(o.rss());
    const w = summary(writeLatency);
    o.progress(`  t=${t}s writes=${w.count} p99=${w.p99}ms rss=${Math.round(o.rss() / 2 ** 20)}MiB`);
  }
  await new Promise((r) => setTimeout(r, steadyStart + o.durationSeconds * 1000 - Date.now()));
  stopped = true;
  measuring = false;
  await driver;
  await Promise.all(inflight);
  const steadySeconds = (Date.now() - steadyStart) / 1000;
  // Busy share of one core during the steady state: the server's own cost, whatever else runs.
  const serverCpu = o.cpuSeconds() - cpuAtStart;
  const share = (seconds: number) => Math.round((seconds / steadySeconds) * 1000) / 10;
  const own = process.cpuUsage(ownCpuAtStart);
  const mid = await midList;
  const clientCpuPercentOfOneCore = {
    loadGenerator: share((own.user + own.system) / 1e6),
    watchReader: share(cpuSeconds(watchers.pid!) - readerCpuAtStart),
    lister: share(mid.cpuSeconds),
  };
  await new Promise((r) => setTimeout(r, 500));
  const delays = await stopWatchers(watchers);
  // The lister's span on this process's performance.now() clock, which the write spans use.
  const listFrom = mid.startEpochMs - performance.timeOrigin;
  const listTo = listFrom + mid.ms;
  const overlapsList = ([from, to]: [number, number, string]) => from < listTo && to > listFrom;
  const lists: { status: number; bytes: number; ms: number }[] = [mid];
  for (let i = 0; i < o.listRepeats; i++) lists.push(await c.fetchSize('/api/v1/pods'));
  for (const l of lists) if (l.status !== 200) throw new Error(`LIST of all pods answered ${l.status}`);
  o.progress(
    `  LIST of all pods: ${lists.map((l) => `${Math.round(l.ms)}ms`).join(', ')} (${Math.round(lists[0]!.bytes / 2 ** 20)} MiB)`,
  );
  const pagedList = await listInPages(c, '/api/v1/pods', PAGE_LIMIT);
  o.progress(
    `  LIST of all pods in pages of ${PAGE_LIMIT}: ${Math.round(pagedList.ms)}ms (${pagedList.pages} pages, slowest ${Math.round(pagedList.pageMs.max)}ms)`,
  );
  // A sanity check of the load itself: every kwok node kept its lease, so none went NotReady.
  const nodes = await c.send('GET', '/api/v1/nodes');
  const nodesNotReady = (nodes.body.items as KObject[]).filter(
    (n) => n.status?.conditions?.find((x: KObject) => x.type === 'Ready')?.status !== 'True',
  ).length;
  c.close();
  return {
    nodesNotReady,
    setupSeconds,
    steadyStart: new Date(steadyStart).toISOString(),
    setupWrites: summary(setupLatency),
    writes: summary(writeLatency),
    // The LIST in the middle of the steady state against the writes it overlapped.
    writesDuringList: summary(writeSpans.filter(overlapsList).map(([f, t]) => t - f)),
    writesOutsideList: summary(writeSpans.filter((w) => !overlapsList(w)).map(([f, t]) => t - f)),
    // When the slowest writes were sent (seconds into the steady state), to line a stall up with
    // the LIST, the progress lines or a recorder's timeline.
    slowestWrites: slowest(writeSpans, steadyStart - performance.timeOrigin, overlapsList),
    writesByKind: Object.fromEntries(Object.entries(byKind).map(([k, v]) => [k, summary(v)])),
    writeFailures: failures,
    writesPerSecond: Math.round(writeLatency.length / steadySeconds),
    watchDelivery: summary(delays),
    watchEventsPerSecond: Math.round(delays.length / steadySeconds),
    listAllPods: {
      ...summary(lists.map((l) => l.ms)),
      duringLoadMs: Math.round(lists[0]!.ms),
      bytes: lists[0]!.bytes,
    },
    // Idle, after the unpaged LISTs: what kubectl and client-go's pager pay for the same items.
    listAllPodsPaged: pagedList,
    serverCpuPercentOfOneCore: share(serverCpu),
    // The server's own CPU (its /proc stat) per write answered and per event its watchers read.
    serverCpuPerWriteUs: Math.round((serverCpu / writeLatency.length) * 1e6),
    serverCpuPerDeliveredEventUs: Math.round((serverCpu / delays.length) * 1e6 * 100) / 100,
    clientCpuPercentOfOneCore,
    rssSamples,
  };
}
