// The API status of a pod, computed from what the runtime reports, why containers last failed
// to start (the reason cache) and the probe results, with the kubelet's phase rules, condition
// reasons and container states. Pod workers call this around each sync and hand the result to
// the status manager.

import { Quantity } from '@kh/apimachinery';
import {
  type ContainerStatus,
  containerShouldRestart,
  linuxResources,
  type PodStatus,
  shouldContainerBeRestarted,
} from '@kh/runtime-manager';
import type {
  V1Container,
  V1ContainerState,
  V1ContainerStatus,
  V1ContainerUser,
  V1Pod,
  V1PodCondition,
  V1PodStatus,
  V1ResourceRequirements,
} from '@kubernetes/client-node';
import { podQOSClass } from '../types/qos.js';
import { withReadinessGates } from './readiness_gates.js';
import type { ReasonLookup } from './reason_cache.js';

/** Readiness and startup from the prober manager; undefined means "no result yet". */
export interface ProbeResults {
  ready(podUid: string, containerId: string): boolean | undefined;
  started(podUid: string, containerId: string): boolean | undefined;
}

export interface GenerateStatusInput {
  pod: V1Pod;
  runtime: PodStatus;
  /** The status the manager holds, or the API pod's: keeps lastState, startTime, waiting reasons. */
  oldStatus?: V1PodStatus;
  /** Why containers last failed to start: ErrImagePull, CrashLoopBackOff... become waiting reasons. */
  reasons?: ReasonLookup;
  /** The pod worker decided the pod is done (terminated or being deleted). */
  podIsTerminal?: boolean;
  nodeIP: string;
  now: Date;
  probes?: ProbeResults;
  /** The ContainerRestartRules gate: containers' own restart rules decide restarts and the phase. */
  containerRestartRules?: boolean;
  /**
   * In-place resize (the pod passed is the allocated one): its PodResizePending and
   * PodResizeInProgress conditions, what each container's cgroup was last given, and whether
   * allocatedResources is reported (InPlacePodVerticalScalingAllocatedStatus).
   */
  resize?: {
    conditions: V1PodCondition[];
    actuated(containerName: string): V1ResourceRequirements | undefined;
    allocatedStatus: boolean;
  };
}

/**
 * A running container's resources: cpu and memory limits and the cpu request as the runtime
 * reports its cgroup (kept in the allocation's form when they match it), else as last applied,
 * else as allocated; the memory request is the allocation's.
 */
export function containerStatusResources(
  spec: V1Container,
  current: ContainerStatus,
  actuated: V1ResourceRequirements | undefined,
): V1ResourceRequirements {
  const allocated = spec.resources ?? {};
  const reported = current.resources;
  if (reported === undefined) return structuredClone(actuated ?? allocated);
  const want = linuxResources(spec);
  const requests: Record<string, string> = { ...(allocated.requests ?? {}) };
  const limits: Record<string, string> = { ...(allocated.limits ?? {}) };
  const put = (into: Record<string, string>, name: string, same: boolean, value: string | undefined) => {
    if (same) return;
    if (value === undefined) delete into[name];
    else into[name] = value;
  };
  // The kubelet's sharesToMilliCPU / quotaToMilliCPU, as quantities print them (DecimalSI milli
  // cpu: 102m, 1; BinarySI bytes: 15Mi, 1536).
  const sharesMilli = reported.cpuShares >= 2n ? (reported.cpuShares * 1000n + 1023n) / 1024n : 0n;
  put(
    requests,
    'cpu',
    reported.cpuShares === want.cpuShares,
    sharesMilli > 0n ? Quantity.fromMilli(sharesMilli).toString() : undefined,
  );
  const quotaMilli =
    reported.cpuQuota > 0n && reported.cpuPeriod > 0n ? (reported.cpuQuota * 1000n) / reported.cpuPeriod : 0n;
  put(
    limits,
    'cpu',
    reported.cpuQuota === want.cpuQuota,
    quotaMilli > 0n ? Quantity.fromMilli(quotaMilli).toString() : undefined,
  );
  const mem = reported.memoryLimitInBytes;
  put(
    limits,
    'memory',
    mem === want.memoryLimitInBytes,
    mem > 0n ? Quantity.fromValue(mem, 'BinarySI').toString() : undefined,
  );
  return {
    ...(Object.keys(requests).length > 0 ? { requests } : {}),
    ...(Object.keys(limits).length > 0 ? { limits } : {}),
  };
}

/**
 * The containers that keep the pod from being Ready: sidecars (restartable init containers)
 * first, then app containers, as the kubelet lists them.
 */
