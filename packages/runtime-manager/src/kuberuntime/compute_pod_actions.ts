// What one sync must do to move a pod from what the runtime has (PodStatus) to what the spec
// asks for. Pure: no I/O, so every rule of the kubelet's computePodActions is unit-testable.
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { ContainerID, ContainerStatus, PodStatus, ProbeResults } from '../container/runtime.js';
import { hashContainer } from './hash.js';
import { type ActuatedResources, type ContainersToUpdate, computePodResizeAction } from './resize.js';
import { containerShouldRestart, restartsWithoutExitCode } from './restart_rules.js';

export interface ContainerToKill {
  id: ContainerID;
  name: string;
  /** The spec, when the container is still in the pod (hooks and grace period come from it). */
  container?: V1Container;
  reason: string;
  message: string;
}

export interface PodActions {
  /** Stop every container and the sandbox. Set when a new sandbox is needed or the pod is finished. */
  killPod: boolean;
  createSandbox: boolean;
  /** The newest existing sandbox (empty when none). */
  sandboxId: string;
  /** Attempt number for the sandbox to create. */
  attempt: number;
  /** Why createSandbox is set, for the SandboxChanged event. */
  sandboxReason?: string;
  /** Indexes into spec.initContainers to start, in order. */
  initContainersToStart: number[];
  /** Indexes into spec.containers to start. */
  containersToStart: number[];
  /** Indexes into spec.ephemeralContainers to start: those never started. */
  ephemeralContainersToStart: number[];
  /** Keyed by runtime container id. */
  containersToKill: Map<string, ContainerToKill>;
  /** Running containers resized in place (UpdateContainerResources), per resource. */
  containersToUpdate: ContainersToUpdate;
  /**
   * The pod cgroup takes the pod's new size although no container is updated in place: a resize
   * restarts containers (RestartContainer), which start with limits the old pod cgroup may refuse.
   */
  updatePodResources?: boolean;
}

/** The kubelet feature gates computePodActions acts on. */
export interface PodActionFeatures {
  /** ContainerRestartRules: a container's own restartPolicy and rules decide whether it restarts. */
  containerRestartRules?: boolean;
}

const noProbes: ProbeResults = { liveness: () => undefined, startup: () => undefined };

export function restartPolicyOf(pod: V1Pod): 'Always' | 'OnFailure' | 'Never' {
  const p = pod.spec?.restartPolicy;
  return p === 'OnFailure' || p === 'Never' ? p : 'Always';
}

export function shouldRestartOnFailure(pod: V1Pod): boolean {
  return restartPolicyOf(pod) !== 'Never';
}

/**
 * Whether a container that fails without an exit code to match rules against (an init container
 * the kubelet re-runs, a running one a probe kills) starts again.
 */
function restartsOnFailure(pod: V1Pod, c: V1Container, features: PodActionFeatures): boolean {
  const pods = shouldRestartOnFailure(pod);
  return features.containerRestartRules ? restartsWithoutExitCode(c, pods) : pods;
}

/** Sidecars are init containers with restartPolicy Always. */
export function isRestartableInitContainer(c: V1Container): boolean {
  return c.restartPolicy === 'Always';
}

/** Newest status for a container name (PodStatus keeps them newest first). */
export function findContainerStatusByName(status: PodStatus, name: string): ContainerStatus | undefined {
  return status.containerStatuses.find((s) => s.name === name);
}

function succeeded(s: ContainerStatus | undefined): boolean {
  return s?.state === 'exited' && s.exitCode === 0;
}

/**
 * Whether a container that is not running should be started again, per the pod's restartPolicy
 * or, with ContainerRestartRules, the container's own rules and policy first.
 */
export function shouldContainerBeRestarted(
  container: V1Container,
  pod: V1Pod,
  status: PodStatus,
  features: PodActionFeatures = {},
): boolean {
  if (pod.metadata?.deletionTimestamp) return false;
  const s = findContainerStatusByName(status, container.name);
  if (!s) return true;
  if (s.state === 'running') return false;
  if (s.state === 'unknown' || s.state === 'created') return true;
  if (features.containerRestartRules) return containerShouldRestart(container, pod.spec, s.exitCode ?? 0);
  const policy = restartPolicyOf(pod);
  if (policy === 'Never') return false;
  if (policy === 'OnFailure' && s.exitCode === 0) return false;
  return true;
}

