import type { Scenario, ScenarioContext } from '@kh/harness';
import type { V1Pod, V1ResourceRequirements } from '@kubernetes/client-node';
import { allChecksLimited } from '../support/concurrent.js';
import {
  createPod,
  endedPhase,
  INFINITE_SLEEP,
  kubectlExec,
  POD_START_MS,
  podFor,
  podSummary,
  readPod,
  sh,
  waitForPod,
} from '../support/pods.js';

// Upstream's in-place resize cases (pod_resize.go, 1.33) that one node can run: each pod is
// resized with kubectl 1.33 `patch --subresource resize`, then judged by upstream's expectations
// on the pod's status and, from inside the container, on its own cgroup files (cgroup v1 or v2,
// whichever the node has), after the rollback too where upstream rolls back.
const FILE = 'test/e2e/common/node/pod_resize.go';
const DESCRIBE = 'Pod InPlace Resize Container';

/** Upstream's sizes (pod_resize.go 1.33). */
const CPU = {
  original: '20m',
  originalLimit: '30m',
  reduced: '15m',
  reducedLimit: '25m',
  increased: '25m',
  increasedLimit: '35m',
};
const MEM = {
  original: '20Mi',
  originalLimit: '30Mi',
  reduced: '15Mi',
  reducedLimit: '25Mi',
  increased: '25Mi',
  increasedLimit: '35Mi',
};

/** Upstream's fakeExtendedResource, which its extended-resource case adds to every node's status. */
const EXTENDED = 'dummy.com/dummy';

interface Size {
  cpuReq?: string;
  cpuLim?: string;
  memReq?: string;
  memLim?: string;
  /** The extended resource's request and limit (upstream's ExtendedResourceReq/Lim, always equal). */
  extended?: string;
}

const requirements = (s: Size): V1ResourceRequirements => {
  const requests: Record<string, string> = {};
  const limits: Record<string, string> = {};
  if (s.cpuReq) requests.cpu = s.cpuReq;
  if (s.memReq) requests.memory = s.memReq;
  if (s.cpuLim) limits.cpu = s.cpuLim;
  if (s.memLim) limits.memory = s.memLim;
  if (s.extended) {
    requests[EXTENDED] = s.extended;
    limits[EXTENDED] = s.extended;
  }
  return {
    ...(Object.keys(requests).length > 0 ? { requests } : {}),
    ...(Object.keys(limits).length > 0 ? { limits } : {}),
  };
};

const guaranteed = (cpu: string, mem: string): Size => ({
  cpuReq: cpu,
  cpuLim: cpu,
  memReq: mem,
  memLim: mem,
});
const burstable = (over: Size = {}): Size => ({
  cpuReq: CPU.original,
  cpuLim: CPU.originalLimit,
  memReq: MEM.original,
  memLim: MEM.originalLimit,
  ...over,
});

interface Case {
  name: string;
  original: Size;
  /** The patch's resources for c1, as upstream's patchString has them. */
  patch: Size;
  expected: Size;
  memPolicy?: 'NotRequired' | 'RestartContainer';
  restarts?: number;
  rollback?: boolean;
  /** The node's status lists EXTENDED (123 of it) while the case runs, as upstream adds it. */
  addExtendedResource?: boolean;
}

/** A Burstable case of upstream's table: the patch is the expected size, as MakeResizePatch makes it. */
const BURSTABLE = 'Burstable QoS pod, one container with cpu & memory requests + limits - ';
const burstableCase = (name: string, to: Size, rollback = false): Case => ({
  name: `${BURSTABLE}${name}`,
  original: burstable(),
  patch: burstable(to),
  expected: burstable(to),
  ...(rollback ? { rollback } : {}),
});
/** Every Burstable request and limit moved up, or down, as upstream's three-container cases move them. */
const BURSTABLE_UP = burstable({
  cpuReq: CPU.increased,
  cpuLim: CPU.increasedLimit,
  memReq: MEM.increased,
  memLim: MEM.increasedLimit,
});
const BURSTABLE_DOWN = burstable({
  cpuReq: CPU.reduced,
  cpuLim: CPU.reducedLimit,
  memReq: MEM.reduced,
  memLim: MEM.reducedLimit,
});
const requestsOnly = (over: Size): Size => ({ cpuReq: CPU.original, memReq: MEM.original, ...over });