export function unreadyContainers(
  pod: V1Pod,
  initStatuses: readonly V1ContainerStatus[],
  statuses: readonly V1ContainerStatus[],
): string[] {
  const sidecars = new Set(
    (pod.spec?.initContainers ?? []).filter((c) => c.restartPolicy === 'Always').map((c) => c.name),
  );
  return [
    ...initStatuses.filter((s) => sidecars.has(s.name) && !s.ready).map((s) => s.name),
    ...statuses.filter((s) => !s.ready).map((s) => s.name),
  ];
}

/** ContainersReady or Ready, from the unready containers; a completed pod is not ready. */
export function readinessCondition(
  type: string,
  unready: readonly string[],
  completed: boolean,
): V1PodCondition {
  if (completed) return { type, status: 'False', reason: 'PodCompleted' };
  if (unready.length === 0) return { type, status: 'True' };
  return {
    type,
    status: 'False',
    reason: 'ContainersNotReady',
    message: `containers with unready status: [${unready.join(' ')}]`,
  };
}

export function generateAPIPodStatus(input: GenerateStatusInput): V1PodStatus {
  const { pod, runtime, now } = input;
  const uid = pod.metadata?.uid ?? '';
  const initSpecs = pod.spec?.initContainers ?? [];
  const specs = pod.spec?.containers ?? [];
  const initStatuses = initSpecs.map((c) =>
    containerStatus(c, input, input.oldStatus?.initContainerStatuses, 'init'),
  );
  const statuses = specs.map((c) => containerStatus(c, input, input.oldStatus?.containerStatuses, 'app'));
  const ephemeralSpecs = pod.spec?.ephemeralContainers ?? [];
  const ephemeralStatuses = ephemeralSpecs.map((c) =>
    containerStatus(c, input, input.oldStatus?.ephemeralContainerStatuses, 'ephemeral'),
  );

  const generated = podPhase(pod, initStatuses, statuses, input.podIsTerminal ?? false, {
    containerRestartRules: input.containerRestartRules ?? false,
  });
  // The kubelet's three-way merge: a terminal phase the status manager or the API holds stays (a
  // pod that never ran, reported again after a restart, would read Pending from its containers).
  const isTerminal = (p: string | undefined): p is 'Succeeded' | 'Failed' =>
    p === 'Succeeded' || p === 'Failed';
  // The kubelet's oldPodStatus: the status manager's, else the API's.
  const old = input.oldStatus ?? pod.status;
  const oldPhase = old?.phase;
  const phase = isTerminal(generated)
    ? generated
    : isTerminal(oldPhase)
      ? oldPhase
      : isTerminal(pod.status?.phase)
        ? pod.status.phase
        : generated;
  const sandbox = runtime.sandboxStatuses[0];
  // Only a ready sandbox has a network worth reporting.
  const ips =
    runtime.ips.length > 0
      ? runtime.ips
      : sandbox?.state === 'ready' && sandbox.ip
        ? [sandbox.ip, ...sandbox.additionalIps]
        : [];
  const hostNetwork = pod.spec?.hostNetwork === true;
  // A pod whose sandbox is gone (it finished, or is being torn down) keeps the IPs it had, as the
  // kubelet keeps them: its status patch would otherwise delete them from the API.
  const oldIPs = (input.oldStatus?.podIPs ?? []).flatMap((p) => (p.ip ? [p.ip] : []));
  const podIPs = hostNetwork ? [input.nodeIP] : ips.length > 0 ? ips : oldIPs;

  const incompleteInits = initSpecs
    .filter((c, i) => c.restartPolicy !== 'Always' && initStatuses[i]?.state?.terminated?.exitCode !== 0)
    .map((c) => c.name);
  const unready = unreadyContainers(pod, initStatuses, statuses);
  const completed = phase === 'Succeeded';
  const conditions: V1PodCondition[] = [
    {
      type: 'PodReadyToStartContainers',
      status: sandbox?.state === 'ready' && (hostNetwork || ips.length > 0) ? 'True' : 'False',
    },
    incompleteInits.length === 0 || completed
      ? {
          type: 'Initialized',
          status: 'True',
          ...(completed && initSpecs.length > 0 ? { reason: 'PodCompleted' } : {}),
        }
      : {
          type: 'Initialized',
          status: 'False',
          reason: 'ContainersNotInitialized',
          message: `containers with incomplete status: [${incompleteInits.join(' ')}]`,
        },
    readinessCondition('ContainersReady', unready, completed),
    withReadinessGates(pod, readinessCondition('Ready', unready, completed)),
    { type: 'PodScheduled', status: 'True' },
    ...(input.resize?.conditions ?? []),
  ];

  // A pod's reason and message belong to its phase: they stay while it does (the kubelet's
  // generateAPIPodStatus), so a rejected or evicted pod reported again after a restart keeps why.
  const why =
    oldPhase === phase
      ? { reason: old?.reason || pod.status?.reason, message: old?.message || pod.status?.message }
      : {};

  return {
    phase,
    ...(why.reason ? { reason: why.reason } : {}),
    ...(why.message ? { message: why.message } : {}),
    conditions,
    hostIP: input.nodeIP,
    hostIPs: [{ ip: input.nodeIP }],
    ...(podIPs.length > 0 ? { podIP: podIPs[0], podIPs: podIPs.map((ip) => ({ ip })) } : {}),
    startTime: input.oldStatus?.startTime ?? now,
    qosClass: podQOSClass(pod),
    ...(initSpecs.length > 0 ? { initContainerStatuses: initStatuses } : {}),
    containerStatuses: statuses,
    ...(ephemeralSpecs.length > 0 ? { ephemeralContainerStatuses: ephemeralStatuses } : {}),
  };

  function containerStatus(
    spec: V1Container,
    ctx: GenerateStatusInput,
    old: V1ContainerStatus[] | undefined,
    kind: 'init' | 'app' | 'ephemeral',
  ): V1ContainerStatus {
    const isInit = kind === 'init';
    // The runtime lists instances newest first; the newest is the current one, the next the last state.
    const instances = ctx.runtime.containerStatuses.filter((c) => c.name === spec.name);
    const [current, previous] = instances;
    const prior = old?.find((o) => o.name === spec.name);
    // convertToAPIContainerStatuses: a container the runtime no longer lists (removed once it
    // exited) keeps the terminated status it had, exit code and all.
    const kept = !current && prior?.state?.terminated ? prior : undefined;
    const id = current ? `${current.id.type}://${current.id.id}` : kept?.containerID;
    const running = current?.state === 'running';
    // An init container that ran to completion is ready (the prober manager's UpdatePodStatus).
    // The prober manager knows nothing of ephemeral containers: never ready, started unset.
    const ready =
      kind === 'ephemeral'
        ? false
        : kept
          ? kept.ready
          : !isInit || spec.restartPolicy === 'Always'
            ? running && probeReady(spec, id)
            : current?.state === 'exited' && current.exitCode === 0;
    const started =
      kind === 'ephemeral'
        ? undefined
        : running && (spec.startupProbe ? ctx.probes?.started(uid, id ?? '') === true : true);
    // convertToAPIContainerStatuses' default state: a pod with init containers shows every
    // container not created yet as PodInitializing.
    const observed: V1ContainerState = current
      ? toState(current)
      : (kept?.state ?? {
          waiting: { reason: initSpecs.length > 0 ? 'PodInitializing' : 'ContainerCreating' },
        });
    let state = observed;
    let lastState = previous ? toState(previous) : prior?.lastState;
    // A container that will be started again and whose last start failed waits with that reason
    // until a start succeeds; the exit it is waiting after becomes its last state.
    const cached = willStartAgain(spec, current, kind) ? ctx.reasons?.get(uid, spec.name) : undefined;
    if (cached) {
      state = { waiting: { reason: cached.reason, ...(cached.message ? { message: cached.message } : {}) } };
      if (observed.terminated) lastState = observed;
    }
    return {
      name: spec.name,
      image: spec.image ?? '',
      // The CRI ImageRef (a repo digest when the runtime has one), never its image ID, as the
      // kubelet's convertToAPIContainerStatuses: image_id_test expects the digest here.
      imageID: current?.imageRef ?? kept?.imageID ?? '',
      ...(id ? { containerID: id } : {}),
      ready,
      ...(started === undefined ? {} : { started }),
      restartCount: current?.restartCount ?? prior?.restartCount ?? 0,
      state,
      lastState: lastState ?? {},
      ...resizeFields(spec, current),
      ...(current?.user ? { user: containerUser(current.user) } : {}),
    };
  }

  /** resources of a running container; allocatedResources (the allocated requests) when reported. */
  function resizeFields(spec: V1Container, current: ContainerStatus | undefined): Partial<V1ContainerStatus> {
    const resize = input.resize;
    if (resize === undefined) return {};
    const out: Partial<V1ContainerStatus> = {};
    if (resize.allocatedStatus && spec.resources?.requests)
      out.allocatedResources = { ...spec.resources.requests };
    if (current?.state === 'running')
      out.resources = containerStatusResources(spec, current, resize.actuated(spec.name));
    return out;
  }

  /** The kubelet's ShouldContainerBeRestarted, with a completed init container never rerun. */
  function willStartAgain(
    spec: V1Container,
    current: ContainerStatus | undefined,
    kind: 'init' | 'app' | 'ephemeral',
  ): boolean {
    if (input.podIsTerminal) return false;
    // An ephemeral container starts once and is never restarted.
    if (kind === 'ephemeral') return current === undefined;
    const isInit = kind === 'init';
    if (isInit && spec.restartPolicy === 'Always')
      return !pod.metadata?.deletionTimestamp && current?.state !== 'running';
    if (isInit && current?.state === 'exited' && current.exitCode === 0) return false;
    return shouldContainerBeRestarted(spec, pod, runtime, {
      containerRestartRules: input.containerRestartRules ?? false,
    });
  }

  function probeReady(spec: V1Container, id: string | undefined): boolean {
    if (!spec.readinessProbe) return true;
    return input.probes?.ready(uid, id ?? '') === true;
  }
}

