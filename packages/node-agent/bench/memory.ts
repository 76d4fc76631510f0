// The agent's memory as upstream's density test reads the kubelet's (test/e2e_node/density_test.go
// with resource_collector.go): cAdvisor's `Memory.RSS` of the kubelet's cgroup, polled every
// 500 ms, and checked against the limit at the latest sample, taken when the last pod was seen
// running. cAdvisor's RSS is the cgroup's anonymous memory (memory.stat `total_rss` on cgroup v1,
// `anon` on v2): it leaves out file-backed pages, such as the mapped `node` binary (about 36 MiB
// of VmRSS that any Node process has). For one process that is RssAnon in /proc/<pid>/status.
// VmRSS (anonymous + file + shmem) is recorded next to it.
import { readFileSync } from 'node:fs';

export interface ProcessMemory {
  /** Anonymous resident memory: what cAdvisor's RSS counts (upstream's figure). */
  rssAnonBytes: number;
  /** Everything resident, file-backed pages included. */
  vmRssBytes: number;
  /** VmRSS's peak so far. */
  vmHwmBytes: number;
}

/** Parses /proc/<pid>/status; a field that is missing is an error, not a zero. */
export function parseProcStatus(text: string): ProcessMemory {
  const kib = (field: string) => {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(text);
    if (!m) throw new Error(`/proc status has no ${field}`);
    return Number(m[1]) * 1024;
  };
  return { rssAnonBytes: kib('RssAnon'), vmRssBytes: kib('VmRSS'), vmHwmBytes: kib('VmHWM') };
}

export const processMemory = (pid: number): ProcessMemory =>
  parseProcStatus(readFileSync(`/proc/${pid}/status`, 'utf8'));

export const mib = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;

/** One density step: the agent's memory with `pods` pods running. */
export interface DensityMemory {
  pods: number;
  /** Upstream's figure: RssAnon at the sample taken when the last pod was seen running. */
  rssAnonMib: number;
  /** The same after `settleSeconds`, once the burst's garbage is collected. */
  settledRssAnonMib: number;
  vmRssMib: number;
  settledVmRssMib: number;
  peakVmRssMib: number;
  settleSeconds: number;
  /** RssAnon, MiB, each second while settling. */
  settleSamplesMib: number[];
}

/** Builds a step's record from the sample at all-started and the ones after it (the last is the settled one). */
export function densityMemory(
  pods: number,
  atStarted: ProcessMemory,
  settle: ProcessMemory[],
): DensityMemory {
  const settled = settle.at(-1) ?? atStarted;
  return {
    pods,
    rssAnonMib: mib(atStarted.rssAnonBytes),
    settledRssAnonMib: mib(settled.rssAnonBytes),
    vmRssMib: mib(atStarted.vmRssBytes),
    settledVmRssMib: mib(settled.vmRssBytes),
    peakVmRssMib: mib(Math.max(atStarted.vmHwmBytes, ...settle.map((s) => s.vmHwmBytes))),
    settleSeconds: settle.length,
    settleSamplesMib: settle.map((s) => mib(s.rssAnonBytes)),
  };
}
