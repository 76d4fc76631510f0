// Node status setters: each fills one part of node.status from a snapshot of what the agent
// knows, like the kubelet's nodestatus setters. They are synchronous and pure apart from the
// event callback, so the status updater gathers inputs first and the setters are unit-tested
// without a runtime or an API server.

import { isExtendedResourceName } from '@kh/apimachinery';
import type { Image, RuntimeFeatures, RuntimeHandler } from '@kh/runtime-manager';
import type { V1Node } from '@kubernetes/client-node';
import { allocatableFrom, nodeAllocatableReservation } from '../cm/node_allocatable.js';
import type { EvictionThreshold, ResourceList } from '../config/resolve.js';
import { Quantity } from '../util/quantity.js';
import { NodeConditionType, upsertCondition } from './conditions.js';
import { type MachineInfo, machineCapacity } from './machine_info.js';

export interface NodeStatusSnapshot {
  hostname: string;
  nodeIP: string;
  machine: MachineInfo;
  maxPods: number;
  kubeReserved: ResourceList;
  systemReserved: ResourceList;
  evictionHard: EvictionThreshold[];
  kubeletVersion: string;
  kubeletPort: number;
  /** Undefined while the runtime has never answered Version. */
  runtime?: { type: string; version: string };
  /** Undefined when listing failed; the previous list is kept. */
  images?: Image[];
  nodeStatusMaxImages: number;
  /** From the runtime state: "container runtime is down", "PLEG is not healthy: ...". */
  runtimeErrors: string[];
  networkErrors: string[];
  /** "node is shutting down" while the node shutdown manager shuts the pods down. */
  nodeShutdownError?: string;
  /** From the eviction manager (its pressure conditions). */
  pressure: { memory: boolean; disk: boolean; pid: boolean };
  /** From the runtime's last Status; undefined until a runtime that reports features answered. */
  features?: RuntimeFeatures;
  /** The runtime's handlers from its last Status; undefined until it answered. */
  runtimeHandlers?: readonly RuntimeHandler[];
}

export type NodeEventFn = (type: 'Normal' | 'Warning', reason: string) => void;
export type NodeStatusSetter = (node: V1Node, s: NodeStatusSnapshot, now: Date, record: NodeEventFn) => void;

export const nodeAddress: NodeStatusSetter = (node, s) => {
  node.status ??= {};
  node.status.addresses = [
    { type: 'InternalIP', address: s.nodeIP },
    { type: 'Hostname', address: s.hostname },
  ];
};

/**
 * Capacity from the machine, keeping the extended resources others patched into it (the kubelet's
 * MachineInfo setter starts from the API's Node); allocatable is every capacity entry minus
 * kube/system reservations and hard eviction, so an extended resource gone from capacity leaves
 * allocatable too.
 */
export const machineInfo: NodeStatusSetter = (node, s) => {
  node.status ??= {};
  const capacity: ResourceList = {
    ...extendedResources(node.status.capacity),
    ...machineCapacity(s.machine),
    pods: Quantity.fromValue(s.maxPods, 'DecimalSI'),
  };
  node.status.capacity = toStrings(capacity);
  node.status.allocatable = toStrings(allocatableFrom(capacity, nodeAllocatableReservation(s, capacity)));
};

function extendedResources(list: Record<string, string> | undefined): ResourceList {
  const out: ResourceList = {};
  for (const [name, value] of Object.entries(list ?? {})) {
    if (!isExtendedResourceName(name)) continue;
    const q = Quantity.tryFromJSON(value);
    if (q) out[name] = q;
  }
  return out;
}

function toStrings(list: ResourceList): Record<string, string> {
  return Object.fromEntries(Object.entries(list).map(([k, v]) => [k, v.toString()]));
}

export const versionInfo: NodeStatusSetter = (node, s) => {
  node.status ??= {};
  const m = s.machine;
  const previous = node.status.nodeInfo;
  node.status.nodeInfo = {
    machineID: m.machineID,
    systemUUID: m.systemUUID,
    bootID: m.bootID,
    kernelVersion: m.kernelVersion,
    osImage: m.osImage,
    operatingSystem: m.operatingSystem,
    architecture: m.architecture,
    kubeletVersion: s.kubeletVersion,
    kubeProxyVersion: '',
    containerRuntimeVersion: s.runtime
      ? `${s.runtime.type}://${s.runtime.version}`
      : (previous?.containerRuntimeVersion ?? ''),
  };
};

export const daemonEndpoints: NodeStatusSetter = (node, s) => {
  node.status ??= {};
  node.status.daemonEndpoints = { kubeletEndpoint: { Port: s.kubeletPort } };
};

/** The kubelet lists at most this many names per image. */
/** status.features from the runtime's (the kubelet's NodeFeatures setter); left alone until it reports any. */
export const nodeFeatures: NodeStatusSetter = (node, s) => {
  if (!s.features) return;
  node.status ??= {};
  node.status.features = { supplementalGroupsPolicy: s.features.supplementalGroupsPolicy };
};

