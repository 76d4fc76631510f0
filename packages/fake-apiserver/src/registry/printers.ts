import type { KObject } from '../meta/object.js';
import type { TableColumn } from './resource.js';

/** Age the way kubectl prints it (k8s.io/apimachinery duration.HumanDuration). */
export function humanDuration(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < -1) return '<invalid>';
  if (s < 0) return '0s';
  if (s < 120) return `${s}s`;
  const min = Math.floor(s / 60);
  if (min < 10) return s % 60 === 0 ? `${min}m` : `${min}m${s % 60}s`;
  if (min < 180) return `${min}m`;
  const h = Math.floor(s / 3600);
  if (h < 8) return min % 60 === 0 ? `${h}h` : `${h}h${min % 60}m`;
  if (h < 48) return `${h}h`;
  if (h < 24 * 8) return h % 24 === 0 ? `${Math.floor(h / 24)}d` : `${Math.floor(h / 24)}d${h % 24}h`;
  if (h < 24 * 365 * 2) return `${Math.floor(h / 24)}d`;
  const y = Math.floor(h / 24 / 365);
  if (y < 8) return `${y}y${Math.floor((h / 24) % 365)}d`;
  return `${y}y`;
}

const since = (ts: string | undefined, now: number) =>
  ts ? humanDuration(now - Date.parse(ts)) : '<unknown>';

export const nameColumn: TableColumn = {
  name: 'Name',
  type: 'string',
  format: 'name',
  description: 'Name must be unique within a namespace.',
  cell: (o) => o.metadata.name,
};

export const ageColumn: TableColumn = {
  name: 'Age',
  type: 'string',
  description: 'CreationTimestamp is a timestamp representing the server time when this object was created.',
  cell: (o, now) => since(o.metadata.creationTimestamp, now),
};

/** The STATUS column of `kubectl get pods`, following the pod printer's precedence. */
export function podStatusReason(pod: KObject): string {
  let reason: string = pod.status?.reason || pod.status?.phase || 'Unknown';
  let initializing = false;
  const init: KObject[] = pod.status?.initContainerStatuses ?? [];
  init.forEach((c, i) => {
    if (initializing) return;
    const t = c.state?.terminated;
    if (t && t.exitCode === 0) return;
    initializing = true;
    if (t)
      reason = t.reason
        ? `Init:${t.reason}`
        : t.signal
          ? `Init:Signal:${t.signal}`
          : `Init:ExitCode:${t.exitCode}`;
    else if (c.state?.waiting?.reason && c.state.waiting.reason !== 'PodInitializing')
      reason = `Init:${c.state.waiting.reason}`;
    else reason = `Init:${i}/${(pod.spec?.initContainers ?? []).length}`;
  });
  if (!initializing) {
    let hasRunning = false;
    for (const c of [...(pod.status?.containerStatuses ?? [])].reverse()) {
      if (c.state?.waiting?.reason) reason = c.state.waiting.reason;
      else if (c.state?.terminated?.reason) reason = c.state.terminated.reason;
      else if (c.state?.terminated)
        reason = c.state.terminated.signal
          ? `Signal:${c.state.terminated.signal}`
          : `ExitCode:${c.state.terminated.exitCode}`;
      else if (c.ready && c.state?.running) hasRunning = true;
    }
    if (reason === 'Completed' && hasRunning) {
      const ready = (pod.status?.conditions ?? []).some(
        (c: KObject) => c.type === 'Ready' && c.status === 'True',
      );
      reason = ready ? 'Running' : 'NotReady';
    }
  }
  if (pod.metadata.deletionTimestamp) reason = pod.status?.reason === 'NodeLost' ? 'Unknown' : 'Terminating';
  return reason;
}

export const podColumns: TableColumn[] = [
  nameColumn,
  {
    name: 'Ready',
    type: 'string',
    description: 'The aggregate readiness state of this pod for accepting traffic.',
    cell: (p) => {
      const st: KObject[] = p.status?.containerStatuses ?? [];
      return `${st.filter((c) => c.ready).length}/${(p.spec?.containers ?? []).length}`;
    },
  },
  {
    name: 'Status',
    type: 'string',
    description: 'The aggregate status of the containers in this pod.',
    cell: podStatusReason,
  },
  {
    name: 'Restarts',
    type: 'string',
    description: 'The number of times the containers in this pod have been restarted.',
    cell: (p) =>
      String(
        (p.status?.containerStatuses ?? []).reduce((n: number, c: KObject) => n + (c.restartCount ?? 0), 0),
      ),
  },
  ageColumn,
  {
    name: 'IP',
    type: 'string',
    priority: 1,
    description: 'IP address allocated to the pod.',
    cell: (p) => p.status?.podIP || '<none>',
  },
  {
    name: 'Node',
    type: 'string',
    priority: 1,
    description: 'Name of the Node the Pod is assigned to.',
    cell: (p) => p.spec?.nodeName || '<none>',
  },
  {
    name: 'Nominated Node',
    type: 'string',
    priority: 1,
    description: 'Nominated node name, if any.',
    cell: (p) => p.status?.nominatedNodeName || '<none>',
  },
  {
    name: 'Readiness Gates',
    type: 'string',
    priority: 1,
    description: 'Pod readiness gates.',
    cell: (p) => {
      const gates: KObject[] = p.spec?.readinessGates ?? [];
      if (gates.length === 0) return '<none>';
      const ok = gates.filter((g) =>
        (p.status?.conditions ?? []).some((c: KObject) => c.type === g.conditionType && c.status === 'True'),
      );
      return `${ok.length}/${gates.length}`;
    },
  },
];