const CASES: Case[] = [
  {
    name: 'Guaranteed QoS pod, one container - increase CPU & memory',
    original: guaranteed(CPU.original, MEM.original),
    patch: guaranteed(CPU.increased, MEM.increased),
    expected: guaranteed(CPU.increased, MEM.increased),
  },
  {
    name: 'Guaranteed QoS pod, one container - increase CPU & memory with an extended resource',
    original: { ...guaranteed(CPU.original, MEM.original), extended: '1' },
    // The patch names cpu and memory only: the extended resource stays as it was.
    patch: guaranteed(CPU.increased, MEM.increased),
    expected: { ...guaranteed(CPU.increased, MEM.increased), extended: '1' },
    addExtendedResource: true,
  },
  {
    name: 'Guaranteed QoS pod, one container - decrease CPU only',
    original: guaranteed(CPU.original, MEM.original),
    patch: { cpuReq: CPU.reduced, cpuLim: CPU.reduced },
    expected: guaranteed(CPU.reduced, MEM.original),
    rollback: true,
  },
  {
    name: 'Burstable QoS pod, one container with cpu & memory requests + limits - decrease memory requests only',
    original: burstable(),
    patch: { memReq: MEM.reduced },
    expected: burstable({ memReq: MEM.reduced }),
    rollback: true,
  },
  burstableCase('increase memory requests only', { memReq: MEM.increased }),
  burstableCase('increase memory limits only', { memLim: MEM.increasedLimit }),
  {
    name: 'Burstable QoS pod with memory requests + limits - decrease memory limit',
    original: burstable(),
    patch: burstable({ memLim: MEM.reducedLimit }),
    expected: burstable({ memLim: MEM.reducedLimit }),
  },
  burstableCase('decrease CPU requests only', { cpuReq: CPU.reduced }, true),
  burstableCase('decrease CPU limits only', { cpuLim: CPU.reducedLimit }, true),
  burstableCase('increase CPU requests only', { cpuReq: CPU.increased }),
  burstableCase('increase CPU limits only', { cpuLim: CPU.increasedLimit }),
  burstableCase('decrease CPU requests and limits', { cpuReq: CPU.reduced, cpuLim: CPU.reducedLimit }),
  burstableCase('increase CPU requests and limits', { cpuReq: CPU.increased, cpuLim: CPU.increasedLimit }),
  burstableCase('decrease CPU requests and increase CPU limits', {
    cpuReq: CPU.reduced,
    cpuLim: CPU.increasedLimit,
  }),
  burstableCase('increase CPU requests and decrease CPU limits', {
    cpuReq: CPU.increased,
    cpuLim: CPU.reducedLimit,
  }),
  burstableCase('increase memory requests and limits', { memReq: MEM.increased, memLim: MEM.increasedLimit }),
  burstableCase('decrease memory requests and increase memory limits', {
    memReq: MEM.reduced,
    memLim: MEM.increasedLimit,
  }),
  burstableCase('decrease CPU requests and increase memory limits', {
    cpuReq: CPU.reduced,
    memLim: MEM.increasedLimit,
  }),
  burstableCase('decrease memory requests and increase CPU limits', {
    cpuLim: CPU.increasedLimit,
    memReq: MEM.reduced,
  }),
  burstableCase('increase memory requests and decrease CPU limits', {
    cpuLim: CPU.reducedLimit,
    memReq: MEM.increased,
  }),
  {
    name: 'Burstable QoS pod, one container with cpu & memory requests - decrease memory request',
    original: requestsOnly({}),
    patch: requestsOnly({ memReq: MEM.reduced }),
    expected: requestsOnly({ memReq: MEM.reduced }),
  },
  {
    name: 'Burstable QoS pod, one container with cpu & memory requests - increase cpu request',
    original: requestsOnly({}),
    patch: requestsOnly({ cpuReq: CPU.increased }),
    expected: requestsOnly({ cpuReq: CPU.increased }),
  },
  {
    // Both sizes give the same cgroup (2 shares, the 1 ms minimum quota): the resize is done at once.
    name: 'Burstable QoS pod, one container with cpu requests and limits - resize with equivalents',
    original: { cpuReq: '2m', cpuLim: '10m' },
    patch: { cpuReq: '1m', cpuLim: '5m' },
    expected: { cpuReq: '1m', cpuLim: '5m' },
  },
  {
    name: 'Burstable QoS pod, one container - decrease memory request (RestartContainer memory resize policy)',
    original: burstable(),
    patch: burstable({ memReq: MEM.reduced }),
    expected: burstable({ memReq: MEM.reduced }),
    memPolicy: 'RestartContainer',
    restarts: 1,
  },
  {
    name: 'Burstable QoS pod, one container - increase memory request (NoRestart memory resize policy)',
    original: burstable(),
    patch: burstable({ memReq: MEM.increased }),
    expected: burstable({ memReq: MEM.increased }),
  },
  {
    name: 'Guaranteed QoS pod, one container - increase CPU (NotRequired) & memory (RestartContainer)',
    original: guaranteed(CPU.original, MEM.original),
    patch: guaranteed(CPU.increased, MEM.increased),
    expected: guaranteed(CPU.increased, MEM.increased),
    memPolicy: 'RestartContainer',
    restarts: 1,
    rollback: true,
  },
  {
    name: 'Burstable QoS pod, one container - decrease CPU (NotRequired) & memory (RestartContainer)',
    original: burstable(),
    patch: BURSTABLE_DOWN,
    expected: BURSTABLE_DOWN,
    memPolicy: 'RestartContainer',
    restarts: 1,
    rollback: true,
  },
];

type Policy = 'NotRequired' | 'RestartContainer';

/** One container of a multi-container case. */
interface ContainerCase {
  name: string;
  original: Size;
  expected: Size;
  cpuPolicy?: Policy;
  memPolicy?: Policy;
  restarts?: number;
  /** A restartable init container (a sidecar): in initContainers with restartPolicy Always. */
  init?: boolean;
}

