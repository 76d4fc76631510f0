// The runtime manager (the kubelet's kubeGenericRuntimeManager): pods in, CRI calls out. It
// keeps no state of its own: everything it knows about a pod it reads back from the runtime's
// sandboxes and containers and their labels, so a new instance adopts running pods as they are.
// Here: construction, SyncPod in its steps and KillPod. Beside it, as in the kubelet: what the
// runtime has of pods (pod_status.ts), the image service (image.ts), container GC (gc.ts), log
// files (logs.ts), and one sandbox or container (sandbox.ts, container.ts).

import { realClock } from '@kh/apimachinery';
import type { ContainerEventResponse, CriClient, PodSandboxConfig } from '@kh/cri-api';
import type { V1Container, V1Pod, V1Secret } from '@kubernetes/client-node';
import type {
  Backoff,
  Clock,
  ContainerGCPolicy,
  ContainerID,
  EventRecorder,
  ExecResult,
  Image,
  ImageGCPolicy,
  ImageStats,
  PodStateProvider,
  PodStatus,
  PodSyncResult,
  ProbeResults,
  RunningPod,
  Runtime,
  RuntimeStatus,
  SyncAction,
  SyncStepResult,
} from '../container/runtime.js';
import {
  ErrConfigPodSandbox,
  ErrCrashLoopBackOff,
  ErrCreatePodSandbox,
  ErrKillContainer,
  ErrKillPodSandbox,
  ErrResizePodInPlace,
  ErrRunContainer,
  failStep,
  formatDuration,
  SyncStepError,
} from '../container/sync_result.js';
import type { ImageGCManager } from '../images/image_gc.js';
import {
  computePodActions,
  isRestartableInitContainer,
  type PodActionFeatures,
  type PodActions,
} from './compute_pod_actions.js';
import {
  type ContainerStartPrep,
  killContainer,
  killContainersWithSyncResult,
  prepareContainerStart,
  removeContainer,
  startContainer,
} from './container.js';
import {
  type ManagerContext,
  type PathMapping,
  type RuntimeHandlerResolver,
  recordEvent,
  type UserNamespaceProvider,
} from './context.js';
import { ContainerGC, type ContainerGCReport } from './gc.js';
import { hashContainer } from './hash.js';
import { type ImagePullOptions, RuntimeImages } from './image.js';
import { getPodStatus, getPods, podStatusFromEvent, runningPodFromStatus } from './pod_status.js';
import {
  type ActuatedResources,
  doPodResizeAction,
  type PodCgroups,
  type PodStatsProvider,
} from './resize.js';
import { DefaultRuntimeHelper, type RuntimeHelper } from './runtime_helper.js';
import { createPodSandbox, generatePodSandboxConfig } from './sandbox.js';
import { DefaultSecurityOptions, type SecurityOptions } from './security_context.js';

