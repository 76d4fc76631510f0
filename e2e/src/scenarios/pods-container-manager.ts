import type { Scenario, ScenarioContext } from '@kh/harness';
import type { V1Pod, V1ResourceRequirements } from '@kubernetes/client-node';
import { isDir, type NodeCgroups, nodeCgroups, readCgroupFile } from '../support/cgroups.js';
import { allChecks } from '../support/concurrent.js';
import { createPod, podFor, sh, waitForRunning } from '../support/pods.js';

// Upstream's pods_container_manager_test.go (the QoS tiers and a pod cgroup per QoS class, made
// for the pod and removed with it) and pids_test.go (podPidsLimit becomes the pod cgroup's
// pids.max), read on the node as upstream's verifier pods read the host's /sys/fs/cgroup. Each
// pod also prints its own /proc/self/cgroup: the runtime put it where the kubelet said.
const CM_FILE = 'test/e2e_node/pods_container_manager_test.go';
const PIDS_FILE = 'test/e2e_node/pids_test.go';
const CM = 'Kubelet Cgroup Manager';

/** pids_test.go's podPidsLimit. */
const POD_PIDS_LIMIT = 1024;
const Mi = 2 ** 20;
/** Upstream's makePodToVerifyCgroupRemoved looks 10 times, 10 s apart. */
const REMOVAL_TIMEOUT_MS = 100_000;

const resources = (
  requests: Record<string, string>,
  limits: Record<string, string>,
): V1ResourceRequirements => ({
  requests,
  limits,
});

/** Upstream's three pods, by QoS class: their resources and their cgroup under kubepods. */
const PODS = [
  {
    name: 'guaranteed',
    tier: '',
    resources: resources({ cpu: '100m', memory: '100Mi' }, { cpu: '100m', memory: '100Mi' }),
    // ResourceConfigForPod: shares from the request, quota and memory from the limits.
    want: { 'cpu.shares': '102', 'cpu.cfs_quota_us': '10000', 'memory.limit_in_bytes': String(100 * Mi) },
  },
  {
    name: 'burstable',
    tier: '/burstable',
    resources: resources({ cpu: '100m', memory: '100Mi' }, { cpu: '200m', memory: '200Mi' }),
    want: { 'cpu.shares': '102', 'cpu.cfs_quota_us': '20000', 'memory.limit_in_bytes': String(200 * Mi) },
  },
  { name: 'besteffort', tier: '/besteffort', resources: undefined, want: { 'cpu.shares': '2' } },
];

/** The container's own cgroup from its /proc/self/cgroup: v1's memory line, or v2's 0:: line. */
function ownCgroup(procSelfCgroup: string): string | undefined {
  const lines = procSelfCgroup.split('\n').map((l) => l.trim().split(':'));
  const line =
    lines.find(([, c]) => c?.split(',').includes('memory')) ??
    lines.find(([id, c]) => id === '0' && c === '');
  return line?.slice(2).join(':');
}