/** upstream's offsetCPU / offsetMemory: container i of a case is 2i milli-cpu and 2i Mi bigger. */
const offsetCPU = (i: number, q: string) => `${Number(q.replace(/m$/, '')) + 2 * i}m`;
const offsetMem = (i: number, q: string) => `${Number(q.replace(/Mi$/, '')) + 2 * i}Mi`;
const offset = (i: number, s: Size): Size => ({
  ...(s.cpuReq ? { cpuReq: offsetCPU(i, s.cpuReq) } : {}),
  ...(s.cpuLim ? { cpuLim: offsetCPU(i, s.cpuLim) } : {}),
  ...(s.memReq ? { memReq: offsetMem(i, s.memReq) } : {}),
  ...(s.memLim ? { memLim: offsetMem(i, s.memLim) } : {}),
});
const RESTART: Policy = 'RestartContainer';

/** Upstream's cases with more than one container, each container patched to its expected size. */
const MULTI_CASES: { name: string; containers: ContainerCase[] }[] = [
  {
    name: 'Guaranteed QoS pod, three containers (c1, c2, c3) - increase: CPU (c1,c3), memory (c2, c3) ; decrease: CPU (c2)',
    containers: [
      {
        name: 'c1',
        original: guaranteed(CPU.original, MEM.original),
        expected: guaranteed(CPU.increased, MEM.original),
      },
      {
        name: 'c2',
        original: offset(1, guaranteed(CPU.original, MEM.original)),
        expected: offset(1, guaranteed(CPU.reduced, MEM.increased)),
      },
      {
        name: 'c3',
        original: offset(2, guaranteed(CPU.original, MEM.original)),
        expected: offset(2, guaranteed(CPU.increased, MEM.increased)),
      },
    ],
  },
  {
    name: 'Burstable QoS pod, three containers - increase c1 resources, no change for c2, decrease c3 resources (no net change for pod)',
    containers: [
      {
        name: 'c1',
        original: burstable(),
        expected: BURSTABLE_UP,
      },
      { name: 'c2', original: offset(1, burstable()), expected: offset(1, burstable()), memPolicy: RESTART },
      {
        name: 'c3',
        original: offset(2, burstable()),
        expected: offset(
          2,
          burstable({ cpuReq: CPU.reduced, cpuLim: CPU.reducedLimit, memReq: MEM.reduced }),
        ),
      },
    ],
  },
  {
    name: 'Burstable QoS pod, three containers - decrease c1 resources, increase c2 resources, no change for c3 (net increase for pod)',
    containers: [
      {
        name: 'c1',
        original: burstable(),
        expected: burstable({ cpuReq: CPU.reduced, cpuLim: CPU.reducedLimit, memReq: MEM.reduced }),
      },
      {
        name: 'c2',
        original: offset(1, burstable()),
        // Upstream's table offsets c2's expected size by 2, not 1.
        expected: offset(2, BURSTABLE_UP),
        memPolicy: RESTART,
        restarts: 1,
      },
      { name: 'c3', original: offset(2, burstable()), expected: offset(2, burstable()) },
    ],
  },
  {
    name: 'Burstable QoS pod, three containers - no change for c1, increase c2 resources, decrease c3 (net decrease for pod)',
    containers: [
      { name: 'c1', original: burstable(), expected: burstable(), cpuPolicy: RESTART, memPolicy: RESTART },
      {
        name: 'c2',
        original: offset(1, burstable()),
        expected: offset(1, BURSTABLE_UP),
        cpuPolicy: RESTART,
        restarts: 1,
      },
      {
        name: 'c3',
        original: offset(2, burstable()),
        expected: BURSTABLE_DOWN,
        memPolicy: RESTART,
        restarts: 1,
      },
    ],
  },
  {
    name: 'Burstable QoS pod, mixed containers - scale up cpu and memory',
    containers: [
      {
        name: 'c1',
        original: guaranteed(CPU.original, MEM.original),
        expected: guaranteed(CPU.increased, MEM.increased),
      },
      { name: 'c2', original: {}, expected: {} },
    ],
  },
  {
    name: 'Burstable QoS pod, mixed containers - add requests',
    containers: [
      {
        name: 'c1',
        original: guaranteed(CPU.original, MEM.original),
        expected: guaranteed(CPU.original, MEM.original),
      },
      { name: 'c2', original: {}, expected: { cpuReq: CPU.original, memReq: MEM.original } },
    ],
  },
  {
    name: 'Burstable QoS pod, mixed containers - add limits',
    containers: [
      {
        name: 'c1',
        original: guaranteed(CPU.original, MEM.original),
        expected: guaranteed(CPU.original, MEM.original),
      },
      {
        name: 'c2',
        original: { cpuReq: CPU.original, memReq: MEM.original },
        expected: { cpuReq: CPU.original, cpuLim: CPU.originalLimit, memReq: MEM.original },
      },
    ],
  },
  {
    name: 'BestEffort QoS pod - empty resize',
    containers: [{ name: 'c1', original: {}, expected: {} }],
  },
  ...sidecarCases(),
];