/** Whether the sandbox must be (re)created, the attempt number to use, and why. */
export function podSandboxChanged(
  pod: V1Pod,
  status: PodStatus,
): { changed: boolean; attempt: number; sandboxId: string; reason?: string } {
  const newest = status.sandboxStatuses[0];
  if (!newest) return { changed: true, attempt: 0, sandboxId: '', reason: 'no sandbox' };
  const next = { attempt: newest.attempt + 1, sandboxId: newest.id };
  const ready = status.sandboxStatuses.filter((s) => s.state === 'ready').length;
  if (ready > 1) return { changed: true, ...next, reason: `${ready} ready sandboxes, need one` };
  if (newest.state !== 'ready') return { changed: true, ...next, reason: 'sandbox is not ready' };
  const hostNetwork = pod.spec?.hostNetwork === true;
  if (newest.hostNetwork !== hostNetwork) {
    return { changed: true, ...next, reason: 'sandbox network namespace changed' };
  }
  // ip === '' means the runtime reported a network without an address; undefined means it reported none.
  if (!hostNetwork && newest.ip === '')
    return { changed: true, ...next, reason: 'sandbox has no IP address' };
  return { changed: false, attempt: newest.attempt, sandboxId: newest.id };
}

function killEntry(s: ContainerStatus, container: V1Container | undefined, reason: string, message: string) {
  return { id: s.id, name: s.name, container, reason, message };
}

/** Why a running container must be killed (a changed spec, a failed liveness or startup probe), if it must. */
function killReason(
  pod: V1Pod,
  c: V1Container,
  s: ContainerStatus,
  probes: ProbeResults,
  kind: 'Container' | 'Init container',
): { reason: string; message: string } | undefined {
  if (s.hash !== hashContainer(c))
    return { reason: 'SpecChanged', message: `${kind} ${c.name} definition changed` };
  // From the deletion on, the kubelet counts liveness and startup as success: a failure recorded
  // before the prober saw the deletion must not kill a container of a terminating pod.
  if (pod.metadata?.deletionTimestamp) return undefined;
  if (probes.liveness(s.id.id) === 'failure')
    return { reason: 'LivenessProbe', message: `${kind} ${c.name} failed liveness probe` };
  if (probes.startup(s.id.id) === 'failure')
    return { reason: 'StartupProbe', message: `${kind} ${c.name} failed startup probe` };
  return undefined;
}

/**
 * Init containers, one at a time and in order. Returns true when the pod is initialized and app
 * containers may be considered. Sidecars (restartable init containers) are started in their
 * place in the order and kept running afterwards.
 */
function computeInitContainerActions(
  pod: V1Pod,
  status: PodStatus,
  probes: ProbeResults,
  changes: PodActions,
  features: PodActionFeatures,
): boolean {
  const inits = pod.spec?.initContainers ?? [];
  if (inits.length === 0) return true;
  // Once an app container exists the pod has been initialized; init containers never rerun.
  const appNames = new Set((pod.spec?.containers ?? []).map((c) => c.name));
  const initialized = status.containerStatuses.some((s) => appNames.has(s.name));

  for (const [i, c] of inits.entries()) {
    const s = findContainerStatusByName(status, c.name);
    if (isRestartableInitContainer(c)) {
      if (s?.state === 'running') {
        // A sidecar always restarts, whatever the pod's restart policy.
        const kill = killReason(pod, c, s, probes, 'Init container');
        if (kill) {
          const restart = !pod.metadata?.deletionTimestamp;
          changes.containersToKill.set(
            s.id.id,
            killEntry(s, c, kill.reason, restart ? `${kill.message}, will be restarted` : kill.message),
          );
          if (restart) changes.initContainersToStart.push(i);
          if (!initialized) return false;
          continue;
        }
        // A sidecar with a startup probe gates the next init container until it has started.
        if (!initialized && c.startupProbe && probes.startup(s.id.id) !== 'success') return false;
        continue;
      }
      if (s?.state === 'unknown') {
        changes.containersToKill.set(s.id.id, killEntry(s, c, 'Unknown', 'Container is in unknown state'));
      }
      if (!pod.metadata?.deletionTimestamp) changes.initContainersToStart.push(i);
      if (!initialized) return false;
      continue;
    }
    if (initialized) continue;
    if (!s) {
      changes.initContainersToStart.push(i);
      return false;
    }
    if (s.state === 'running') return false;
    if (succeeded(s)) continue;
    if (s.state === 'exited' && !restartsOnFailure(pod, c, features)) {
      // A failed init container with restartPolicy Never fails the pod.
      changes.killPod = true;
      return false;
    }
    if (s.state === 'unknown') {
      changes.containersToKill.set(s.id.id, killEntry(s, c, 'Unknown', 'Container is in unknown state'));
    }
    changes.initContainersToStart.push(i);
    return false;
  }
  return true;
}

/**
 * The resize half of the actions: running containers whose allocation moved are updated in place,
 * or killed and started again when their resizePolicy says RestartContainer. A sidecar whose
 * startup probe has not succeeded yet waits, as the kubelet resizes it only once started.
 */
