import type { RuntimeRestart, ScenarioContext } from '@kh/harness';
import { NODE_LEASE_NAMESPACE } from '@kh/node-agent';

export const nodeCondition = async (ctx: ScenarioContext, type: string) =>
  (await ctx.core.readNode({ name: ctx.nodeName })).status?.conditions?.find((c) => c.type === type);

/** The node's Lease, which the agent renews in kube-node-lease. */
export const nodeLease = (ctx: ScenarioContext) =>
  ctx.coordination.readNamespacedLease({ name: ctx.nodeName, namespace: NODE_LEASE_NAMESPACE });

/** When the agent last renewed the node's Lease, in ms since the epoch. */
export const leaseRenewTime = async (ctx: ScenarioContext) =>
  new Date((await nodeLease(ctx)).spec?.renewTime ?? 0).getTime();

/** Cases of upstream's node_lease.go, by the text after its Describe and Context. */
export const nodeLeaseUpstream = (...its: string[]) =>
  its.map((it) => ({
    file: 'test/e2e/common/node/node_lease.go',
    case: `NodeLease when the NodeLease feature is enabled ${it}`,
  }));

/**
 * The node's runtime restart, which a scenario that `needs: ['runtime-restart']` is only ever run
 * with (the runner skips it on a node without one).
 */
export function runtimeRestart(ctx: ScenarioContext): RuntimeRestart {
  const restart = ctx.backend.restart;
  if (!restart) throw new Error(`${ctx.runtime}'s nodes cannot stop or restart their runtime`);
  return restart;
}

export type PressureType = 'MemoryPressure' | 'DiskPressure' | 'PIDPressure';

/** The kubelet's reason for each pressure condition while it is True. */
const PRESSURE_REASON: Record<PressureType, string> = {
  MemoryPressure: 'KubeletHasInsufficientMemory',
  DiskPressure: 'KubeletHasDiskPressure',
  PIDPressure: 'KubeletHasInsufficientPID',
};

/**
 * A pressure condition appears (with the kubelet's reason, checked as its own assertion) or
 * clears, as the eviction scenarios watch for it. `since` (ms): it must have cleared at or after
 * that moment, not in an earlier lull that node status has not yet reported the end of.
 */
export async function pressureCondition(
  ctx: ScenarioContext,
  type: PressureType,
  want: { status: 'True'; reason?: string } | { status: 'False'; name: string; since?: number },
  timeoutMs: number,
) {
  // Condition times are whole seconds on a real apiserver.
  const since = want.status === 'False' && want.since ? Math.floor(want.since / 1000) * 1000 : 0;
  const condition = await ctx.check.eventually(
    want.status === 'True' ? `${type}=True appears` : want.name,
    () => nodeCondition(ctx, type),
    (c) => c?.status === want.status && new Date(c.lastTransitionTime ?? 0).getTime() >= since,
    { timeoutMs, intervalMs: want.status === 'True' ? 1_000 : 2_000, expected: want },
  );
  if (want.status === 'True')
    ctx.check.equal(`${type} reason`, condition?.reason, want.reason ?? PRESSURE_REASON[type]);
  return condition;
}

async function execOk(ctx: ScenarioContext, cmd: string[]): Promise<string> {
  const r = await ctx.backend.host.exec(cmd);
  if (r.exitCode !== 0) throw new Error(`${cmd.join(' ')} failed on ${ctx.nodeName}: ${r.output}`);
  return r.output;
}

/** Bytes free for unprivileged writers on the filesystem holding `path` in the node (statfs f_bavail). */
export async function nodeFsAvailableBytes(ctx: ScenarioContext, path: string): Promise<number> {
  const out = await execOk(ctx, ['df', '-B1', '--output=avail', path]);
  const bytes = Number(out.trim().split('\n').pop());
  if (!Number.isFinite(bytes)) throw new Error(`df printed no size for ${path}: ${out}`);
  return bytes;
}

/**
 * The node's memory working set (usage minus inactive file pages) as the kubelet computes
 * memory.available, read from the node container's own cgroup: the pods' cgroup root minus
 * "/kubepods"; or kubepods' own (allocatableMemory.available). cgroup v1 and v2.
 */
export async function nodeMemoryWorkingSetBytes(
  ctx: ScenarioContext,
  of: 'node' | 'kubepods' = 'node',
): Promise<number> {
  const parent = ctx.backend.cgroupParent;
  if (!parent) throw new Error(`node ${ctx.nodeName} has no cgroup root`);
  const cgroup = of === 'kubepods' ? parent : parent.replace(/\/kubepods$/, '');
  const v1 = `/sys/fs/cgroup/memory${cgroup}`;
  const v2 = `/sys/fs/cgroup${cgroup}`;
  const script = `if [ -f ${v1}/memory.usage_in_bytes ]; then cat ${v1}/memory.usage_in_bytes; grep '^total_inactive_file ' ${v1}/memory.stat; else cat ${v2}/memory.current; grep '^inactive_file ' ${v2}/memory.stat; fi`;
  const [usage, inactive] = (await execOk(ctx, ['sh', '-c', script]))
    .trim()
    .split('\n')
    .map((l) => Number(l.split(' ').pop()));
  if (usage === undefined || inactive === undefined || !Number.isFinite(usage - inactive))
    throw new Error(`cannot read the memory use of cgroup ${cgroup}`);
  return Math.max(0, usage - inactive);
}