async function podCase(ctx: ScenarioContext, cg: NodeCgroups, spec: (typeof PODS)[number]): Promise<void> {
  const { check } = ctx;
  const created: V1Pod = await createPod(
    ctx,
    podFor(ctx, spec.name, {
      containers: [
        sh(
          ctx,
          'c',
          'cat /proc/self/cgroup; exec sleep 3600',
          spec.resources ? { resources: spec.resources } : {},
        ),
      ],
    }),
  );
  const uid = created.metadata?.uid ?? '';
  const podCgroup = `${cg.kubepods}${spec.tier}/pod${uid}`;
  await waitForRunning(ctx, spec.name);

  // "Checking if the pod cgroup was created", in the controllers upstream's verifier looks at.
  for (const controller of cg.v2 ? [''] : ['memory', 'cpu', 'pids'])
    check.ok(
      `${spec.name}: pod cgroup ${podCgroup} exists${controller ? ` (${controller})` : ''}`,
      await isDir(ctx, cg.dir(controller, podCgroup)),
    );

  // From inside: the runtime made the container's cgroup under the pod's.
  const log = await check.eventually(
    `${spec.name}: the container printed its /proc/self/cgroup`,
    () => ctx.core.readNamespacedPodLog({ name: spec.name, namespace: ctx.namespace, container: 'c' }),
    (l) => ownCgroup(l) !== undefined,
    { timeoutMs: 20_000 },
  );
  const own = ownCgroup(log) ?? '';
  check.ok(
    `${spec.name}: /proc/self/cgroup is under ${podCgroup}/`,
    own.startsWith(`${podCgroup}/`),
    own,
    `${podCgroup}/<container>`,
  );

  // ResourceConfigForPod, and podPidsLimit as pids.max (pids_test.go).
  for (const [file, value] of Object.entries({ ...spec.want, 'pids.max': String(POD_PIDS_LIMIT) })) {
    const { got, convert } = await readCgroupFile(ctx, cg, podCgroup, file);
    check.equal(`${spec.name}: pod cgroup ${file}${cg.v2 ? ' (v2 counterpart)' : ''}`, got, convert(value));
  }

  // "Checking if the pod cgroup was deleted": housekeeping removes it once the pod is gone.
  await ctx.core.deleteNamespacedPod({ name: spec.name, namespace: ctx.namespace, gracePeriodSeconds: 1 });
  await check.eventually(
    `${spec.name}: pod cgroup removed after the pod was deleted`,
    async () => {
      const left: string[] = [];
      for (const controller of cg.v2 ? [''] : ['memory', 'cpu', 'pids'])
        if (await isDir(ctx, cg.dir(controller, podCgroup))) left.push(controller || 'unified');
      return left;
    },
    (left) => left.length === 0,
    { timeoutMs: REMOVAL_TIMEOUT_MS, intervalMs: 1_000, expected: 'no controller still has the pod cgroup' },
  );
}

export const podsContainerManager: Scenario = {
  name: 'pods-container-manager',
  estimateMs: 40_000,
  // It restarts the agent with podPidsLimit set.
  isolation: 'node',
  description:
    "pod cgroups per QoS class under kubepods (Guaranteed directly, burstable/, besteffort/) with ResourceConfigForPod's limits and podPidsLimit as pids.max, the container's own /proc/self/cgroup under its pod's, and the pod cgroup removed with the pod",
  needs: ['real-containers'],
  upstream: [
    {
      file: CM_FILE,
      case: `${CM} QOS containers On enabling QOS cgroup hierarchy Top level QoS containers should have been created`,
    },
    {
      file: CM_FILE,
      case: `${CM} Pod containers On scheduling a Guaranteed Pod Pod containers should have been created under the cgroup-root`,
    },
    {
      file: CM_FILE,
      case: `${CM} Pod containers On scheduling a BestEffort Pod Pod containers should have been created under the BestEffort cgroup`,
    },
    {
      file: CM_FILE,
      case: `${CM} Pod containers On scheduling a Burstable Pod Pod containers should have been created under the Burstable cgroup`,
    },
    {
      file: PIDS_FILE,
      case: 'PodPidsLimit With config updated with pids limits should set pids.max for Pod',
    },
  ],
  // Room for the agent's restarts, a pod start (PodStart, 5 min) and the cgroup's removal.
  timeoutMs: 540_000,
  async run(ctx) {
    const { check } = ctx;
    await ctx.reconfigureAgent({ podPidsLimit: POD_PIDS_LIMIT });
    try {
      const cg = await nodeCgroups(ctx);
      ctx.note(`node cgroups: ${cg.v2 ? 'v2' : 'v1'}, kubepods ${cg.kubepods}`);
      // "Top level QoS containers should have been created"; BestEffort's shares are the minimum.
      for (const tier of ['/burstable', '/besteffort'])
        for (const controller of cg.v2 ? [''] : ['memory', 'cpu'])
          check.ok(
            `QoS cgroup ${cg.kubepods}${tier} exists${controller ? ` (${controller})` : ''}`,
            await isDir(ctx, cg.dir(controller, `${cg.kubepods}${tier}`)),
          );
      const { got, convert } = await readCgroupFile(ctx, cg, `${cg.kubepods}/besteffort`, 'cpu.shares');
      check.equal('besteffort QoS cgroup cpu.shares is the minimum', got, convert('2'));
      await allChecks(PODS.map((spec) => podCase(ctx, cg, spec)));
    } finally {
      await ctx.reconfigureAgent({});
    }
  },
};