/**
 * Upstream's restartable init container cases: c1 keeps its size, its sidecar c1-init is resized
 * (the patch names it in spec.initContainers) and judged in initContainerStatuses.
 */
function sidecarCases(): { name: string; containers: ContainerCase[] }[] {
  const G = guaranteed(CPU.original, MEM.original);
  const sidecar = (name: string, app: Size, original: Size, expected: Size) => ({
    name,
    containers: [
      { name: 'c1', original: app, expected: app },
      { name: 'c1-init', init: true, original, expected },
    ],
  });
  const guaranteedCase = (name: string, expected: Size) =>
    sidecar(`Guaranteed QoS pod, ${name}`, G, G, expected);
  const BURSTABLE_SC = 'Burstable QoS pod, one container, one restartable init container - ';
  const burstableSidecar = (name: string, app: Size, expected: Size) =>
    sidecar(`${BURSTABLE_SC}${name}`, app, burstable(), expected);
  return [
    guaranteedCase(
      'one restartable init container - increase CPU & memory',
      guaranteed(CPU.increased, MEM.increased),
    ),
    guaranteedCase(
      'one restartable init container - decrease CPU & increase memory',
      guaranteed(CPU.reduced, MEM.increased),
    ),
    guaranteedCase(
      'one container, one restartable init container - decrease init container CPU',
      guaranteed(CPU.reduced, MEM.original),
    ),
    burstableSidecar('increase init container CPU & memory', burstable(), BURSTABLE_UP),
    burstableSidecar(
      'decrease init container CPU only',
      burstable(),
      burstable({ cpuReq: CPU.reduced, cpuLim: CPU.reducedLimit }),
    ),
    burstableSidecar(
      'increase init container CPU only',
      burstable(),
      burstable({ cpuReq: CPU.increased, cpuLim: CPU.increasedLimit }),
    ),
    // In these two upstream keeps c1 Guaranteed.
    burstableSidecar('decrease init container memory requests only', G, burstable({ memReq: MEM.reduced })),
    burstableSidecar(
      'increase init container memory only',
      G,
      burstable({ memReq: MEM.increased, memLim: MEM.increasedLimit }),
    ),
  ];
}

/** The kubelet's MilliCPUToShares / MilliCPUToQuota and cgroup v2's shares-to-weight. */
function cgroupWant(s: Size) {
  const milli = (q: string | undefined) =>
    q === undefined ? 0 : q.endsWith('m') ? Number(q.slice(0, -1)) : Number(q) * 1000;
  const mi = (q: string | undefined) => (q === undefined ? 0 : Number(q.replace(/Mi$/, '')) * 1024 * 1024);
  const req = milli(s.cpuReq ?? s.cpuLim);
  const shares = req === 0 ? 2 : Math.max(2, Math.floor((req * 1024) / 1000));
  const lim = milli(s.cpuLim);
  return {
    shares,
    weight: 1 + Math.floor(((shares - 2) * 9999) / 262142),
    quota: lim === 0 ? -1 : Math.max(1000, Math.floor((lim * 100_000) / 1000)),
    memory: mi(s.memLim),
  };
}

/** cgroup v1 cpu.cfs_quota_us, cpu.shares, memory.limit_in_bytes or v2 cpu.max, cpu.weight, memory.max. */
const CGROUP_SCRIPT =
  'if [ -f /sys/fs/cgroup/cgroup.controllers ]; then echo v2; cat /sys/fs/cgroup/cpu.max /sys/fs/cgroup/cpu.weight /sys/fs/cgroup/memory.max; ' +
  'else echo v1; cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.shares /sys/fs/cgroup/memory/memory.limit_in_bytes; fi';

async function cgroupOf(ctx: ScenarioContext, pod: string, container: string) {
  const r = await kubectlExec(ctx, pod, container, ['sh', '-c', CGROUP_SCRIPT]);
  const lines = r.stdout.trim().split('\n');
  if (lines[0] === 'v2') {
    const [quota] = (lines[1] ?? '').split(' ');
    const memory = lines[3] === 'max' ? 0 : Number(lines[3]);
    return {
      version: 'v2',
      raw: r,
      quota: quota === 'max' ? -1 : Number(quota),
      weight: Number(lines[2]),
      memory,
    };
  }
  // An unlimited v1 memory cgroup shows a page-rounded huge number.
  const memory = Number(lines[3]) > 2 ** 60 ? 0 : Number(lines[3]);
  return { version: 'v1', raw: r, quota: Number(lines[1]), shares: Number(lines[2]), memory };
}