function addResizeActions(
  pod: V1Pod,
  status: PodStatus,
  probes: ProbeResults,
  actuated: ActuatedResources,
  changes: PodActions,
): void {
  const skip = new Set(changes.containersToKill.keys());
  for (const c of pod.spec?.initContainers ?? []) {
    const s = findContainerStatusByName(status, c.name);
    if (isRestartableInitContainer(c) && c.startupProbe && s && probes.startup(s.id.id) !== 'success')
      skip.add(s.id.id);
  }
  const resize = computePodResizeAction(pod, status, actuated, skip);
  changes.containersToUpdate = resize.update;
  for (const r of resize.restart) {
    const message = `Container ${r.container.name} resize requires restart`;
    changes.containersToKill.set(r.status.id.id, killEntry(r.status, r.container, 'Resize', message));
    (r.init ? changes.initContainersToStart : changes.containersToStart).push(r.index);
    changes.updatePodResources = true;
  }
  // Init containers start in spec order.
  changes.initContainersToStart.sort((a, b) => a - b);
}

/**
 * `actuated`: what each container's cgroup was last given; with it, running containers whose
 * (allocated) resources in `pod` differ are resized in place, or restarted when their
 * resizePolicy says RestartContainer.
 */
export function computePodActions(
  pod: V1Pod,
  status: PodStatus,
  probes: ProbeResults = noProbes,
  actuated?: ActuatedResources,
  features: PodActionFeatures = {},
): PodActions {
  const sandbox = podSandboxChanged(pod, status);
  const changes: PodActions = {
    killPod: sandbox.changed,
    createSandbox: sandbox.changed,
    sandboxId: sandbox.sandboxId,
    attempt: sandbox.attempt,
    sandboxReason: sandbox.reason,
    initContainersToStart: [],
    containersToStart: [],
    ephemeralContainersToStart: [],
    containersToKill: new Map(),
    containersToUpdate: { memory: [], cpu: [] },
  };
  const containers = pod.spec?.containers ?? [];
  const inits = pod.spec?.initContainers ?? [];

  if (changes.createSandbox) {
    // A pod that must not restart and already ran containers is finished, not re-created.
    if (!shouldRestartOnFailure(pod) && sandbox.attempt !== 0 && status.containerStatuses.length > 0) {
      changes.createSandbox = false;
      return changes;
    }
    if (pod.metadata?.deletionTimestamp) {
      changes.createSandbox = false;
      return changes;
    }
    if (inits.length > 0) {
      changes.initContainersToStart.push(0);
      return changes;
    }
    for (const [i, c] of containers.entries()) {
      if (restartPolicyOf(pod) === 'OnFailure' && succeeded(findContainerStatusByName(status, c.name)))
        continue;
      changes.containersToStart.push(i);
    }
    // Every container already succeeded: nothing to run in a new sandbox.
    if (changes.containersToStart.length === 0) changes.createSandbox = false;
    return changes;
  }

  // Ephemeral containers start in the existing sandbox, initialized or not, and only once: one
  // that ran (whatever its end) is never started again.
  for (const [i, c] of (pod.spec?.ephemeralContainers ?? []).entries()) {
    if (!findContainerStatusByName(status, c.name)) changes.ephemeralContainersToStart.push(i);
  }

  const initialized = computeInitContainerActions(pod, status, probes, changes, features);
  // Running sidecars are resized while the pod initializes too, as the kubelet does.
  if (!initialized) {
    if (actuated && !changes.killPod) addResizeActions(pod, status, probes, actuated, changes);
    return changes;
  }

  let keepCount = 0;
  for (const [i, c] of containers.entries()) {
    const s = findContainerStatusByName(status, c.name);
    if (!s || s.state !== 'running') {
      if (shouldContainerBeRestarted(c, pod, status, features)) {
        changes.containersToStart.push(i);
        if (s?.state === 'unknown') {
          changes.containersToKill.set(
            s.id.id,
            killEntry(s, c, 'Unknown', 'Container is in unknown state, try killing it before restart'),
          );
        }
      }
      continue;
    }
    const kill = killReason(pod, c, s, probes, 'Container');
    if (!kill) {
      keepCount++;
      continue;
    }
    // A changed spec restarts the container whatever the restart policy; a terminating pod starts nothing.
    const restart =
      !pod.metadata?.deletionTimestamp &&
      (kill.reason === 'SpecChanged' || restartsOnFailure(pod, c, features));
    if (restart) changes.containersToStart.push(i);
    changes.containersToKill.set(
      s.id.id,
      killEntry(s, c, kill.reason, restart ? `${kill.message}, will be restarted` : kill.message),
    );
  }

  if (actuated) addResizeActions(pod, status, probes, actuated, changes);

  if (keepCount === 0 && changes.containersToStart.length === 0) {
    // Nothing left to run: the pod is done. Sidecars must not keep it alive, so none restarts.
    changes.killPod = true;
    changes.initContainersToStart = [];
  }
  return changes;
}
