// The node's cgroups as scenarios read them, from inside the node container as upstream's
// verifier pods read the host's /sys/fs/cgroup: v1 (one hierarchy per controller) or v2, with
// each v1 file's v2 counterpart (runc's conversions for shares and quota).
import type { ScenarioContext } from '@kh/harness';

/** The v2 file for each v1 one these checks read (runc's conversions for shares and quota). */
const V2_FILE: Record<string, [string, (v: string) => string]> = {
  'cpu.shares': ['cpu.weight', (v) => String(1 + Math.floor(((Number(v) - 2) * 9999) / 262142))],
  'cpu.cfs_quota_us': ['cpu.max', (v) => `${v} 100000`],
  'memory.limit_in_bytes': ['memory.max', (v) => v],
  'pids.max': ['pids.max', (v) => v],
};

export interface NodeCgroups {
  v2: boolean;
  kubepods: string;
  /** The directory of a cgroup path in a controller's hierarchy (v2: the one tree). */
  dir(controller: string, path: string): string;
}

export async function nodeCgroups(ctx: ScenarioContext): Promise<NodeCgroups> {
  const kubepods = ctx.backend.cgroupParent;
  if (!kubepods) throw new Error(`node ${ctx.nodeName} has no cgroup root`);
  const v2 =
    (await ctx.backend.host.exec(['test', '-f', '/sys/fs/cgroup/cgroup.controllers'])).exitCode === 0;
  return { v2, kubepods, dir: (c, p) => (v2 ? `/sys/fs/cgroup${p}` : `/sys/fs/cgroup/${c}${p}`) };
}

export const isDir = async (ctx: ScenarioContext, dir: string) =>
  (await ctx.backend.host.exec(['test', '-d', dir])).exitCode === 0;

/** A cgroup file read on the node, in the v1 name or its v2 counterpart. */
export async function readCgroupFile(ctx: ScenarioContext, cg: NodeCgroups, path: string, v1File: string) {
  const [controller] = v1File.split('.');
  const [file, convert] = cg.v2
    ? (V2_FILE[v1File] ?? [v1File, (v: string) => v])
    : [v1File, (v: string) => v];
  const r = await ctx.backend.host.exec(['cat', `${cg.dir(controller ?? '', path)}/${file}`]);
  return { got: r.exitCode === 0 ? r.output.trim() : `(${r.output.trim()})`, convert };
}