/**
 * status.runtimeHandlers from the runtime's (the kubelet's RuntimeHandlers setter, with
 * UserNamespacesSupport and RecursiveReadOnlyMounts on as in 1.33): what each handler supports,
 * which the scheduler and users read before placing a hostUsers: false pod.
 */
export const runtimeHandlers: NodeStatusSetter = (node, s) => {
  if (!s.runtimeHandlers) return;
  node.status ??= {};
  node.status.runtimeHandlers = s.runtimeHandlers.map((h) => ({
    name: h.name,
    features: {
      recursiveReadOnlyMounts: h.supportsRecursiveReadOnlyMounts,
      userNamespaces: h.supportsUserNamespaces,
    },
  }));
};

export const MAX_NAMES_PER_IMAGE = 5;

export const images: NodeStatusSetter = (node, s) => {
  node.status ??= {};
  if (!s.images) return;
  const sorted = [...s.images].sort((a, b) => b.size - a.size);
  const capped = s.nodeStatusMaxImages === -1 ? sorted : sorted.slice(0, s.nodeStatusMaxImages);
  node.status.images = capped
    .map((img) => ({
      names: [...img.repoDigests, ...img.repoTags].slice(0, MAX_NAMES_PER_IMAGE),
      sizeBytes: img.size,
    }))
    .filter((img) => img.names.length > 0);
};

function pressureSetter(
  type: string,
  pick: (s: NodeStatusSnapshot) => boolean,
  yes: { reason: string; message: string },
  no: { reason: string; message: string },
): NodeStatusSetter {
  return (node, s, now, record) => {
    const pressure = pick(s);
    const want = pressure ? yes : no;
    const { changed } = upsertCondition(node, { type, status: pressure ? 'True' : 'False', ...want }, now);
    // Event reasons are the condition reasons with Node for Kubelet: NodeHasSufficientMemory, ...
    if (changed) record('Normal', want.reason.replace(/^Kubelet/, 'Node'));
  };
}

export const memoryPressureCondition = pressureSetter(
  NodeConditionType.MemoryPressure,
  (s) => s.pressure.memory,
  { reason: 'KubeletHasInsufficientMemory', message: 'kubelet has insufficient memory available' },
  { reason: 'KubeletHasSufficientMemory', message: 'kubelet has sufficient memory available' },
);

export const diskPressureCondition = pressureSetter(
  NodeConditionType.DiskPressure,
  (s) => s.pressure.disk,
  { reason: 'KubeletHasDiskPressure', message: 'kubelet has disk pressure' },
  { reason: 'KubeletHasNoDiskPressure', message: 'kubelet has no disk pressure' },
);

export const pidPressureCondition = pressureSetter(
  NodeConditionType.PIDPressure,
  (s) => s.pressure.pid,
  { reason: 'KubeletHasInsufficientPID', message: 'kubelet has insufficient PID available' },
  { reason: 'KubeletHasSufficientPID', message: 'kubelet has sufficient PID available' },
);

const REQUIRED_CAPACITY = ['cpu', 'memory', 'pods'];

export const readyCondition: NodeStatusSetter = (node, s, now, record) => {
  const errors = [...s.runtimeErrors, ...s.networkErrors];
  const missing = REQUIRED_CAPACITY.filter((r) => node.status?.capacity?.[r] === undefined);
  if (missing.length > 0) errors.push(`missing node capacity for resources: ${missing.join(', ')}`);
  if (s.nodeShutdownError) errors.push(s.nodeShutdownError);
  const ready = errors.length === 0;
  const { changed, isNew } = upsertCondition(
    node,
    {
      type: NodeConditionType.Ready,
      status: ready ? 'True' : 'False',
      reason: ready ? 'KubeletReady' : 'KubeletNotReady',
      // Several problems print like a Go error aggregate: "[a, b]".
      message: ready
        ? 'kubelet is posting ready status'
        : errors.length === 1
          ? (errors[0] as string)
          : `[${errors.join(', ')}]`,
    },
    now,
  );
  // The kubelet announces Ready transitions, not the first observation.
  if (changed && !isNew) record('Normal', ready ? 'NodeReady' : 'NodeNotReady');
};

/** In the kubelet's order: pressure conditions before Ready. */
export const defaultNodeStatusSetters: readonly NodeStatusSetter[] = [
  nodeAddress,
  machineInfo,
  versionInfo,
  daemonEndpoints,
  images,
  runtimeHandlers,
  nodeFeatures,
  memoryPressureCondition,
  diskPressureCondition,
  pidPressureCondition,
  readyCondition,
];

export function setNodeStatus(
  node: V1Node,
  s: NodeStatusSnapshot,
  now: Date,
  record: NodeEventFn,
  setters: readonly NodeStatusSetter[] = defaultNodeStatusSetters,
): void {
  for (const set of setters) set(node, s, now, record);
}