/** The container's own cgroup files hold the size: VerifyPodContainersCgroupValues. */
async function expectCgroup(ctx: ScenarioContext, pod: string, size: Size, when: string, container = 'c1') {
  const want = cgroupWant(size);
  const who = container === 'c1' ? pod : `${pod}/${container}`;
  const got = await ctx.check.eventually(
    `${who} ${when}: its cgroup files hold the size`,
    () => cgroupOf(ctx, pod, container),
    (g) =>
      g.quota === want.quota &&
      g.memory === want.memory &&
      (g.version === 'v2' ? g.weight === want.weight : g.shares === want.shares),
    { timeoutMs: 30_000, intervalMs: 1000, expected: want },
  );
  ctx.note(`${who} ${when}: cgroup ${got.version}`, { quota: got.quota, memory: got.memory });
}

const sameSize = (r: V1ResourceRequirements | undefined, s: Size) => {
  const pick = (list: Record<string, string>) =>
    Object.fromEntries(['cpu', 'memory', EXTENDED].filter((k) => list[k]).map((k) => [k, list[k]]));
  return (
    JSON.stringify(requirements(s)) ===
    JSON.stringify({
      ...(r?.requests ? { requests: pick(r.requests) } : {}),
      ...(r?.limits ? { limits: pick(r.limits) } : {}),
    })
  );
};

/** What one container (or sidecar, `init`) should show: its size in spec and status, and its restarts. */
interface Want {
  name: string;
  size: Size;
  restarts: number;
  init?: boolean;
}

/** WaitForPodResizeActuation: spec, status.resources and restarts as expected, no resize condition left. */
function resizedAll(p: V1Pod, want: Want[]): boolean {
  const resizing = (p.status?.conditions ?? []).some(
    (x) => x.type === 'PodResizePending' || x.type === 'PodResizeInProgress',
  );
  return (
    !resizing &&
    want.every((w) => {
      const specs = w.init ? p.spec?.initContainers : p.spec?.containers;
      const statuses = w.init ? p.status?.initContainerStatuses : p.status?.containerStatuses;
      const c = specs?.find((x) => x.name === w.name);
      const s = statuses?.find((x) => x.name === w.name);
      return (
        sameSize(c?.resources, w.size) &&
        sameSize(s?.resources, w.size) &&
        s?.restartCount === w.restarts &&
        s.state?.running !== undefined
      );
    })
  );
}

const resized = (p: V1Pod, size: Size, restarts: number) => resizedAll(p, [{ name: 'c1', size, restarts }]);

/**
 * Why resizedAll can no longer be met: a container restarted more often than expected (restart
 * counts only grow; upstream's restart check fails then too), or the pod ended.
 */
function restartedPast(p: V1Pod, want: Want[]): string | undefined {
  for (const w of want) {
    const statuses = w.init ? p.status?.initContainerStatuses : p.status?.containerStatuses;
    const n = statuses?.find((x) => x.name === w.name)?.restartCount ?? 0;
    if (n > w.restarts) return `container ${w.name} restarted ${n} times, expected ${w.restarts}`;
  }
  return endedPhase(p);
}

/** Waits until spec and status carry each container's size and restart count (resizedAll). */
const waitResized = (ctx: ScenarioContext, pod: string, what: string, want: Want[]) =>
  waitForPod(
    ctx,
    pod,
    what,
    (p) => resizedAll(p, want),
    POD_START_MS,
    (p) => restartedPast(p, want),
  );
/** waitResized for the one container c1. */
const waitResized1 = (ctx: ScenarioContext, pod: string, what: string, size: Size, restarts: number) =>
  waitResized(ctx, pod, what, [{ name: 'c1', size, restarts }]);

/**
 * kubectl 1.33 patch --subresource resize with each named container's new resources; a sidecar's
 * (`init`) go in spec.initContainers.
 */
async function resizeAll(
  ctx: ScenarioContext,
  pod: string,
  sizes: { name: string; size: Size; init?: boolean }[],
) {
  const entries = (init: boolean) =>
    sizes
      .filter((c) => (c.init ?? false) === init)
      .map((c) => ({ name: c.name, resources: requirements(c.size) }));
  const containers = entries(false);
  const initContainers = entries(true);
  const spec = {
    ...(containers.length > 0 ? { containers } : {}),
    ...(initContainers.length > 0 ? { initContainers } : {}),
  };
  return patchResize(ctx, pod, spec);
}

/** kubectl 1.33 patch --subresource resize of the pod's spec. */
const patchResize = (ctx: ScenarioContext, pod: string, spec: object) =>
  ctx.kubectl(
    [
      '-n',
      ctx.namespace,
      'patch',
      'pod',
      pod,
      '--subresource',
      'resize',
      '--patch',
      JSON.stringify({ spec }),
    ],
    { version: '1.33' },
  );

const resize = (ctx: ScenarioContext, pod: string, size: Size) => resizeAll(ctx, pod, [{ name: 'c1', size }]);

/** kubectl 1.33 strategic merge patch of this node's status subresource, as AddExtendedResource sends. */
const patchNodeStatus = (ctx: ScenarioContext, list: Record<string, string | null>) =>
  ctx.kubectl(
    [
      'patch',
      'node',
      ctx.nodeName,
      '--subresource',
      'status',
      '--type',
      'strategic',
      '--patch',
      JSON.stringify({ status: { capacity: list, allocatable: list } }),
    ],
    { version: '1.33' },
  );

