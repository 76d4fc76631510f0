// What the runtime has of pods, read back from its sandboxes and containers and their labels:
// the listing the PLEG relists and housekeeping reads (GetPods), one pod's full status
// (GetPodStatus), the status a CRI container event carries, and the running part of a status.
import {
  type ContainerEventResponse,
  ContainerState as CriContainerState,
  isNotFound,
  PodSandboxState,
} from '@kh/cri-api';
import type { ContainerStatus, PodStatus, RunningPod, SandboxStatus } from '../container/runtime.js';
import { containerId, toContainerState, toContainerStatus } from './container.js';
import { type ManagerContext, nsToMs } from './context.js';
import {
  ContainerNameLabel,
  getContainerInfoFromAnnotations,
  PodNameLabel,
  PodNamespaceLabel,
  PodUidLabel,
} from './labels.js';
import { sandboxState, toSandboxStatus } from './sandbox.js';

/** The pods the runtime has: all of them, or only those with a ready sandbox or a running container. */
export async function getPods(ctx: ManagerContext, all: boolean): Promise<RunningPod[]> {
  const [sandboxes, containers] = await Promise.all([
    ctx.cri.listPodSandbox(all ? {} : { filter: { state: { state: PodSandboxState.SANDBOX_READY } } }),
    ctx.cri.listContainers(all ? {} : { filter: { state: { state: CriContainerState.CONTAINER_RUNNING } } }),
  ]);
  const pods = new Map<string, RunningPod>();
  const podFor = (labels: Record<string, string>) => {
    const uid = labels[PodUidLabel];
    if (!uid) return undefined; // not created by a kubelet-style agent
    let p = pods.get(uid);
    if (!p) {
      p = {
        uid,
        name: labels[PodNameLabel] ?? '',
        namespace: labels[PodNamespaceLabel] ?? '',
        sandboxes: [],
        containers: [],
      };
      pods.set(uid, p);
    }
    return p;
  };
  for (const s of sandboxes.items) podFor(s.labels)?.sandboxes.push({ id: s.id, state: sandboxState(s) });
  for (const c of containers.containers) {
    podFor(c.labels)?.containers.push({
      id: containerId(ctx, c.id),
      name: c.labels[ContainerNameLabel] ?? c.metadata?.name ?? '',
      state: toContainerState(c.state),
      hash: getContainerInfoFromAnnotations(c.annotations).hash,
      image: c.image?.userSpecifiedImage || c.image?.image || '',
      imageRef: c.imageRef,
      createdAt: new Date(nsToMs(c.createdAt)),
    });
  }
  return [...pods.values()];
}

/** Every sandbox and container of the pod, newest first. */
export async function getPodStatus(
  ctx: ManagerContext,
  uid: string,
  name: string,
  namespace: string,
): Promise<PodStatus> {
  const selector = { [PodUidLabel]: uid };
  const [sandboxes, containers] = await Promise.all([
    ctx.cri.listPodSandbox({ filter: { labelSelector: selector } }),
    ctx.cri.listContainers({ filter: { labelSelector: selector } }),
  ]);
  const sandboxStatuses = (
    await Promise.all(
      sandboxes.items.map((s) =>
        ctx.cri
          .podSandboxStatus({ podSandboxId: s.id })
          .then((r) => (r.status ? toSandboxStatus(r.status) : undefined), goneBetweenListAndStatus),
      ),
    )
  )
    .filter((s) => s !== undefined)
    .sort(newestSandboxFirst);
  const containerStatuses = (
    await Promise.all(
      containers.containers.map((c) =>
        ctx.cri
          .containerStatus({ containerId: c.id })
          .then((r) => (r.status ? toContainerStatus(ctx, r.status) : undefined), goneBetweenListAndStatus),
      ),
    )
  )
    .filter((s) => s !== undefined)
    .sort(newestContainerFirst);
  const newest = sandboxStatuses[0];
  return {
    uid,
    name,
    namespace,
    ips: podIPs(newest),
    sandboxStatuses,
    containerStatuses,
    timestamp: new Date(ctx.clock.now()),
  };
}

/**
 * The pod's status as carried by a CRI container event (sandbox + container statuses), for the
 * evented PLEG. Undefined when the event has no sandbox status.
 */
export async function podStatusFromEvent(
  ctx: ManagerContext,
  ev: ContainerEventResponse,
): Promise<PodStatus | undefined> {
  const sb = ev.podSandboxStatus;
  if (!sb?.metadata) return undefined;
  const sandbox = toSandboxStatus(sb);
  const containerStatuses = (
    await Promise.all(ev.containersStatuses.map((c) => toContainerStatus(ctx, c)))
  ).sort(newestContainerFirst);
  return {
    uid: sb.metadata.uid,
    name: sb.metadata.name,
    namespace: sb.metadata.namespace,
    ips: podIPs(sandbox),
    sandboxStatuses: [sandbox],
    containerStatuses,
    timestamp: new Date(ctx.clock.now()),
  };
}

/** The running part of a PodStatus, in the shape killPod takes. */
export function runningPodFromStatus(s: PodStatus): RunningPod {
  return {
    uid: s.uid,
    name: s.name,
    namespace: s.namespace,
    sandboxes: s.sandboxStatuses.map((sb) => ({ id: sb.id, state: sb.state })),
    containers: s.containerStatuses
      .filter((c) => c.state === 'running')
      .map((c) => ({
        id: c.id,
        name: c.name,
        state: c.state,
        hash: c.hash,
        image: c.image,
        imageRef: c.imageRef,
        createdAt: c.createdAt,
      })),
  };
}

/** The pod's IPs: those of its newest sandbox while it is ready. */
function podIPs(newest: SandboxStatus | undefined): string[] {
  return newest?.state === 'ready' && newest.ip ? [newest.ip, ...newest.additionalIps] : [];
}

/**
 * Removed after it was listed: leave it out. Any other failure must fail the whole status,
 * or a sync would take the missing sandbox or container for one that never existed and
 * create a duplicate.
 */
function goneBetweenListAndStatus(err: unknown): undefined {
  if (isNotFound(err)) return undefined;
  throw err;
}

// Creation times can tie (coarse runtime clocks, fakes); the attempt number then decides.
function newestSandboxFirst(a: SandboxStatus, b: SandboxStatus): number {
  return b.createdAt.getTime() - a.createdAt.getTime() || b.attempt - a.attempt;
}

function newestContainerFirst(a: ContainerStatus, b: ContainerStatus): number {
  return b.createdAt.getTime() - a.createdAt.getTime() || b.restartCount - a.restartCount;
}