export interface RuntimeManagerOptions {
  cri: CriClient;
  /**
   * The image service, when it listens on another endpoint than the runtime service
   * (--image-service-endpoint). Default: `cri` serves both.
   */
  imageCri?: CriClient;
  clock?: Clock;
  recorder?: EventRecorder;
  /** Default /var/log/pods. */
  podLogsRootDir?: string;
  /** Default /var/lib/kubelet/pods. */
  podsDir?: string;
  /** Default true. Turn off when the runtime cannot see podsDir (it runs on another filesystem). */
  mountTerminationMessage?: boolean;
  /** Default: DefaultRuntimeHelper over podsDir with cgroupParent. */
  runtimeHelper?: RuntimeHelper;
  /** Pod cgroup parent for the default helper. */
  cgroupParent?: string;
  probeResults?: ProbeResults;
  /** Which pods are gone, for container GC. Default: every pod is still wanted. */
  podStateProvider?: PodStateProvider;
  /** Pull policy knobs (serializeImagePulls, maxParallelImagePulls, registryPullQPS, registryBurst). */
  images?: ImagePullOptions;
  imageGCPolicy?: ImageGCPolicy;
  /** The sandbox (pause) image, which image GC never removes. */
  podSandboxImage?: string;
  /** When the runtime sees podLogsRootDir/podsDir under another root (agent outside the node). */
  pathMapping?: PathMapping;
  /** Labels added to every sandbox and container (never overriding io.kubernetes.* ones). */
  extraLabels?: Record<string, string>;
  /** Resolves pods' runtimeClassName to the CRI runtime handler. Default: every pod on handler "". */
  runtimeClassManager?: RuntimeHandlerResolver;
  /**
   * Capacity of the image filesystem (CRI ImageFsInfo has only usage). Default: statfs of the
   * reported mountpoint, which needs the agent on the runtime's host.
   */
  imageFsCapacity?: (mountpoint: string) => Promise<number>;
  /**
   * The pods' user namespaces (the node agent's user namespace manager, UserNamespacesSupport on).
   * Default: none, so pods that set hostUsers fail their sandbox, as with the gate off.
   */
  userNamespaces?: UserNamespaceProvider;
  /** The kubelet feature gates deciding restarts (ContainerRestartRules). */
  podActionFeatures?: PodActionFeatures;
  /** KubeletConfiguration seccompDefault and the seccomp profile root. Default: off, /var/lib/kubelet/seccomp. */
  security?: Partial<SecurityOptions>;
  /**
   * The agent's record of what each container's cgroup was given (allocation manager). With it,
   * syncPod resizes running containers in place to the pod's resources; without it, never.
   */
  actuatedResources?: ActuatedResources;
  /** The pod-level cgroup, resized around a pod's containers. Default: none. */
  podCgroups?: PodCgroups;
  /** Memory use, read before a resize lowers memory limits. Default: none, limits lowered unchecked. */
  podStats?: PodStatsProvider;
}

const keepAll: PodStateProvider = {
  shouldPodContentBeRemoved: () => false,
  shouldPodRuntimeBeRemoved: () => false,
};
const noProbes: ProbeResults = { liveness: () => undefined, startup: () => undefined };

/** Backoff key of a container: stable across restarts while its spec (hash) stays the same. */
export function containerBackoffKey(pod: V1Pod, container: V1Container, hash: string): string {
  return `${pod.metadata?.name ?? ''}_${pod.metadata?.namespace ?? ''}_${pod.metadata?.uid ?? ''}_${container.name}_${hash}`;
}

/** What the steps of one syncPod pass share. */
interface SyncPass {
  pod: V1Pod;
  podStatus: PodStatus;
  pullSecrets: V1Secret[];
  backoff: Backoff;
  result: PodSyncResult;
  /**
   * Checked before every kill and start: actions computed before the pod's termination was
   * requested (a liveness failure, a restart) must not be carried out after it.
   */
  aborted(): boolean;
}

/** The sandbox the pass starts containers in, and what they take from it. */
interface PassSandbox {
  id: string;
  config: PodSandboxConfig;
  podIPs: string[];
  /** Started while a new sandbox was being created (prepareContainerStart). */
  preps: Map<V1Container, ContainerStartPrep>;
}

export class KubeGenericRuntimeManager implements Runtime {
  readonly #ctx: ManagerContext;
  readonly #podActionFeatures: PodActionFeatures;
  readonly #version: { runtimeName: string; runtimeVersion: string; runtimeApiVersion: string };
  readonly #images: RuntimeImages;
  readonly #containerGC: ContainerGC;
  readonly #actuated: ActuatedResources | undefined;
  readonly #podCgroups: PodCgroups | undefined;
  readonly #podStats: PodStatsProvider | undefined;
  readonly imageGC: ImageGCManager;

