// The eviction manager's vocabulary: signals and what they starve, node conditions, the stats it
// ranks pods by, and the seams to the rest of the agent (who kills, who reclaims, who records).
import type { V1Pod } from '@kubernetes/client-node';
import { EVICTION_SIGNALS } from '../config/schema.js';

export type EvictionSignal = (typeof EVICTION_SIGNALS)[number];

/** One signal's reading: how much is left and out of how much (bytes, inodes or pids). */
export interface SignalObservation {
  available: number;
  capacity: number;
}

export type Observations = Partial<Record<EvictionSignal, SignalObservation>>;

/** Reads the node-level signals (memory, filesystems, pids). */
export interface SignalSource {
  observe(): Promise<Observations>;
}

export interface ContainerUsage {
  name: string;
  /** Memory working set (usage minus inactive file pages). */
  memoryWorkingSetBytes?: number;
  /** Writable layer plus logs: the container's share of ephemeral storage. */
  ephemeralStorageBytes?: number;
  /** Inodes of the writable layer plus logs. */
  inodesUsed?: number;
}

export interface VolumeUsage {
  name: string;
  usedBytes: number;
  inodesUsed?: number;
}

/** What the manager knows about one running pod's consumption. */
export interface PodUsage {
  uid: string;
  containers: ContainerUsage[];
  /** emptyDir volumes, memory-backed ones included. */
  volumes: VolumeUsage[];
  processCount?: number;
}

export interface PodStatsSource {
  podStats(): Promise<PodUsage[]>;
}

/** The status a pod the kubelet killed is left with: Evicted, or Terminated by node shutdown. */
export interface EvictionStatus {
  phase: 'Failed';
  reason: string;
  message: string;
  /** DisruptionTarget with reason TerminationByKubelet, as the kubelet adds it. */
  conditions: { type: string; status: 'True'; reason: string; message: string }[];
}

/**
 * Kills a pod now (the kubelet's KillPodFunc, killPodNow): pod workers kill it, the status manager
 * writes `status`. `isEvicted` is the eviction manager's kill (node shutdown's is not one): the
 * workers then treat the pod as evicted.
 */
export interface PodKiller {
  killPod(pod: V1Pod, isEvicted: boolean, gracePeriodSeconds: number, status: EvictionStatus): Promise<void>;
}

/** Node-level reclaim tried before any pod is evicted for disk pressure. */
export interface NodeReclaimer {
  deleteAllUnusedContainers(): Promise<void>;
  deleteUnusedImages(): Promise<void>;
}

/** The kubelet records the Evicted event with annotations naming the starved resource and offenders. */
export interface AnnotatedEventRecorder {
  annotatedEvent(
    pod: V1Pod,
    annotations: Record<string, string>,
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
  ): void;
}

export type PressureCondition = 'MemoryPressure' | 'DiskPressure' | 'PIDPressure';

/** The resource a signal starves, as named in eviction messages. */
export const SIGNAL_RESOURCE: Record<EvictionSignal, string> = {
  'memory.available': 'memory',
  'allocatableMemory.available': 'memory',
  'nodefs.available': 'ephemeral-storage',
  'nodefs.inodesFree': 'inodes',
  'imagefs.available': 'ephemeral-storage',
  'imagefs.inodesFree': 'inodes',
  'containerfs.available': 'ephemeral-storage',
  'containerfs.inodesFree': 'inodes',
  'pid.available': 'pids',
};

export const SIGNAL_CONDITION: Record<EvictionSignal, PressureCondition> = {
  'memory.available': 'MemoryPressure',
  'allocatableMemory.available': 'MemoryPressure',
  'nodefs.available': 'DiskPressure',
  'nodefs.inodesFree': 'DiskPressure',
  'imagefs.available': 'DiskPressure',
  'imagefs.inodesFree': 'DiskPressure',
  'containerfs.available': 'DiskPressure',
  'containerfs.inodesFree': 'DiskPressure',
  'pid.available': 'PIDPressure',
};

/** Memory is reclaimed first: it is the resource whose exhaustion hurts the node soonest. The
 * signal list is already in that order, memory, then disk, then PIDs. */
export const SIGNAL_PRIORITY: readonly EvictionSignal[] = EVICTION_SIGNALS;

export const EVICTION_REASON = 'Evicted';
/** Event annotation keys, the kubelet's. */
export const OFFENDING_CONTAINERS_KEY = 'offending_containers';
export const OFFENDING_CONTAINERS_USAGE_KEY = 'offending_containers_usage';
export const STARVED_RESOURCE_KEY = 'starved_resource';
