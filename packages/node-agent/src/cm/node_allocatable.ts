// Node allocatable as the kubelet computes and enforces it (node_container_manager_linux.go).
// Two different numbers come out of the same reservations:
// - what the scheduler sees (status.allocatable): capacity minus kubeReserved, systemReserved
//   AND the hard eviction thresholds, so that pods are evicted before the node runs short;
// - what the `kubepods` cgroup is limited to: capacity minus kubeReserved and systemReserved
//   only. Eviction must be able to act before the kernel OOM-kills inside kubepods, so the hard
//   threshold stays inside the cgroup's limit.
// The cgroup's capacity also has the kernel's task limit as `pid`, which the scheduler never sees.
import type { EvictionThreshold, ResourceList } from '../config/resolve.js';
import { Quantity } from '../util/quantity.js';
import { milliCPUToShares, type ResourceConfig } from './helpers.js';

/** Process IDs as a reservable resource (pidlimit.PIDs): only cgroups use it. */
export const PID_RESOURCE = 'pid';

/** The kubelet's event reasons for enforcement. */
export const NODE_ALLOCATABLE_ENFORCED = 'NodeAllocatableEnforced';
export const FAILED_NODE_ALLOCATABLE_ENFORCEMENT = 'FailedNodeAllocatableEnforcement';

export interface Reservations {
  kubeReserved: ResourceList;
  systemReserved: ResourceList;
  evictionHard: readonly EvictionThreshold[];
}

/** The resource each hard eviction signal protects, when it protects one. */
const EVICTION_SIGNAL_RESOURCE: Record<string, string> = {
  'memory.available': 'memory',
  'nodefs.available': 'ephemeral-storage',
};

/**
 * A threshold's amount of `capacity`. A percentage is a float32 in the kubelet, multiplied in
 * float64 and truncated: 5% of 10Gi is 536870920, not 536870912.
 */
function thresholdQuantity(t: EvictionThreshold, capacity: Quantity): Quantity {
  if ('quantity' in t.value) return t.value.quantity;
  const bytes = Math.trunc(Number(capacity.value()) * Math.fround(t.value.percentage));
  return Quantity.fromValue(BigInt(bytes), 'BinarySI');
}

/**
 * What is kept from scheduling per resource of `capacity` (GetNodeAllocatableReservation):
 * kubeReserved + systemReserved + the hard eviction threshold of the resource; zero sums left out.
 */
export function nodeAllocatableReservation(r: Reservations, capacity: ResourceList): ResourceList {
  const out: ResourceList = {};
  for (const [name, cap] of Object.entries(capacity)) {
    let sum = Quantity.fromValue(0n);
    for (const list of [r.systemReserved, r.kubeReserved]) {
      const q = list[name];
      if (q) sum = sum.add(q);
    }
    for (const t of r.evictionHard)
      if (EVICTION_SIGNAL_RESOURCE[t.signal] === name) sum = sum.add(thresholdQuantity(t, cap));
    if (!sum.isZero()) out[name] = sum;
  }
  return out;
}

/** capacity − reservation per resource, never below zero (status.allocatable). */
export function allocatableFrom(capacity: ResourceList, reservation: ResourceList): ResourceList {
  const out: ResourceList = {};
  for (const [name, cap] of Object.entries(capacity)) {
    const reserved = reservation[name];
    const value = reserved ? cap.sub(reserved) : cap;
    out[name] = value.sign() < 0 ? Quantity.fromMilli(0n, cap.format) : value;
  }
  return out;
}

/**
 * The limits for the kubepods cgroup (getNodeAllocatableAbsolute): capacity minus kubeReserved
 * and systemReserved only, never below zero. Hard eviction thresholds are not subtracted.
 */
export function nodeAllocatableAbsolute(
  capacity: ResourceList,
  r: Pick<Reservations, 'kubeReserved' | 'systemReserved'>,
): ResourceList {
  const out: ResourceList = {};
  for (const [name, cap] of Object.entries(capacity)) {
    let value = cap;
    for (const list of [r.systemReserved, r.kubeReserved]) {
      const q = list[name];
      if (q) value = value.sub(q);
    }
    out[name] = value.sign() < 0 ? Quantity.fromMilli(0n, cap.format) : value;
  }
  return out;
}

/**
 * Why the reservations do not fit the capacity (validateNodeAllocatable: the kubelet refuses to
 * start), or undefined when they fit.
 */
export function nodeAllocatableProblem(r: Reservations, capacity: ResourceList): string | undefined {
  const problems: string[] = [];
  for (const [name, reserved] of Object.entries(nodeAllocatableReservation(r, capacity))) {
    const cap = capacity[name] as Quantity;
    if (cap.sub(reserved).sign() < 0)
      problems.push(`resource "${name}" reserves ${reserved} (with hard eviction), capacity is ${cap}`);
  }
  return problems.length === 0 ? undefined : `invalid Node Allocatable configuration: ${problems.join('; ')}`;
}

/**
 * A resource list as cgroup settings (getCgroupConfig): memory in bytes, CPU as shares, `pid`
 * as the pids limit. Other resources have no cgroup file.
 */
export function cgroupConfigFor(rl: ResourceList): ResourceConfig {
  const out: ResourceConfig = {};
  if (rl.memory) out.memory = rl.memory.value();
  if (rl.cpu) out.cpuShares = milliCPUToShares(rl.cpu.milliValue());
  if (rl[PID_RESOURCE]) out.pidsLimit = rl[PID_RESOURCE].value();
  return out;
}

/**
 * The kernel's limit on tasks (pidlimit.Stats' MaxPID): the smaller of kernel.pid_max and
 * kernel.threads-max, as both bound the number of tasks; undefined when neither is readable.
 */
export async function readMaxPID(
  read: (path: string) => Promise<string | undefined>,
): Promise<bigint | undefined> {
  let max: bigint | undefined;
  for (const file of ['/proc/sys/kernel/pid_max', '/proc/sys/kernel/threads-max']) {
    const text = (await read(file))?.trim();
    if (!text || !/^\d+$/.test(text)) continue;
    const v = BigInt(text);
    if (max === undefined || v < max) max = v;
  }
  return max;
}