/** The identity the runtime reports for the container's first process (containerStatuses[].user). */
function containerUser(u: NonNullable<ContainerStatus['user']>): V1ContainerUser {
  return {
    linux: { uid: Number(u.uid), gid: Number(u.gid), supplementalGroups: u.supplementalGroups.map(Number) },
  };
}

function toState(c: ContainerStatus): V1ContainerState {
  const id = `${c.id.type}://${c.id.id}`;
  switch (c.state) {
    case 'running':
      return { running: { startedAt: c.startedAt ?? c.createdAt } };
    case 'exited':
    case 'unknown':
      return {
        terminated: {
          exitCode: c.exitCode ?? (c.state === 'unknown' ? 137 : 0),
          reason:
            c.reason ||
            (c.state === 'unknown' ? 'ContainerStatusUnknown' : c.exitCode === 0 ? 'Completed' : 'Error'),
          ...(c.message ? { message: c.message } : {}),
          ...(c.startedAt ? { startedAt: c.startedAt } : {}),
          ...(c.finishedAt ? { finishedAt: c.finishedAt } : {}),
          containerID: id,
        },
      };
    default:
      return { waiting: { reason: 'ContainerCreating' } };
  }
}

/**
 * The kubelet's phase rules over init and app container states. With ContainerRestartRules a
 * stopped container counts as restarting or not by its own rules and policy, not the pod's.
 */