/** e2enode.AddExtendedResource, `body`, then RemoveExtendedResource, each waited for in the node's capacity. */
async function withExtendedResource(ctx: ScenarioContext, body: () => Promise<void>): Promise<void> {
  const capacity = async () => (await ctx.core.readNode({ name: ctx.nodeName })).status?.capacity?.[EXTENDED];
  await patchNodeStatus(ctx, { [EXTENDED]: '123' });
  await ctx.check.eventually(`node has ${EXTENDED} capacity`, capacity, (q) => q === '123', {
    timeoutMs: 30_000,
    intervalMs: 1_000,
    expected: '123',
  });
  try {
    await body();
  } finally {
    await patchNodeStatus(ctx, { [EXTENDED]: null });
    await ctx.check.eventually(`node ${EXTENDED} capacity removed`, capacity, (q) => q === undefined, {
      timeoutMs: 30_000,
      intervalMs: 1_000,
      expected: 'no such capacity',
    });
  }
}

async function runCase(ctx: ScenarioContext, c: Case, index: number): Promise<void> {
  if (c.addExtendedResource) {
    const { addExtendedResource: _, ...rest } = c;
    return withExtendedResource(ctx, () => runCase(ctx, rest, index));
  }
  const pod = `resize-${index}`;
  const policy = [
    { resourceName: 'cpu', restartPolicy: 'NotRequired' },
    { resourceName: 'memory', restartPolicy: c.memPolicy ?? 'NotRequired' },
  ];
  await createPod(
    ctx,
    podFor(ctx, pod, {
      containers: [
        sh(ctx, 'c1', INFINITE_SLEEP, {
          resources: requirements(c.original),
          resizePolicy: policy,
        }),
      ],
    }),
  );
  await waitResized1(ctx, pod, 'Running at its original size', c.original, 0);
  await expectCgroup(ctx, pod, c.original, 'before the resize');

  const patchedAt = Date.now();
  const out = await resize(ctx, pod, c.patch);
  ctx.check.equal(`${pod}: kubectl 1.33 patch --subresource resize`, out.stdout.trim(), `pod/${pod} patched`);
  const restarts = c.restarts ?? 0;
  await waitResized1(
    ctx,
    pod,
    `resized (${JSON.stringify(c.expected)}, ${restarts} restarts)`,
    c.expected,
    restarts,
  );
  // Informational: kubectl's patch to the size in the pod's status (the wait polls every 500 ms).
  ctx.note(`${pod}: resized in ${Date.now() - patchedAt} ms`, { case: c.name });
  await expectCgroup(ctx, pod, c.expected, 'after the resize');

  if (c.rollback) {
    await resize(ctx, pod, c.original);
    // A resize that restarted the container restarts it again on the way back.
    await waitResized1(ctx, pod, 'rolled back to its original size', c.original, restarts * 2);
    await expectCgroup(ctx, pod, c.original, 'after the rollback');
  }
}

/** A case of several containers: created, patched all at once, judged container by container. */
async function runMultiCase(
  ctx: ScenarioContext,
  c: { name: string; containers: ContainerCase[] },
  index: number,
): Promise<void> {
  const pod = `resize-m${index}`;
  const container = (x: ContainerCase) =>
    sh(ctx, x.name, INFINITE_SLEEP, {
      resources: requirements(x.original),
      resizePolicy: [
        { resourceName: 'cpu', restartPolicy: x.cpuPolicy ?? 'NotRequired' },
        { resourceName: 'memory', restartPolicy: x.memPolicy ?? 'NotRequired' },
      ],
      ...(x.init ? { restartPolicy: 'Always' } : {}),
    });
  const sidecars = c.containers.filter((x) => x.init);
  await createPod(
    ctx,
    podFor(ctx, pod, {
      containers: c.containers.filter((x) => !x.init).map(container),
      ...(sidecars.length > 0 ? { initContainers: sidecars.map(container) } : {}),
    }),
  );
  const want = (size: (x: ContainerCase) => Size, restarts: (x: ContainerCase) => number) =>
    c.containers.map((x) => ({ name: x.name, size: size(x), restarts: restarts(x), init: x.init }));
  const before = want(
    (x) => x.original,
    () => 0,
  );
  await waitResized(ctx, pod, 'Running at its original sizes', before);
  const out = await resizeAll(
    ctx,
    pod,
    c.containers.map((x) => ({ name: x.name, size: x.expected, init: x.init })),
  );
  // An empty resize changes nothing, and kubectl says so.
  ctx.check.ok(
    `${pod}: kubectl 1.33 patch --subresource resize`,
    [`pod/${pod} patched`, `pod/${pod} patched (no change)`].includes(out.stdout.trim()),
    out.stdout.trim(),
    `pod/${pod} patched`,
  );
  const after = want(
    (x) => x.expected,
    (x) => x.restarts ?? 0,
  );
  await waitResized(ctx, pod, `resized (${JSON.stringify(after)})`, after);
  for (const x of c.containers) await expectCgroup(ctx, pod, x.expected, 'after the resize', x.name);
}

