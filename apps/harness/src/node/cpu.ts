// CPU time as the kernel accounts it: a container's from its cgroup, the host's from /proc/stat.
// A cell's node container holds the runtime, the CRI shim, our agent and (under kubepods/) the
// pods, so its cgroup is what the cell cost the node; /proc/stat is the whole host, parallel cells,
// apiserver and harness included. Issue 32 measures the matrix in these CPU-seconds.
import { access, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type Docker from 'dockerode';

export const CGROUP_ROOT = '/sys/fs/cgroup';
export const PROC_ROOT = '/proc';

/** Reads a CPU counter: seconds used so far. */
export type CpuClock = () => Promise<number>;

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

/**
 * The clock of the cgroup that `procCgroup` (the text of /proc/<pid>/cgroup, as this process sees
 * it) names, under a cgroupfs mounted at `root`: cgroup v1's cpuacct.usage (ns) when the cpuacct
 * controller is mounted (also on a hybrid host, whose v2 tree has no controllers), else v2's
 * cpu.stat usage_usec. The root cgroup is refused: it would be the whole host.
 */
export async function cgroupCpuClock(procCgroup: string, root = CGROUP_ROOT): Promise<CpuClock> {
  const entries = procCgroup
    .trim()
    .split('\n')
    .map((line) => {
      const [id = '', controllers = '', ...path] = line.split(':');
      return { id, controllers, path: path.join(':') };
    });
  const inRoot = (path: string) => {
    if (path === '/' || path === '')
      throw new Error('the process is in the root cgroup: its CPU would be the host');
    return path;
  };
  const v1 = entries.find((e) => e.controllers.split(',').includes('cpuacct'));
  if (v1)
    for (const mount of new Set(['cpuacct', v1.controllers, 'cpu,cpuacct'])) {
      const file = join(root, mount, inRoot(v1.path), 'cpuacct.usage');
      if (await exists(file)) return async () => Number((await readFile(file, 'utf8')).trim()) / 1e9;
    }
  const v2 = entries.find((e) => e.id === '0' && e.controllers === '');
  if (v2)
    for (const mount of ['', 'unified']) {
      const file = join(root, mount, inRoot(v2.path), 'cpu.stat');
      if (await exists(file)) return async () => usageUsec(await readFile(file, 'utf8'), file) / 1e6;
    }
  throw new Error(`no CPU accounting under ${root} for the cgroup of:\n${procCgroup.trim()}`);
}

function usageUsec(cpuStat: string, file: string): number {
  const line = cpuStat.split('\n').find((l) => l.startsWith('usage_usec '));
  if (!line) throw new Error(`${file} has no usage_usec`);
  return Number(line.slice('usage_usec '.length));
}

/** The clock of a container of the host's engine: its main process's cgroup, read from the host's /proc. */
export async function containerCpuClock(
  docker: Docker,
  id: string,
  roots: { cgroup?: string; proc?: string } = {},
): Promise<CpuClock> {
  const { State } = await docker.getContainer(id).inspect();
  if (!State.Pid) throw new Error(`container ${id.slice(0, 12)} is not running`);
  const procCgroup = await readFile(join(roots.proc ?? PROC_ROOT, String(State.Pid), 'cgroup'), 'utf8');
  return cgroupCpuClock(procCgroup, roots.cgroup);
}

/** The host's CPU time so far, seconds summed over its CPUs: busy (neither idle nor iowait) and all. */
export interface HostCpu {
  busy: number;
  total: number;
}

/** The aggregate `cpu` line of /proc/stat (USER_HZ ticks): user nice system idle iowait irq softirq steal. */
export function parseProcStat(stat: string, ticksPerSecond = 100): HostCpu {
  const line = stat.split('\n').find((l) => l.startsWith('cpu '));
  if (!line) throw new Error('/proc/stat has no aggregate cpu line');
  // guest and guest_nice are already counted in user and nice.
  const [user, nice, system, idle, iowait = 0, irq = 0, softirq = 0, steal = 0] = line
    .trim()
    .split(/\s+/)
    .slice(1, 9)
    .map(Number);
  if ([user, nice, system, idle].some((n) => n === undefined || Number.isNaN(n)))
    throw new Error(`/proc/stat's cpu line is malformed: ${line}`);
  const busy = user! + nice! + system! + irq + softirq + steal;
  return { busy: busy / ticksPerSecond, total: (busy + idle! + iowait) / ticksPerSecond };
}

/** The host's counters, or undefined where there is no /proc/stat to read. */
export const hostCpu = (proc = PROC_ROOT): Promise<HostCpu | undefined> =>
  readFile(join(proc, 'stat'), 'utf8').then(parseProcStat, () => undefined);

/** CPU-seconds rounded to what the accounting can tell apart (10 ms ticks). */
export const roundSeconds = (s: number): number => Math.round(s * 100) / 100;
