import { Quantity } from '@kh/apimachinery';
import type { Scenario, ScenarioContext } from '@kh/harness';
import { type NodeCgroups, nodeCgroups, readCgroupFile } from '../support/cgroups.js';

// Upstream's node_container_manager_test.go: the agent restarted with kube and system
// reservations (cpu, memory, pids), a 100Mi memory.available hard threshold and
// enforceNodeAllocatable [pods, kube-reserved, system-reserved]. kubepods then holds capacity
// minus the reservations (not the eviction threshold), each reserved cgroup its reservation, and
// status.allocatable is net of the eviction threshold too. Read on the node, as upstream reads
// the host's /sys/fs/cgroup. The reserved cgroups sit under the node container's own cgroup,
// next to kubepods, where upstream puts them at the root.
const FILE = 'test/e2e_node/node_container_manager_test.go';

const SYSTEM_RESERVED = { cpu: '100m', memory: '100Mi', pid: '1000' };
const KUBE_RESERVED = { cpu: '100m', memory: '100Mi', pid: '738' };
const Mi = 2n ** 20n;
const CONTROLLERS_V1 = ['cpu', 'cpuacct', 'cpuset', 'memory', 'pids'];

/** MilliCPUToShares: 1024 per CPU, at least 2. */
const shares = (milliCPU: bigint) => {
  const s = (milliCPU * 1024n) / 1000n;
  return s < 2n ? 2n : s;
};

/** The node kernel's task limit: the smaller of pid_max and threads-max (pidlimit.Stats). */
async function maxPID(ctx: ScenarioContext): Promise<bigint> {
  const r = await ctx.backend.host.exec(['cat', '/proc/sys/kernel/pid_max', '/proc/sys/kernel/threads-max']);
  const values = r.output
    .split(/\s+/)
    .filter((v) => /^\d+$/.test(v))
    .map(BigInt);
  if (r.exitCode !== 0 || values.length === 0)
    throw new Error(`cannot read the node's pid limits: ${r.output}`);
  return values.reduce((a, b) => (b < a ? b : a));
}

/** Checks a cgroup's cpu.shares, memory limit and pids.max (their v2 counterparts on v2). */
async function checkCgroup(
  ctx: ScenarioContext,
  cg: NodeCgroups,
  label: string,
  path: string,
  want: Record<'cpu.shares' | 'memory.limit_in_bytes' | 'pids.max', bigint>,
): Promise<void> {
  for (const [file, value] of Object.entries(want)) {
    const { got, convert } = await readCgroupFile(ctx, cg, path, file);
    ctx.check.equal(`${label} ${file}${cg.v2 ? ' (v2 counterpart)' : ''}`, got, convert(String(value)));
  }
}

export const nodeAllocatable: Scenario = {
  name: 'node-allocatable',
  estimateMs: 30_000,
  // It restarts the agent twice and makes cgroups next to kubepods.
  isolation: 'node',
  description:
    'enforceNodeAllocatable [pods, kube-reserved, system-reserved]: kubepods limited to capacity minus the reservations (cpu.shares, memory limit, pids.max; no eviction threshold), the reserved cgroups to their reservations, status.allocatable net of hard eviction too; kubepods back to capacity after a restart without reservations',
  needs: ['real-containers'],
  upstream: [
    {
      file: FILE,
      case: 'Node Container Manager Validate Node Allocatable sets up the node and runs the test',
    },
  ],
  timeoutMs: 180_000,
  async run(ctx) {
    const { check } = ctx;
    const cg = await nodeCgroups(ctx);
    const root = cg.kubepods.slice(0, cg.kubepods.lastIndexOf('/'));
    const reserved = { kube: `${root}/kube-reserved`, system: `${root}/system-reserved` };
    // createTemporaryCgroupsForReservation: the cgroups exist before the agent enforces them.
    const dirs = Object.values(reserved).flatMap((p) =>
      cg.v2 ? [cg.dir('', p)] : CONTROLLERS_V1.map((c) => cg.dir(c, p)),
    );
    const made = await ctx.backend.host.exec(['mkdir', '-p', ...dirs]);
    if (made.exitCode !== 0) throw new Error(`cannot make the reserved cgroups: ${made.output}`);
    let restored = false;
    try {
      await ctx.reconfigureAgent({
        enforceNodeAllocatable: ['pods', 'kube-reserved', 'system-reserved'],
        systemReserved: SYSTEM_RESERVED,
        kubeReserved: KUBE_RESERVED,
        // The harness's hard memory.available threshold is upstream's 100Mi already.
        kubeReservedCgroup: reserved.kube,
        systemReservedCgroup: reserved.system,
      });
      const node = await ctx.core.readNode({ name: ctx.nodeName });
      const capacity = node.status?.capacity ?? {};
      const cpu = Quantity.parse(capacity.cpu ?? '0').milliValue();
      const memory = Quantity.parse(capacity.memory ?? '0').value();
      const pids = await maxPID(ctx);
      ctx.note('node capacity', { cpu: capacity.cpu, memory: capacity.memory, maxPID: String(pids) });

      // Allocatable for the cgroup: 200m, 200Mi and 1738 pids reserved, no eviction threshold.
      await checkCgroup(ctx, cg, 'kubepods', cg.kubepods, {
        'cpu.shares': shares(cpu - 200n),
        'memory.limit_in_bytes': memory - 200n * Mi,
        'pids.max': pids - 1738n,
      });
      // Allocatable for the scheduler also keeps the 100Mi hard eviction threshold.
      await check.eventually(
        'status.allocatable: cpu capacity − 200m, memory capacity − 300Mi',
        async () => (await ctx.core.readNode({ name: ctx.nodeName })).status?.allocatable ?? {},
        (a) =>
          a.cpu !== undefined &&
          a.memory !== undefined &&
          Quantity.parse(a.cpu).milliValue() === cpu - 200n &&
          Quantity.parse(a.memory).value() === memory - 300n * Mi,
        { timeoutMs: 60_000, expected: { cpuMilli: String(cpu - 200n), memory: String(memory - 300n * Mi) } },
      );
      await checkCgroup(ctx, cg, 'kube-reserved', reserved.kube, {
        'cpu.shares': shares(100n),
        'memory.limit_in_bytes': 100n * Mi,
        'pids.max': 738n,
      });
      await checkCgroup(ctx, cg, 'system-reserved', reserved.system, {
        'cpu.shares': shares(100n),
        'memory.limit_in_bytes': 100n * Mi,
        'pids.max': 1000n,
      });

      // The run's configuration has no reservations: the restarted agent gives kubepods the capacity back.
      await ctx.reconfigureAgent({});
      restored = true;
      await checkCgroup(ctx, cg, 'kubepods after a restart without reservations', cg.kubepods, {
        'cpu.shares': shares(cpu),
        'memory.limit_in_bytes': memory,
        'pids.max': pids,
      });
    } finally {
      if (!restored) await ctx.reconfigureAgent({});
      // destroyTemporaryCgroupsForReservation (v1's cpu and cpuacct are one directory).
      await ctx.backend.host.exec(['sh', '-c', `rmdir ${dirs.join(' ')} 2>/dev/null; true`]);
    }
  },
};