/** A resize beyond the node's allocatable: PodResizePending, reason Infeasible, the old size kept. */
async function infeasible(ctx: ScenarioContext): Promise<void> {
  const pod = 'resize-infeasible';
  const size = guaranteed(CPU.original, MEM.original);
  await createPod(
    ctx,
    podFor(ctx, pod, {
      containers: [sh(ctx, 'c1', INFINITE_SLEEP, { resources: requirements(size) })],
    }),
  );
  await waitResized1(ctx, pod, 'Running', size, 0);
  await resize(ctx, pod, guaranteed('1000', MEM.original));
  const p = await waitForPod(
    ctx,
    pod,
    'PodResizePending Infeasible',
    (q) =>
      (q.status?.conditions ?? []).some((x) => x.type === 'PodResizePending' && x.reason === 'Infeasible'),
    POD_START_MS,
  );
  const cond = p.status?.conditions?.find((x) => x.type === 'PodResizePending');
  ctx.check.ok(
    `${pod}: the Infeasible message names cpu and the node's capacity`,
    /^Node didn't have enough capacity: cpu, requested: 1000000, capacity: \d+$/.test(cond?.message ?? ''),
    cond,
  );
  ctx.check.ok(
    `${pod}: still runs at its allocated size`,
    sameSize(p.status?.containerStatuses?.[0]?.resources, size),
    podSummary(p),
  );
  await expectCgroup(ctx, pod, size, 'after the infeasible resize');
}

/** doPodResizeErrorTests: a BestEffort pod asking for memory would change its QoS class. */
const BEST_EFFORT = 'BestEffort pod - try requesting memory, expect error';
async function bestEffort(ctx: ScenarioContext): Promise<void> {
  const pod = 'resize-besteffort';
  await createPod(ctx, podFor(ctx, pod, { containers: [sh(ctx, 'c1', INFINITE_SLEEP)] }));
  await waitForPod(
    ctx,
    pod,
    'Running',
    (p) => p.status?.containerStatuses?.[0]?.state?.running !== undefined,
    POD_START_MS,
  );
  const out = await resize(ctx, pod, { memReq: '400Mi' });
  ctx.check.ok(
    `${pod}: kubectl patch --subresource resize is refused: Pod QOS Class may not change as a result of resizing`,
    out.code !== 0 && out.stderr.includes('Pod QOS Class may not change as a result of resizing'),
    out,
  );
  const p = await readPod(ctx, pod);
  ctx.check.equal(`${pod}: spec unchanged`, JSON.stringify(p.spec?.containers?.[0]?.resources ?? {}), '{}');
}

/**
 * The rest of doPodResizeErrorTests: patches the apiserver refuses, sent as upstream's
 * MakeResizePatch makes them (a two-way merge patch: null for a removed value, $setElementOrder for
 * a new order). Each cause of the refusal is in kubectl's answer, and the pod keeps its size in
 * spec and status.
 */
const REORDERED = 'containers may not be renamed or reordered on resize';
const REFUSED: { name: string; containers: Size[]; patch: object; causes: string[] }[] = [
  {
    name: `${BURSTABLE}remove memory limits`,
    containers: [burstable()],
    patch: { containers: [{ name: 'c1', resources: { limits: { memory: null } } }] },
    causes: ['resource limits cannot be removed'],
  },
  {
    name: `${BURSTABLE}remove CPU limits`,
    containers: [burstable()],
    patch: { containers: [{ name: 'c1', resources: { limits: { cpu: null } } }] },
    causes: ['resource limits cannot be removed'],
  },
  {
    name: 'Burstable QoS pod, one container with memory requests + limits, cpu requests - remove CPU requests',
    containers: [{ cpuReq: CPU.original, memReq: MEM.original, memLim: MEM.originalLimit }],
    patch: { containers: [{ name: 'c1', resources: { requests: { cpu: null } } }] },
    causes: ['resource requests cannot be removed'],
  },
  {
    name: 'Burstable QoS pod, one container with CPU requests + limits, cpu requests - remove memory requests',
    containers: [{ cpuReq: CPU.original, cpuLim: CPU.originalLimit, memReq: MEM.original }],
    patch: { containers: [{ name: 'c1', resources: { requests: { memory: null } } }] },
    causes: ['resource requests cannot be removed'],
  },
  {
    name: 'Burstable QoS pod, two containers with cpu & memory requests + limits - reorder containers',
    containers: [burstable(), burstable()],
    patch: { '$setElementOrder/containers': [{ name: 'c2' }, { name: 'c1' }] },
    causes: [
      `spec.containers[0].name: Forbidden: ${REORDERED}`,
      `spec.containers[1].name: Forbidden: ${REORDERED}`,
    ],
  },
];