function nodeStatus(n: KObject): string {
  const ready = (n.status?.conditions ?? []).find((c: KObject) => c.type === 'Ready');
  const parts = [
    ready === undefined
      ? 'Unknown'
      : ready.status === 'True'
        ? 'Ready'
        : ready.status === 'False'
          ? 'NotReady'
          : 'Unknown',
  ];
  if (n.spec?.unschedulable) parts.push('SchedulingDisabled');
  return parts.join(',');
}

const address = (n: KObject, type: string) =>
  (n.status?.addresses ?? []).find((a: KObject) => a.type === type)?.address ?? '<none>';

export const nodeColumns: TableColumn[] = [
  nameColumn,
  { name: 'Status', type: 'string', description: 'The status of the node', cell: nodeStatus },
  {
    name: 'Roles',
    type: 'string',
    description: 'The roles of the node',
    cell: (n) => {
      const roles = Object.keys(n.metadata.labels ?? {})
        .filter((k) => k.startsWith('node-role.kubernetes.io/'))
        .map((k) => k.slice('node-role.kubernetes.io/'.length))
        .filter((r) => r !== '');
      return roles.length > 0 ? roles.sort().join(',') : '<none>';
    },
  },
  ageColumn,
  {
    name: 'Version',
    type: 'string',
    description: 'Kubelet Version reported by the node.',
    cell: (n) => n.status?.nodeInfo?.kubeletVersion ?? '',
  },
  {
    name: 'Internal-IP',
    type: 'string',
    priority: 1,
    description: 'List of internal IPs.',
    cell: (n) => address(n, 'InternalIP'),
  },
  {
    name: 'External-IP',
    type: 'string',
    priority: 1,
    description: 'List of external IPs.',
    cell: (n) => address(n, 'ExternalIP'),
  },
  {
    name: 'OS-Image',
    type: 'string',
    priority: 1,
    description: 'OS Image reported by the node.',
    cell: (n) => n.status?.nodeInfo?.osImage || '<unknown>',
  },
  {
    name: 'Kernel-Version',
    type: 'string',
    priority: 1,
    description: 'Kernel Version reported by the node.',
    cell: (n) => n.status?.nodeInfo?.kernelVersion || '<unknown>',
  },
  {
    name: 'Container-Runtime',
    type: 'string',
    priority: 1,
    description: 'Container Runtime Version reported by the node.',
    cell: (n) => n.status?.nodeInfo?.containerRuntimeVersion || '<unknown>',
  },
];

export const namespaceColumns: TableColumn[] = [
  nameColumn,
  {
    name: 'Status',
    type: 'string',
    description: 'The status of the namespace',
    cell: (n) => n.status?.phase ?? '',
  },
  ageColumn,
];

export const eventColumns: TableColumn[] = [
  {
    name: 'Last Seen',
    type: 'string',
    description: 'Time when last this event was observed.',
    cell: (e, now) =>
      since(
        e.lastTimestamp ?? e.series?.lastObservedTime ?? e.eventTime ?? e.metadata.creationTimestamp,
        now,
      ),
  },
  {
    name: 'Type',
    type: 'string',
    description: 'Type of this event (Normal, Warning).',
    cell: (e) => e.type ?? '',
  },
  { name: 'Reason', type: 'string', description: 'Why the action was taken.', cell: (e) => e.reason ?? '' },
  {
    name: 'Object',
    type: 'string',
    description: 'The object this Event is about.',
    cell: (e) => `${(e.involvedObject?.kind ?? '').toLowerCase()}/${e.involvedObject?.name ?? ''}`,
  },
  {
    name: 'Message',
    type: 'string',
    description: 'A human-readable description of the status of this operation.',
    cell: (e) => e.message ?? '',
  },
];

export const configMapColumns: TableColumn[] = [
  nameColumn,
  {
    name: 'Data',
    type: 'integer',
    description: 'Number of data entries.',
    cell: (c) => Object.keys(c.data ?? {}).length + Object.keys(c.binaryData ?? {}).length,
  },
  ageColumn,
];

export const secretColumns: TableColumn[] = [
  nameColumn,
  { name: 'Type', type: 'string', description: 'The type of the secret', cell: (s) => s.type ?? '' },
  {
    name: 'Data',
    type: 'integer',
    description: 'Number of data entries.',
    cell: (s) => Object.keys(s.data ?? {}).length,
  },
  ageColumn,
];

export const serviceAccountColumns: TableColumn[] = [
  nameColumn,
  {
    name: 'Secrets',
    type: 'integer',
    description: 'Number of secrets.',
    cell: (s) => (s.secrets ?? []).length,
  },
  ageColumn,
];

export const leaseColumns: TableColumn[] = [
  nameColumn,
  {
    name: 'Holder',
    type: 'string',
    description: 'The holder of the lease.',
    cell: (l) => l.spec?.holderIdentity ?? '',
  },
  ageColumn,
];

export const priorityClassColumns: TableColumn[] = [
  nameColumn,
  {
    name: 'Value',
    type: 'integer',
    description:
      'value represents the integer value of this priority class. This is the actual priority that pods receive when they have the name of this class in their pod spec.',
    cell: (pc) => pc.value ?? 0,
  },
  {
    name: 'Global-Default',
    type: 'boolean',
    description:
      'globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class.',
    cell: (pc) => pc.globalDefault ?? false,
  },
  ageColumn,
  {
    name: 'PreemptionPolicy',
    type: 'string',
    description: 'preemptionPolicy is the Policy for preempting pods with lower priority.',
    cell: (pc) => pc.preemptionPolicy ?? '',
  },
];

export const runtimeClassColumns: TableColumn[] = [
  nameColumn,
  {
    name: 'Handler',
    type: 'string',
    description:
      'Handler specifies the underlying runtime and configuration that the CRI implementation will use to handle pods of this class.',
    cell: (rc) => rc.handler ?? '',
  },
  ageColumn,
];