  private constructor(
    ctx: ManagerContext,
    version: { runtimeName: string; runtimeVersion: string; runtimeApiVersion: string },
    images: RuntimeImages,
    opts: RuntimeManagerOptions,
  ) {
    this.#ctx = ctx;
    this.#podActionFeatures = opts.podActionFeatures ?? {};
    this.#version = version;
    this.#images = images;
    this.#containerGC = new ContainerGC(ctx, opts.podStateProvider ?? keepAll);
    this.#actuated = opts.actuatedResources;
    this.#podCgroups = opts.podCgroups;
    this.#podStats = opts.podStats;
    this.imageGC = images.newImageGC(opts.imageGCPolicy, {
      clock: ctx.clock,
      sandboxImage: opts.podSandboxImage,
    });
  }

  /** Connects to the runtime (CRI Version) and builds the manager around it. */
  static async create(opts: RuntimeManagerOptions): Promise<KubeGenericRuntimeManager> {
    const v = await opts.cri.version({ version: 'v1' });
    const podsDir = opts.podsDir ?? '/var/lib/kubelet/pods';
    const clock = opts.clock ?? realClock;
    const images = new RuntimeImages({
      imageCri: opts.imageCri ?? opts.cri,
      runtimeCri: opts.cri,
      clock,
      recorder: opts.recorder,
      pulls: opts.images,
      imageFsCapacity: opts.imageFsCapacity,
    });
    const ctx: ManagerContext = {
      cri: opts.cri,
      runtimeName: v.runtimeName,
      clock,
      recorder: opts.recorder,
      helper: opts.runtimeHelper ?? new DefaultRuntimeHelper(podsDir, opts.cgroupParent ?? ''),
      podLogsRootDir: opts.podLogsRootDir ?? '/var/log/pods',
      podsDir,
      mountTerminationMessage: opts.mountTerminationMessage ?? true,
      images: images.manager,
      probes: opts.probeResults ?? noProbes,
      pathMapping: opts.pathMapping,
      extraLabels: opts.extraLabels ?? {},
      runtimeClasses: opts.runtimeClassManager,
      userNamespaces: opts.userNamespaces,
      security: { ...DefaultSecurityOptions, ...opts.security },
      imageUser: (image) => images.imageUser(image),
    };
    const version = {
      runtimeName: v.runtimeName,
      runtimeVersion: v.runtimeVersion,
      runtimeApiVersion: v.runtimeApiVersion,
    };
    return new KubeGenericRuntimeManager(ctx, version, images, opts);
  }

  type(): string {
    return this.#version.runtimeName;
  }