async function refused(ctx: ScenarioContext, c: (typeof REFUSED)[number], index: number): Promise<void> {
  const pod = `resize-refused-${index}`;
  const want = c.containers.map((size, i) => ({ name: `c${i + 1}`, size, restarts: 0 }));
  await createPod(
    ctx,
    podFor(ctx, pod, {
      containers: want.map((w) => sh(ctx, w.name, INFINITE_SLEEP, { resources: requirements(w.size) })),
    }),
  );
  await waitResized(ctx, pod, 'Running at its size', want);
  const out = await patchResize(ctx, pod, c.patch);
  ctx.check.ok(
    `${pod}: kubectl patch --subresource resize is refused: ${c.causes.join('; ')}`,
    out.code !== 0 && c.causes.every((cause) => out.stderr.includes(cause)),
    out,
  );
  const p = await readPod(ctx, pod);
  ctx.check.ok(`${pod}: spec and status keep the size`, resizedAll(p, want), podSummary(p));
}

/**
 * doPodResizeMemoryLimitDecreaseTest: a slightly lowered memory limit is made; one far below the
 * container's use is not (PodResizeInProgress, reason Error, the kubelet's "below current usage"
 * message, the viable size kept); the revert to the original is made.
 */
const MEMORY_LIMIT_DECREASE = 'decrease memory limit below usage';
async function memoryLimitDecrease(ctx: ScenarioContext): Promise<void> {
  const pod = 'resize-mem-below';
  const original: Size = { memReq: MEM.original, memLim: MEM.original };
  const viable: Size = { memReq: MEM.reduced, memLim: MEM.reduced };
  const nonViable: Size = { memReq: '10Ki', memLim: '10Ki' };
  await createPod(
    ctx,
    podFor(ctx, pod, {
      containers: [sh(ctx, 'c1', INFINITE_SLEEP, { resources: requirements(original) })],
    }),
  );
  await waitResized1(ctx, pod, 'Running at its original size', original, 0);

  await resize(ctx, pod, viable);
  await waitResized1(ctx, pod, 'resized to a slightly lowered limit', viable, 0);
  await expectCgroup(ctx, pod, viable, 'after the viable decrease');

  await resize(ctx, pod, nonViable);
  const inProgress = (q: V1Pod) => q.status?.conditions?.find((x) => x.type === 'PodResizeInProgress');
  const p = await waitForPod(
    ctx,
    pod,
    'PodResizeInProgress with reason Error, or the resize made',
    (q) => inProgress(q)?.reason === 'Error' || resized(q, nonViable, 0),
    POD_START_MS,
  );
  ctx.check.ok(
    `${pod}: the non-viable resize is not made, and not pending`,
    !resized(p, nonViable, 0) && !p.status?.conditions?.some((x) => x.type === 'PodResizePending'),
    podSummary(p),
  );
  ctx.check.ok(
    `${pod}: PodResizeInProgress says the memory limit is below current usage`,
    /memory limit \(\d+\) below current usage/.test(inProgress(p)?.message ?? ''),
    inProgress(p),
    'a message matching /memory limit \\(\\d+\\) below current usage/',
  );
  // Upstream checks the patch's response here; the pod's status says more: the memory limit the
  // runtime reports is still the viable one.
  ctx.check.equal(
    `${pod}: the status memory limit still matches the viable resize`,
    p.status?.containerStatuses?.[0]?.resources?.limits?.memory,
    MEM.reduced,
  );
  await expectCgroup(ctx, pod, viable, 'after the refused decrease');

  await resize(ctx, pod, original);
  await waitResized1(ctx, pod, 'reverted to its original size', original, 0);
  await expectCgroup(ctx, pod, original, 'after the revert');
}

export const podResize: Scenario = {
  name: 'pod-resize',
  estimateMs: 180_000,
  isolation: 'namespace',
  description:
    'pod_resize.go (1.33): Guaranteed and Burstable pods resized up and down in place with kubectl 1.33 patch --subresource resize, judged from the container cgroup files (v1 or v2); RestartContainer restarts; an infeasible resize stays PodResizePending/Infeasible; a QoS-changing resize is refused; a memory limit below the use stays PodResizeInProgress/Error; restartable init containers (sidecars) resized in place beside their app container',
  needs: ['real-containers'],
  upstream: [
    ...[...CASES, ...MULTI_CASES].map((c) => ({ file: FILE, case: `${DESCRIBE} ${c.name}` })),
    { file: FILE, case: `${DESCRIBE} ${BEST_EFFORT}` },
    ...REFUSED.map((c) => ({ file: FILE, case: `${DESCRIBE} ${c.name}` })),
    { file: FILE, case: `${DESCRIBE} ${MEMORY_LIMIT_DECREASE}` },
  ],
  // Room for upstream's own waits (5 min each) on a busy host: CI's Docker 26 cell once needed 40 s
  // to start an init container, and the scenario's guard must not be what fails first.
  timeoutMs: 900_000,
  async run(ctx) {
    // A pod per case, ten at a time, so each case's waits measure its own pod, not a crowded node.
    await allChecksLimited(10, [
      ...CASES.map((c, i) => () => runCase(ctx, c, i)),
      ...MULTI_CASES.map((c, i) => () => runMultiCase(ctx, c, i)),
      () => infeasible(ctx),
      () => bestEffort(ctx),
      ...REFUSED.map((c, i) => () => refused(ctx, c, i)),
      () => memoryLimitDecrease(ctx),
    ]);
  },
};