export function podPhase(
  pod: V1Pod,
  initStatuses: V1ContainerStatus[],
  statuses: V1ContainerStatus[],
  podIsTerminal: boolean,
  features: { containerRestartRules?: boolean } = {},
): 'Pending' | 'Running' | 'Succeeded' | 'Failed' {
  const restartPolicy = pod.spec?.restartPolicy ?? 'Always';
  const restarts = (spec: V1Container | undefined, exitCode: number) =>
    spec !== undefined && containerShouldRestart(spec, pod.spec, exitCode);
  const inits = pod.spec?.initContainers ?? [];
  for (const [i, spec] of inits.entries()) {
    if (spec.restartPolicy === 'Always') continue; // sidecars do not gate initialisation
    const t = initStatuses[i]?.state?.terminated;
    const fails = features.containerRestartRules
      ? (exitCode: number) => !restarts(spec, exitCode)
      : () => restartPolicy === 'Never';
    if (t && t.exitCode !== 0 && fails(t.exitCode)) return 'Failed';
    if (!t || t.exitCode !== 0) return podIsTerminal ? 'Failed' : 'Pending';
  }
  const specs = pod.spec?.containers ?? [];
  let running = 0;
  let waiting = 0;
  let stopped = 0;
  let stoppedNotRestartable = 0;
  let succeeded = 0;
  for (const [i, s] of statuses.entries()) {
    // Waiting to restart after an exit (CrashLoopBackOff) counts as stopped.
    const t = s.state?.running ? undefined : (s.state?.terminated ?? s.lastState?.terminated);
    if (s.state?.running) running++;
    else if (t) {
      stopped++;
      if (t.exitCode === 0) succeeded++;
      if (!restarts(specs[i], t.exitCode)) stoppedNotRestartable++;
    } else waiting++;
  }
  if (waiting > 0) return 'Pending';
  if (running > 0) return 'Running';
  if (stopped > 0) {
    if (features.containerRestartRules && !podIsTerminal) {
      if (stopped !== stoppedNotRestartable) return 'Running';
      return stopped === succeeded ? 'Succeeded' : 'Failed';
    }
    if (stopped === succeeded && restartPolicy !== 'Always') return 'Succeeded';
    if (podIsTerminal) return stopped === succeeded ? 'Succeeded' : 'Failed';
    if (restartPolicy === 'Always') return 'Running';
    if (restartPolicy === 'OnFailure') return 'Running';
    return 'Failed';
  }
  return podIsTerminal ? 'Failed' : 'Pending';
}