  async version(): Promise<string> {
    return (await this.#ctx.cri.version({ version: 'v1' })).runtimeVersion;
  }

  async apiVersion(): Promise<string> {
    return (await this.#ctx.cri.version({ version: 'v1' })).runtimeApiVersion;
  }

  async status(): Promise<RuntimeStatus> {
    const res = await this.#ctx.cri.status({ verbose: false });
    return {
      conditions: (res.status?.conditions ?? []).map((c) => ({
        type: c.type,
        status: c.status,
        reason: c.reason,
        message: c.message,
      })),
      ...(res.features
        ? { features: { supplementalGroupsPolicy: res.features.supplementalGroupsPolicy } }
        : {}),
      runtimeHandlers: res.runtimeHandlers.map((h) => ({
        name: h.name,
        supportsRecursiveReadOnlyMounts: h.features?.recursiveReadOnlyMounts ?? false,
        supportsUserNamespaces: h.features?.userNamespaces ?? false,
      })),
    };
  }

  /** Passes the node's pod CIDR on to the runtime (the kubelet's UpdatePodCIDR). */
  async updatePodCIDR(podCidr: string): Promise<void> {
    await this.#ctx.cri.updateRuntimeConfig({ runtimeConfig: { networkConfig: { podCidr } } });
  }

  // ---- what the runtime has (pod_status.ts) --------------------------------------------------

  getPods(all: boolean): Promise<RunningPod[]> {
    return getPods(this.#ctx, all);
  }

  getPodStatus(uid: string, name: string, namespace: string): Promise<PodStatus> {
    return getPodStatus(this.#ctx, uid, name, namespace);
  }

  /** The pod's status as a CRI container event carries it, for the evented PLEG. */
  podStatusFromEvent(ev: ContainerEventResponse): Promise<PodStatus | undefined> {
    return podStatusFromEvent(this.#ctx, ev);
  }

  deleteContainer(id: ContainerID): Promise<void> {
    return removeContainer(this.#ctx, id.id);
  }

  // ---- SyncPod ---------------------------------------------------------------------------------

  /**
   * Brings the pod toward its spec in the kubelet's steps: compute the actions; kill the pod
   * when its sandbox must change, else the containers the spec no longer wants; prune dead init
   * containers; create the sandbox; start new ephemeral containers; start init containers, one at
   * a time; resize; start the containers.
   */
  async syncPod(
    pod: V1Pod,
    podStatus: PodStatus,
    pullSecrets: V1Secret[],
    backoff: Backoff,
    signal?: AbortSignal,
  ): Promise<PodSyncResult> {
    const result: PodSyncResult = { steps: [] };
    const pass: SyncPass = {
      pod,
      podStatus,
      pullSecrets,
      backoff,
      result,
      aborted: () => {
        if (signal?.aborted) result.aborted = true;
        return result.aborted === true;
      },
    };
    if (pass.aborted()) return result;
    const actions = this.#computePodActions(pass);
    if (actions.killPod) {
      if (!(await this.#killPodForSync(pass, actions))) return result;
    } else if (!(await this.#killContainers(pass, actions))) return result;
    // A new sandbox reruns init containers from the first, so their old instances all go;
    // otherwise only the newest dead instance of each is kept.
    await this.#pruneInitContainers(pass, actions.createSandbox ? 0 : 1);
    if (pass.aborted()) return result;
    const sandbox = actions.createSandbox
      ? await this.#createSandbox(pass, actions)
      : {
          id: actions.sandboxId,
          config: await generatePodSandboxConfig(this.#ctx, pod, actions.attempt),
          podIPs: podStatus.ips,
          preps: new Map(),
        };
    if (!sandbox) return result;
    await this.#startEphemeralContainers(pass, actions, sandbox);
    if (!(await this.#startInitContainers(pass, actions, sandbox))) return result;
    if (!(await this.#resizeContainers(pass, actions))) return result;
    await this.#startContainers(pass, actions, sandbox);
    return result;
  }

  /** Step 1: the actions, and the SandboxChanged event when an existing sandbox is replaced. */
  #computePodActions(pass: SyncPass): PodActions {
    const actions = computePodActions(
      pass.pod,
      pass.podStatus,
      this.#ctx.probes,
      this.#actuated,
      this.#podActionFeatures,
    );
    if (actions.createSandbox && actions.sandboxId) {
      recordEvent(
        this.#ctx,
        pass.pod,
        'Normal',
        'SandboxChanged',
        'Pod sandbox changed, it will be killed and re-created.',
      );
    }
    return actions;
  }

  /** Step 2, the pod: every container and the sandbox. False when the pass ends here. */
  async #killPodForSync(pass: SyncPass, actions: PodActions): Promise<boolean> {
    const steps = await this.#killPodWithSyncResult(
      pass.pod,
      runningPodFromStatus(pass.podStatus),
      undefined,
    );
    pass.result.steps.push(...steps);
    // A pod that is done (killed without a new sandbox) gets nothing started.
    return !steps.some((s) => s.error) && actions.createSandbox;
  }

  /** Step 2, the containers: those the spec or a probe no longer wants. False when one failed. */
  async #killContainers(pass: SyncPass, actions: PodActions): Promise<boolean> {
    for (const k of actions.containersToKill.values()) {
      if (pass.aborted()) return false;
      const step: SyncStepResult = { action: 'KillContainer', target: k.name };
      pass.result.steps.push(step);
      try {
        await killContainer(this.#ctx, {
          pod: pass.pod,
          container: k.container,
          id: k.id.id,
          name: k.name,
          reason: k.reason,
          message: k.message,
        });
      } catch (err) {
        failStep(step, ErrKillContainer, err);
        return false;
      }
    }
    return true;
  }

  /** Step 3: removes dead init containers, keeping the newest `keep` of each. */
  async #pruneInitContainers(pass: SyncPass, keep: number): Promise<void> {
    const names = (pass.pod.spec?.initContainers ?? []).map((c) => c.name);
    const seen = new Map<string, number>();
    for (const s of pass.podStatus.containerStatuses) {
      if (!names.includes(s.name) || s.state === 'running') continue;
      const n = (seen.get(s.name) ?? 0) + 1;
      seen.set(s.name, n);
      // Best effort: a leftover dead init container only costs disk until container GC.
      if (n > keep) await removeContainer(this.#ctx, s.id.id).catch(() => undefined);
    }
  }

  /**
   * Step 4: a new sandbox and its IPs. What the starts of this pass can do without the sandbox
   * runs while it is being created, instead of one step after another behind it. Undefined when
   * it failed.
   */
  async #createSandbox(pass: SyncPass, actions: PodActions): Promise<PassSandbox | undefined> {
    const ctx = this.#ctx;
    const { pod, result } = pass;
    const preps = new Map<V1Container, ContainerStartPrep>();
    for (const c of containersToStart(pod, actions)) {
      preps.set(c, prepareContainerStart(ctx, pod, c, pass.podStatus));
    }
    const step: SyncStepResult = { action: 'CreatePodSandbox', target: pod.metadata?.name ?? '' };
    result.steps.push(step);
    let created: { id: string; config: PodSandboxConfig };
    try {
      created = await createPodSandbox(ctx, pod, actions.attempt);
    } catch (err) {
      failStep(step, ErrCreatePodSandbox, err, 'Failed to create pod sandbox: ');
      recordEvent(ctx, pod, 'Warning', 'FailedCreatePodSandBox', step.message ?? '');
      return undefined;
    }
    try {
      const st = (await ctx.cri.podSandboxStatus({ podSandboxId: created.id })).status;
      // A hostNetwork pod keeps the IPs the caller put in its status (the kubelet's: the node's).
      const podIPs = pod.spec?.hostNetwork
        ? pass.podStatus.ips
        : st?.network?.ip
          ? [st.network.ip, ...st.network.additionalIps.map((i) => i.ip)]
          : [];
      return { ...created, podIPs, preps };
    } catch (err) {
      const cfgStep: SyncStepResult = { action: 'ConfigPodSandbox', target: created.id };
      result.steps.push(cfgStep);
      failStep(cfgStep, ErrConfigPodSandbox, err);
      return undefined;
    }
  }

  /**
   * Step 5: ephemeral containers, before init containers so that a pod whose init container
   * fails to start can still be debugged. They only ever join an existing sandbox.
   */
  async #startEphemeralContainers(pass: SyncPass, actions: PodActions, sandbox: PassSandbox): Promise<void> {
    const ecs = pass.pod.spec?.ephemeralContainers ?? [];
    for (const i of actions.ephemeralContainersToStart) {
      if (pass.aborted()) return;
      const ec = ecs[i]!;
      await this.#startContainer(pass, sandbox, 'StartContainer', ec, ec.targetContainerName);
    }
  }

  /** Step 6: init containers in order. False when a regular one failed to start: it blocks the rest. */
  async #startInitContainers(pass: SyncPass, actions: PodActions, sandbox: PassSandbox): Promise<boolean> {
    const inits = pass.pod.spec?.initContainers ?? [];
    for (const i of actions.initContainersToStart) {
      if (pass.aborted()) return false;
      const c = inits[i]!;
      if (!(await this.#startContainer(pass, sandbox, 'InitContainer', c)) && !isRestartableInitContainer(c))
        return false;
    }
    return true;
  }

  /** Step 7: running containers resized in place. False when an update failed. */
  async #resizeContainers(pass: SyncPass, actions: PodActions): Promise<boolean> {
    const { memory, cpu } = actions.containersToUpdate;
    if (this.#actuated === undefined) return true;
    const inPlace = memory.length > 0 || cpu.length > 0;
    if (!inPlace && !actions.updatePodResources) return true;
    if (pass.aborted()) return false;
    const step: SyncStepResult = { action: 'ResizePodInPlace', target: pass.pod.metadata?.name ?? '' };
    pass.result.steps.push(step);
    try {
      // Containers restarted for a resize start with limits the old pod cgroup may refuse.
      if (!inPlace) {
        await this.#podCgroups?.update(pass.pod);
        return true;
      }
      const stats = this.#podStats;
      await doPodResizeAction(pass.pod, actions.containersToUpdate, {
        actuated: this.#actuated,
        podCgroups: this.#podCgroups,
        ...(stats ? { memoryUsage: () => stats.podMemoryUsage(pass.pod, pass.podStatus) } : {}),
        update: async (containerId, linux) => {
          await this.#ctx.cri.updateContainerResources({
            containerId,
            linux,
            windows: undefined,
            annotations: {},
          });
        },
      });
      return true;
    } catch (err) {
      failStep(step, ErrResizePodInPlace, err);
      return false;
    }
  }

  /** Step 8: the pod's containers. */
  async #startContainers(pass: SyncPass, actions: PodActions, sandbox: PassSandbox): Promise<void> {
    const containers = pass.pod.spec?.containers ?? [];
    for (const i of actions.containersToStart) {
      if (pass.aborted()) return;
      await this.#startContainer(pass, sandbox, 'StartContainer', containers[i]!);
    }
  }

  /** One start as a step: CrashLoopBackOff first, then image, create, start and postStart. */
  async #startContainer(
    pass: SyncPass,
    sandbox: PassSandbox,
    action: SyncAction,
    container: V1Container,
    targetContainerName?: string,
  ): Promise<boolean> {
    const step: SyncStepResult = { action, target: container.name };
    pass.result.steps.push(step);
    const inBackoff = this.#crashLoopBackoff(pass.pod, container, pass.podStatus, pass.backoff);
    if (inBackoff) {
      step.error = new SyncStepError(ErrCrashLoopBackOff, inBackoff);
      step.reason = ErrCrashLoopBackOff;
      step.message = inBackoff;
      return false;
    }
    try {
      await startContainer(this.#ctx, {
        pod: pass.pod,
        container,
        podStatus: pass.podStatus,
        pullSecrets: pass.pullSecrets,
        sandboxId: sandbox.id,
        sandboxConfig: sandbox.config,
        podIPs: sandbox.podIPs,
        prep: sandbox.preps.get(container),
        targetContainerName,
      });
      this.#actuated?.setActuatedResources(
        pass.pod.metadata?.uid ?? '',
        container.name,
        container.resources ?? {},
      );
      return true;
    } catch (err) {
      failStep(step, err instanceof SyncStepError ? err.reason : ErrRunContainer, err);
      return false;
    }
  }

  /** The CrashLoopBackOff message when `container` must wait before its next start, else undefined. */
  #crashLoopBackoff(
    pod: V1Pod,
    container: V1Container,
    podStatus: PodStatus,
    backoff: Backoff,
  ): string | undefined {
    const s = podStatus.containerStatuses.find((c) => c.name === container.name);
    if (!s || s.state !== 'exited' || !s.finishedAt) return undefined;
    const key = containerBackoffKey(pod, container, hashContainer(container));
    const finished = s.finishedAt.getTime();
    if (backoff.isInBackOffSince(key, finished)) {
      recordEvent(
        this.#ctx,
        pod,
        'Warning',
        'BackOff',
        `Back-off restarting failed container ${container.name} in pod ${podRef(pod)}`,
      );
      return `back-off ${formatDuration(backoff.get(key))} restarting failed container=${container.name} pod=${podRef(pod)}`;
    }
    backoff.next(key, finished);
    return undefined;
  }

  // ---- KillPod ---------------------------------------------------------------------------------

  async killPod(
    pod: V1Pod | undefined,
    runningPod: RunningPod,
    gracePeriodOverrideSeconds?: number,
  ): Promise<void> {
    const steps = await this.#killPodWithSyncResult(pod, runningPod, gracePeriodOverrideSeconds);
    const failed = steps.filter((s) => s.error);
    // Nothing of the pod runs any more: its sub-path mounts go (the kubelet's CleanSubPaths).
    if (!failed.length) await this.#ctx.helper.cleanupPod?.(runningPod.uid);
    if (failed.length) {
      throw new KillPodError(
        `failed to kill pod ${runningPod.namespace}/${runningPod.name}: ${failed.map((s) => `${s.action} ${s.target}: ${s.message}`).join('; ')}`,
        steps,
      );
    }
  }

  /** The containers (containers first, sidecars last, as KEP-753 orders), then the sandboxes. */
  async #killPodWithSyncResult(
    pod: V1Pod | undefined,
    runningPod: RunningPod,
    gracePeriodOverrideSeconds: number | undefined,
  ): Promise<SyncStepResult[]> {
    const steps = await killContainersWithSyncResult(this.#ctx, pod, runningPod, gracePeriodOverrideSeconds);
    for (const s of runningPod.sandboxes) {
      const step: SyncStepResult = { action: 'KillPodSandbox', target: s.id };
      steps.push(step);
      try {
        await this.#ctx.cri.stopPodSandbox({ podSandboxId: s.id });
      } catch (err) {
        failStep(step, ErrKillPodSandbox, err);
      }
    }
    return steps;
  }

  // ---- GC (gc.ts), images (image.ts), exec ------------------------------------------------------

  garbageCollect(
    policy: ContainerGCPolicy,
    allSourcesReady: boolean,
    evictNonDeletedPods: boolean,
  ): Promise<void> {
    return this.#containerGC.garbageCollect(policy, allSourcesReady, evictNonDeletedPods);
  }

  /** Like garbageCollect, but returns what was removed and collects errors instead of throwing. */
  garbageCollectWithReport(
    policy: ContainerGCPolicy,
    allSourcesReady: boolean,
    evictNonDeletedPods: boolean,
  ): Promise<ContainerGCReport> {
    return this.#containerGC.garbageCollectWithReport(policy, allSourcesReady, evictNonDeletedPods);
  }

  pullImage(image: string, pullSecrets: V1Secret[]): Promise<string> {
    return this.#images.pullImage(image, pullSecrets);
  }

  getImageRef(image: string): Promise<string | undefined> {
    return this.#images.getImageRef(image);
  }

  listImages(): Promise<Image[]> {
    return this.#images.listImages();
  }

  removeImage(image: string): Promise<void> {
    return this.#images.removeImage(image);
  }

  imageStats(): Promise<ImageStats> {
    return this.#images.imageStats();
  }

  async runInContainer(id: ContainerID, cmd: string[], timeoutMs: number): Promise<ExecResult> {
    const r = await this.#ctx.cri.execSync({
      containerId: id.id,
      cmd,
      timeout: BigInt(Math.max(1, Math.ceil(timeoutMs / 1000))),
    });
    return { stdout: r.stdout, stderr: r.stderr, exitCode: r.exitCode };
  }

  /** The context, for the PLEG and tests in this package. */
  get context(): ManagerContext {
    return this.#ctx;
  }
}

export class KillPodError extends Error {
  constructor(
    message: string,
    readonly steps: SyncStepResult[],
  ) {
    super(message);
    this.name = 'KillPodError';
  }
}

/** The init containers, then the containers, that this pass starts. */
function containersToStart(pod: V1Pod, actions: PodActions): V1Container[] {
  const inits = pod.spec?.initContainers ?? [];
  const containers = pod.spec?.containers ?? [];
  return [
    ...actions.initContainersToStart.map((i) => inits[i]!),
    ...actions.containersToStart.map((i) => containers[i]!),
  ];
}

function podRef(pod: V1Pod): string {
  return `${pod.metadata?.name ?? ''}_${pod.metadata?.namespace ?? ''}(${pod.metadata?.uid ?? ''})`;
}
