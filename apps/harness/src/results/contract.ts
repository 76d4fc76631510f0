// The kubelet's contract with a runtime, per runtime column: every CRI method kubelet 1.33 can call,
// and whether our agent called it during the run, how often, and what the runtime answered. A
// method the runtime answers with UNIMPLEMENTED is its own status, so a green matrix cannot hide it.
// Built from the agent's calls the run already counts (`runtimes[].criCalls`, source agent).
import type {
  CriCallStats,
  CriContractRow,
  CriContractStatus,
  CriServiceName,
  RuntimeInfo,
} from './model.js';

export interface KubeletCriMethod {
  method: string;
  service: CriServiceName;
  /** When the kubelet calls it: what must happen in a run for the method to be called. */
  when: string;
}

/**
 * The CRI v1 methods kubelet 1.33 calls (its remote runtime and image services), in the proto's
 * order. The Stream* list calls, CheckpointPod and RestorePod came after 1.33 and are not here;
 * neither is ContainerStats, which no part of kubelet 1.33 calls (its CRI stats provider reads
 * ListContainerStats, PodSandboxStats and ListPodSandboxStats; crictl stats is its caller).
 */
export const KUBELET_CRI_METHODS: readonly KubeletCriMethod[] = [
  { method: 'Version', service: 'RuntimeService', when: 'start-up and every runtime status check' },
  { method: 'RunPodSandbox', service: 'RuntimeService', when: 'pod start' },
  { method: 'StopPodSandbox', service: 'RuntimeService', when: 'pod stop' },
  { method: 'RemovePodSandbox', service: 'RuntimeService', when: 'garbage collection' },
  { method: 'PodSandboxStatus', service: 'RuntimeService', when: 'pod sync and PLEG relist' },
  { method: 'ListPodSandbox', service: 'RuntimeService', when: 'PLEG relist' },
  { method: 'CreateContainer', service: 'RuntimeService', when: 'container start' },
  { method: 'StartContainer', service: 'RuntimeService', when: 'container start' },
  { method: 'StopContainer', service: 'RuntimeService', when: 'container stop' },
  { method: 'RemoveContainer', service: 'RuntimeService', when: 'garbage collection' },
  { method: 'ListContainers', service: 'RuntimeService', when: 'PLEG relist' },
  { method: 'ContainerStatus', service: 'RuntimeService', when: 'pod sync' },
  {
    method: 'UpdateContainerResources',
    service: 'RuntimeService',
    when: 'in-place pod resize (InPlacePodVerticalScaling), CPU manager',
  },
  { method: 'ReopenContainerLog', service: 'RuntimeService', when: 'container log rotation' },
  { method: 'ExecSync', service: 'RuntimeService', when: 'exec probes and lifecycle hooks' },
  { method: 'Exec', service: 'RuntimeService', when: 'kubectl exec' },
  { method: 'Attach', service: 'RuntimeService', when: 'kubectl attach' },
  { method: 'PortForward', service: 'RuntimeService', when: 'kubectl port-forward' },
  { method: 'ListContainerStats', service: 'RuntimeService', when: '/stats/summary, eviction' },
  {
    method: 'PodSandboxStats',
    service: 'RuntimeService',
    when: 'a resize that lowers a memory limit reads the pod (PodAndContainerStatsFromCRI)',
  },
  {
    method: 'ListPodSandboxStats',
    service: 'RuntimeService',
    when: '/stats/summary and /metrics/resource (PodAndContainerStatsFromCRI)',
  },
  { method: 'UpdateRuntimeConfig', service: 'RuntimeService', when: "the node's podCIDR is set" },
  { method: 'Status', service: 'RuntimeService', when: 'runtime health, every sync' },
  {
    method: 'CheckpointContainer',
    service: 'RuntimeService',
    when: 'kubelet /checkpoint API (ContainerCheckpoint)',
  },
  { method: 'GetContainerEvents', service: 'RuntimeService', when: 'evented PLEG (EventedPLEG)' },
  {
    method: 'ListMetricDescriptors',
    service: 'RuntimeService',
    when: '/metrics/cadvisor (PodAndContainerStatsFromCRI)',
  },
  {
    method: 'ListPodSandboxMetrics',
    service: 'RuntimeService',
    when: '/metrics/cadvisor (PodAndContainerStatsFromCRI)',
  },
  {
    method: 'RuntimeConfig',
    service: 'RuntimeService',
    when: 'start-up: the cgroup driver (KubeletCgroupDriverFromCRI)',
  },
  {
    method: 'UpdatePodSandboxResources',
    service: 'RuntimeService',
    when: 'in-place pod resize (InPlacePodVerticalScaling)',
  },
  { method: 'ListImages', service: 'ImageService', when: 'image garbage collection, node status' },
  { method: 'ImageStatus', service: 'ImageService', when: 'container start (image present?)' },
  { method: 'PullImage', service: 'ImageService', when: 'container start (image missing)' },
  { method: 'RemoveImage', service: 'ImageService', when: 'image garbage collection' },
  { method: 'ImageFsInfo', service: 'ImageService', when: 'image garbage collection, eviction' },
];

/** gRPC code name (CriError.codeName) of a method the runtime does not implement. */
export const UNIMPLEMENTED = 'UNIMPLEMENTED';

/**
 * One row per kubelet 1.33 method, in KUBELET_CRI_METHODS order, then any other method the agent
 * called (by name), so nothing the agent did is left out.
 */
export function criContract(calls: readonly CriCallStats[] = []): CriContractRow[] {
  const byMethod = new Map<string, { count: number; codes: Record<string, number> }>();
  for (const c of calls) {
    if (c.source !== 'agent') continue;
    const m = byMethod.get(c.method) ?? { count: 0, codes: {} };
    m.count += c.count;
    for (const [code, n] of Object.entries(c.codes ?? {})) m.codes[code] = (m.codes[code] ?? 0) + n;
    byMethod.set(c.method, m);
  }
  const row = (method: string, service?: CriServiceName): CriContractRow => {
    const m = byMethod.get(method);
    const codes = m && Object.keys(m.codes).length > 0 ? m.codes : undefined;
    const status: CriContractStatus = !m?.count
      ? 'not-called'
      : codes?.[UNIMPLEMENTED]
        ? 'unimplemented'
        : 'called';
    return {
      method,
      ...(service ? { service } : {}),
      status,
      count: m?.count ?? 0,
      ...(codes ? { codes } : {}),
    };
  };
  const known = new Set(KUBELET_CRI_METHODS.map((m) => m.method));
  return [
    ...KUBELET_CRI_METHODS.map((m) => row(m.method, m.service)),
    ...[...byMethod.keys()]
      .filter((m) => !known.has(m))
      .sort()
      .map((m) => row(m)),
  ];
}

/** The runtime with its contract table, from the agent's calls it counts. */
export function withCriContract(runtime: RuntimeInfo): RuntimeInfo {
  return { ...runtime, criContract: criContract(runtime.criCalls) };
}

/** How a row reads in the report and on the terminal: the status in words, then the error codes. */
export function contractText(row: CriContractRow): string {
  if (row.status === 'not-called') return 'not called';
  const failed = Object.entries(row.codes ?? {})
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([code, n]) => `${code} ×${n}`);
  const calls = `${row.count} call${row.count === 1 ? '' : 's'}`;
  if (row.status === 'unimplemented') return `Unimplemented: ${calls}, ${failed.join(', ')}`;
  return failed.length > 0 ? `${calls}, failed: ${failed.join(', ')}` : calls;
}
