// The kubelet's arithmetic from pod resources to cgroup values (pkg/kubelet/cm/helpers_linux.go):
// CPU requests become cpu.shares, CPU limits a CFS quota over a period, memory limits the memory
// limit, and the configured podPidsLimit the pids limit. cgroup v2 takes the same numbers as
// cpu.weight (converted from shares) and cpu.max.
import type { V1Pod } from '@kubernetes/client-node';
import { podLimits, podRequests } from '../admission/resources.js';
import { podQOSClass } from '../types/qos.js';

export const MIN_SHARES = 2n;
export const MAX_SHARES = 262144n;
const SHARES_PER_CPU = 1024n;
const MILLI_CPU_TO_CPU = 1000n;
/** The default CFS period (cpuCFSQuotaPeriod, 100 ms) in microseconds. */
export const QUOTA_PERIOD = 100000n;
/** The smallest quota the kernel accepts (1 ms). */
const MIN_QUOTA_PERIOD = 1000n;

/** What a cgroup is given. An absent field is left as it is. */
export interface ResourceConfig {
  cpuShares?: bigint;
  /** CFS quota in microseconds; -1 is no quota. */
  cpuQuota?: bigint;
  cpuPeriod?: bigint;
  /** Bytes. */
  memory?: bigint;
  /** Processes; -1 is no limit. */
  pidsLimit?: bigint;
}

/** CPU shares for milli-CPUs: 1024 per CPU, at least MIN_SHARES, at most MAX_SHARES. */
export function milliCPUToShares(milliCPU: bigint): bigint {
  if (milliCPU === 0n) return MIN_SHARES;
  const shares = (milliCPU * SHARES_PER_CPU) / MILLI_CPU_TO_CPU;
  if (shares < MIN_SHARES) return MIN_SHARES;
  return shares > MAX_SHARES ? MAX_SHARES : shares;
}

/** The CFS quota for milli-CPUs over `period` microseconds (0 for none), at least 1 ms. */
export function milliCPUToQuota(milliCPU: bigint, period: bigint): bigint {
  if (milliCPU === 0n) return 0n;
  const quota = (milliCPU * period) / MILLI_CPU_TO_CPU;
  return quota < MIN_QUOTA_PERIOD ? MIN_QUOTA_PERIOD : quota;
}

/** cgroup v2's cpu.weight (1..10000) for v1 shares (2..262144), as runc converts them. */
export function cpuSharesToCPUWeight(shares: bigint): bigint {
  if (shares === 0n) return 0n;
  return 1n + ((shares - 2n) * 9999n) / 262142n;
}

export interface PodResourceOptions {
  /** cpuCFSQuota: when false, the quota is -1 (no limit). */
  enforceCPULimits: boolean;
  /** cpuCFSQuotaPeriod in microseconds. */
  cpuPeriod: bigint;
}

/**
 * The pod cgroup's config (ResourceConfigForPod): shares from the requests for every class but
 * BestEffort (MIN_SHARES); a CFS quota only when every container has a CPU limit, and a memory
 * limit only when every container has one (always so for Guaranteed).
 */
export function resourceConfigForPod(
  pod: V1Pod,
  opts: PodResourceOptions = { enforceCPULimits: true, cpuPeriod: QUOTA_PERIOD },
): ResourceConfig {
  const qos = podQOSClass(pod);
  if (qos === 'BestEffort') return { cpuShares: MIN_SHARES };
  const requests = podRequests(pod);
  let cpuLimitsDeclared = true;
  let memoryLimitsDeclared = true;
  const limits = podLimits(pod, (l) => {
    if (!l.cpu) cpuLimitsDeclared = false;
    if (!l.memory) memoryLimitsDeclared = false;
  });
  const cpuShares = milliCPUToShares(requests.cpu ?? 0n);
  const cpuQuota = opts.enforceCPULimits ? milliCPUToQuota(limits.cpu ?? 0n, opts.cpuPeriod) : -1n;
  const memory = (limits.memory ?? 0n) / 1000n;
  const out: ResourceConfig = { cpuShares };
  if (qos === 'Guaranteed' || cpuLimitsDeclared) Object.assign(out, { cpuQuota, cpuPeriod: opts.cpuPeriod });
  if (qos === 'Guaranteed' || memoryLimitsDeclared) out.memory = memory;
  return out;
}
