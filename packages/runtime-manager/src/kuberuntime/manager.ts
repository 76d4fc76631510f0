// The runtime manager (the kubelet's kubeGenericRuntimeManager): pods in, CRI calls out. It
// keeps no state of its own beyond caches: everything it knows about a pod it reads back from
// the runtime's sandboxes and containers and their labels, so a new instance adopts running
// pods as they are.

import { statfs } from 'node:fs/promises';
import { realClock } from '@kh/apimachinery';
import {
  type ContainerEventResponse,
  type CriClient,
  ContainerState as CriContainerState,
  isNotFound,
  type PodSandboxConfig,
  PodSandboxState,
} from '@kh/cri-api';
import type { V1Container, V1Pod, V1Secret } from '@kubernetes/client-node';
import type {
  Backoff,
  Clock,
  ContainerGCPolicy,
  ContainerID,
  ContainerStatus,
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
  SandboxStatus,
  SyncAction,
  SyncStepResult,
} from '../container/runtime.js';
import {
  ErrConfigPodSandbox,
  ErrCrashLoopBackOff,
  ErrCreatePodSandbox,
  ErrKillContainer,
  ErrKillPodSandbox,
  ErrRunContainer,
  formatDuration,
  SyncStepError,
} from '../container/sync_result.js';
import { ImageGCManager } from '../images/image_gc.js';
import { ImageManager, type ImageManagerOptions } from '../images/image_manager.js';
import { applyDefaultImageTag } from '../images/image_ref.js';
import { computePodActions, isRestartableInitContainer } from './compute_pod_actions.js';
import {
  type ContainerStartPrep,
  containerId,
  killContainer,
  prepareContainerStart,
  removeContainer,
  startContainer,
  toContainerState,
  toContainerStatus,
} from './container.js';
import {
  type ManagerContext,
  nsToMs,
  type PathMapping,
  type RuntimeHandlerResolver,
  recordEvent,
} from './context.js';
import { type ContainerGCReport, garbageCollectContainers } from './gc.js';
import { hashContainer } from './hash.js';
import {
  ContainerNameLabel,
  getContainerInfoFromAnnotations,
  PodNameLabel,
  PodNamespaceLabel,
  PodUidLabel,
} from './labels.js';
import { PodStatusCache } from './pod_status_cache.js';
import { DefaultRuntimeHelper, type RuntimeHelper } from './runtime_helper.js';
import { createPodSandbox, generatePodSandboxConfig, sandboxState, toSandboxStatus } from './sandbox.js';

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
  images?: Omit<ImageManagerOptions, 'clock' | 'recorder'>;
  imageGCPolicy?: ImageGCPolicy;
  /** The sandbox (pause) image, which image GC never removes. */
  podSandboxImage?: string;
  /** Extra deadline for StopContainer/ExecSync beyond the grace period. Default 10s. */
  stopTimeoutSlackMs?: number;
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
   * How long a pod status read may serve later reads of the same pod, as long as the manager did
   * not change the pod and the runtime's latest full listing agrees with it (see
   * pod_status_cache.ts). 0 (the default) reads the runtime every time.
   */
  podStatusCacheTtlMs?: number;
}

async function statfsCapacity(mountpoint: string): Promise<number> {
  const s = await statfs(mountpoint);
  return s.blocks * s.bsize;
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

export class KubeGenericRuntimeManager implements Runtime {
  readonly #ctx: ManagerContext;
  readonly #pods: PodStateProvider;
  readonly #version: { runtimeName: string; runtimeVersion: string; runtimeApiVersion: string };
  readonly imageGC: ImageGCManager;
  readonly #imageFsCapacity: (mountpoint: string) => Promise<number>;
  /** ImageService calls go here; the same client as the runtime unless configured apart. */
  readonly #imageCri: CriClient;
  readonly #statusCache: PodStatusCache | undefined;

  private constructor(
    ctx: ManagerContext,
    pods: PodStateProvider,
    version: { runtimeName: string; runtimeVersion: string; runtimeApiVersion: string },
    imageGCPolicy: ImageGCPolicy | undefined,
    sandboxImage: string | undefined,
    imageFsCapacity: ((mountpoint: string) => Promise<number>) | undefined,
    imageCri: CriClient,
    statusCacheTtlMs: number,
  ) {
    this.#ctx = ctx;
    this.#statusCache =
      statusCacheTtlMs > 0 ? new PodStatusCache(statusCacheTtlMs, () => ctx.clock.now()) : undefined;
    this.#imageCri = imageCri;
    this.#imageFsCapacity = imageFsCapacity ?? statfsCapacity;
    this.#pods = pods;
    this.#version = version;
    this.imageGC = new ImageGCManager(
      {
        listImages: () => this.listImages(),
        imagesInUse: () => this.#imagesInUse(),
        imageFsUsage: () => this.#imageFsUsage(),
        removeImage: (id) => this.removeImage(id),
      },
      imageGCPolicy,
      { clock: ctx.clock, sandboxImage },
    );
  }

  /** Connects to the runtime (CRI Version) and builds the manager around it. */
  static async create(opts: RuntimeManagerOptions): Promise<KubeGenericRuntimeManager> {
    const v = await opts.cri.version({ version: 'v1' });
    const podsDir = opts.podsDir ?? '/var/lib/kubelet/pods';
    const clock = opts.clock ?? realClock;
    const imageCri = opts.imageCri ?? opts.cri;
    const images = new ImageManager<PodSandboxConfig>(
      {
        getImageRef: async (image) =>
          (await imageCri.imageStatus({ image: { image } })).image?.id || undefined,
        pullImage: async (image, auth, sandboxConfig) =>
          (await imageCri.pullImage({ image: { image }, auth, sandboxConfig })).imageRef,
      },
      { ...opts.images, clock, recorder: opts.recorder },
    );
    const ctx: ManagerContext = {
      cri: opts.cri,
      runtimeName: v.runtimeName,
      clock,
      recorder: opts.recorder,
      helper: opts.runtimeHelper ?? new DefaultRuntimeHelper(podsDir, opts.cgroupParent ?? ''),
      podLogsRootDir: opts.podLogsRootDir ?? '/var/log/pods',
      podsDir,
      mountTerminationMessage: opts.mountTerminationMessage ?? true,
      images,
      probes: opts.probeResults ?? noProbes,
      stopTimeoutSlackMs: opts.stopTimeoutSlackMs ?? 10_000,
      pathMapping: opts.pathMapping,
      extraLabels: opts.extraLabels ?? {},
      runtimeClasses: opts.runtimeClassManager,
    };
    return new KubeGenericRuntimeManager(
      ctx,
      opts.podStateProvider ?? keepAll,
      {
        runtimeName: v.runtimeName,
        runtimeVersion: v.runtimeVersion,
        runtimeApiVersion: v.runtimeApiVersion,
      },
      opts.imageGCPolicy,
      opts.podSandboxImage,
      opts.imageFsCapacity,
      imageCri,
      opts.podStatusCacheTtlMs ?? 0,
    );
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
    };
  }

  async updatePodCIDR(podCidr: string): Promise<void> {
    await this.#ctx.cri.updateRuntimeConfig({ runtimeConfig: { networkConfig: { podCidr } } });
  }

  // ---- pod status -------------------------------------------------------------------------

  async getPodStatus(uid: string, name: string, namespace: string): Promise<PodStatus> {
    const read = () => this.#readPodStatus(uid, name, namespace);
    return this.#statusCache ? this.#statusCache.getOrRead(uid, read) : read();
  }

  async #readPodStatus(uid: string, name: string, namespace: string): Promise<PodStatus> {
    const selector = { [PodUidLabel]: uid };
    const [sandboxes, containers] = await Promise.all([
      this.#ctx.cri.listPodSandbox({ filter: { labelSelector: selector } }),
      this.#ctx.cri.listContainers({ filter: { labelSelector: selector } }),
    ]);
    const sandboxStatuses = (
      await Promise.all(
        sandboxes.items.map((s) =>
          this.#ctx.cri
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
          this.#ctx.cri
            .containerStatus({ containerId: c.id })
            .then(
              (r) => (r.status ? toContainerStatus(this.#ctx, r.status) : undefined),
              goneBetweenListAndStatus,
            ),
        ),
      )
    )
      .filter((s) => s !== undefined)
      .sort(newestContainerFirst);
    const newest = sandboxStatuses[0];
    const ips = newest?.state === 'ready' && newest.ip ? [newest.ip, ...newest.additionalIps] : [];
    return {
      uid,
      name,
      namespace,
      ips,
      sandboxStatuses,
      containerStatuses,
      timestamp: new Date(this.#ctx.clock.now()),
    };
  }

  /**
   * The pod's status as carried by a CRI container event (sandbox + container statuses), for the
   * evented PLEG. Undefined when the event has no sandbox status.
   */
  async podStatusFromEvent(ev: ContainerEventResponse): Promise<PodStatus | undefined> {
    const sb = ev.podSandboxStatus;
    if (!sb?.metadata) return undefined;
    const sandbox = toSandboxStatus(sb);
    const containerStatuses = (
      await Promise.all(ev.containersStatuses.map((c) => toContainerStatus(this.#ctx, c)))
    ).sort(newestContainerFirst);
    return {
      uid: sb.metadata.uid,
      name: sb.metadata.name,
      namespace: sb.metadata.namespace,
      ips: sandbox.state === 'ready' && sandbox.ip ? [sandbox.ip, ...sandbox.additionalIps] : [],
      sandboxStatuses: [sandbox],
      containerStatuses,
      timestamp: new Date(this.#ctx.clock.now()),
    };
  }

  async deleteContainer(id: ContainerID): Promise<void> {
    const uid = await removeContainer(this.#ctx, id.id);
    if (uid) this.#statusCache?.invalidate(uid);
  }

  async getPods(all: boolean): Promise<RunningPod[]> {
    const [sandboxes, containers] = await Promise.all([
      this.#ctx.cri.listPodSandbox(
        all ? {} : { filter: { state: { state: PodSandboxState.SANDBOX_READY } } },
      ),
      this.#ctx.cri.listContainers(
        all ? {} : { filter: { state: { state: CriContainerState.CONTAINER_RUNNING } } },
      ),
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
        id: containerId(this.#ctx, c.id),
        name: c.labels[ContainerNameLabel] ?? c.metadata?.name ?? '',
        state: toContainerState(c.state),
        hash: getContainerInfoFromAnnotations(c.annotations).hash,
        image: c.image?.userSpecifiedImage || c.image?.image || '',
        imageRef: c.imageRef,
        createdAt: new Date(nsToMs(c.createdAt)),
      });
    }
    const listed = [...pods.values()];
    if (all) this.#statusCache?.reconcile(listed);
    return listed;
  }

  // ---- sync ----------------------------------------------------------------------------------

  async syncPod(
    pod: V1Pod,
    podStatus: PodStatus,
    pullSecrets: V1Secret[],
    backoff: Backoff,
    signal?: AbortSignal,
  ): Promise<PodSyncResult> {
    return this.#changingPod(
      pod.metadata?.uid ?? '',
      () => this.#syncPod(pod, podStatus, pullSecrets, backoff, signal),
      (result) => result.steps.length > 0,
    );
  }

  /**
   * Runs a change to a pod. A status read that overlapped it is not served again, nor is any
   * earlier one; `changed` tells a pass that turned out to change nothing (a sync with no steps).
   */
  async #changingPod<T>(uid: string, change: () => Promise<T>, changed: (result: T) => boolean = () => true) {
    let unchanged = false;
    try {
      const result = await change();
      unchanged = !changed(result);
      return result;
    } finally {
      if (!unchanged) this.#statusCache?.invalidate(uid);
    }
  }

  async #syncPod(
    pod: V1Pod,
    podStatus: PodStatus,
    pullSecrets: V1Secret[],
    backoff: Backoff,
    signal: AbortSignal | undefined,
  ): Promise<PodSyncResult> {
    const ctx = this.#ctx;
    const result: PodSyncResult = { steps: [] };
    // Checked before every kill and start: actions computed before the pod's termination was
    // requested (a liveness failure, a restart) must not be carried out after it.
    const aborted = () => {
      if (signal?.aborted) result.aborted = true;
      return result.aborted === true;
    };
    if (aborted()) return result;
    const actions = computePodActions(pod, podStatus, ctx.probes);

    if (actions.createSandbox && actions.sandboxId) {
      recordEvent(
        ctx,
        pod,
        'Normal',
        'SandboxChanged',
        'Pod sandbox changed, it will be killed and re-created.',
      );
    }
    if (actions.killPod) {
      const steps = await this.#killPodWithSyncResult(pod, runningPodFromStatus(podStatus), undefined);
      result.steps.push(...steps);
      // A pod that is done (killed without a new sandbox) gets nothing started.
      if (steps.some((s) => s.error) || !actions.createSandbox) return result;
      // A new sandbox reruns init containers from the first: their old instances go.
      await this.#removeContainersNamed(
        podStatus,
        (pod.spec?.initContainers ?? []).map((c) => c.name),
        0,
      );
    } else {
      for (const k of actions.containersToKill.values()) {
        if (aborted()) return result;
        const step: SyncStepResult = { action: 'KillContainer', target: k.name };
        result.steps.push(step);
        try {
          await killContainer(ctx, {
            pod,
            container: k.container,
            id: k.id.id,
            name: k.name,
            reason: k.reason,
            message: k.message,
          });
        } catch (err) {
          fail(step, ErrKillContainer, err);
          return result;
        }
      }
    }
    // Keep only the newest dead instance of each init container; older ones are noise.
    if (!actions.createSandbox) {
      await this.#removeContainersNamed(
        podStatus,
        (pod.spec?.initContainers ?? []).map((c) => c.name),
        1,
      );
    }

    if (aborted()) return result;
    const inits = pod.spec?.initContainers ?? [];
    const containers = pod.spec?.containers ?? [];
    let sandboxId = actions.sandboxId;
    let sandboxConfig: PodSandboxConfig;
    let podIPs = podStatus.ips;
    // What the starts of this pass can do without the sandbox runs while it is being created,
    // instead of one step after another behind it.
    const preps = new Map<V1Container, ContainerStartPrep>();
    if (!actions.createSandbox) {
      sandboxConfig = generatePodSandboxConfig(ctx, pod, actions.attempt);
    } else {
      for (const c of [
        ...actions.initContainersToStart.map((i) => inits[i]!),
        ...actions.containersToStart.map((i) => containers[i]!),
      ]) {
        preps.set(c, prepareContainerStart(ctx, pod, c, podStatus));
      }
      const step: SyncStepResult = { action: 'CreatePodSandbox', target: pod.metadata?.name ?? '' };
      result.steps.push(step);
      try {
        ({ id: sandboxId, config: sandboxConfig } = await createPodSandbox(ctx, pod, actions.attempt));
      } catch (err) {
        fail(step, ErrCreatePodSandbox, err, 'Failed to create pod sandbox: ');
        recordEvent(ctx, pod, 'Warning', 'FailedCreatePodSandBox', step.message ?? '');
        return result;
      }
      try {
        const st = (await ctx.cri.podSandboxStatus({ podSandboxId: sandboxId })).status;
        podIPs =
          !pod.spec?.hostNetwork && st?.network?.ip
            ? [st.network.ip, ...st.network.additionalIps.map((i) => i.ip)]
            : [];
      } catch (err) {
        const cfgStep: SyncStepResult = { action: 'ConfigPodSandbox', target: sandboxId };
        result.steps.push(cfgStep);
        fail(cfgStep, ErrConfigPodSandbox, err);
        return result;
      }
    }

    const start = async (action: SyncAction, container: V1Container): Promise<boolean> => {
      const step: SyncStepResult = { action, target: container.name };
      result.steps.push(step);
      const inBackoff = this.#crashLoopBackoff(pod, container, podStatus, backoff);
      if (inBackoff) {
        step.error = new SyncStepError(ErrCrashLoopBackOff, inBackoff);
        step.reason = ErrCrashLoopBackOff;
        step.message = inBackoff;
        return false;
      }
      try {
        await startContainer(ctx, {
          pod,
          container,
          podStatus,
          pullSecrets,
          sandboxId,
          sandboxConfig,
          podIPs,
          prep: preps.get(container),
        });
        return true;
      } catch (err) {
        fail(step, err instanceof SyncStepError ? err.reason : ErrRunContainer, err);
        return false;
      }
    };

    for (const i of actions.initContainersToStart) {
      if (aborted()) return result;
      const c = inits[i]!;
      // A regular init container that fails to start blocks everything after it.
      if (!(await start('InitContainer', c)) && !isRestartableInitContainer(c)) return result;
    }
    for (const i of actions.containersToStart) {
      if (aborted()) return result;
      await start('StartContainer', containers[i]!);
    }
    return result;
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

  /** Removes dead containers with these names, keeping the newest `keep` of each. */
  async #removeContainersNamed(podStatus: PodStatus, names: string[], keep: number): Promise<void> {
    const seen = new Map<string, number>();
    for (const s of podStatus.containerStatuses) {
      if (!names.includes(s.name) || s.state === 'running') continue;
      const n = (seen.get(s.name) ?? 0) + 1;
      seen.set(s.name, n);
      // Best effort: a leftover dead init container only costs disk until container GC.
      if (n > keep) {
        await removeContainer(this.#ctx, s.id.id).catch(() => undefined);
        this.#statusCache?.invalidate(podStatus.uid); // a change no sync step records
      }
    }
  }

  // ---- kill ----------------------------------------------------------------------------------

  async killPod(
    pod: V1Pod | undefined,
    runningPod: RunningPod,
    gracePeriodOverrideSeconds?: number,
  ): Promise<void> {
    const steps = await this.#changingPod(runningPod.uid, () =>
      this.#killPodWithSyncResult(pod, runningPod, gracePeriodOverrideSeconds),
    );
    const failed = steps.filter((s) => s.error);
    if (failed.length) {
      throw new KillPodError(
        `failed to kill pod ${runningPod.namespace}/${runningPod.name}: ${failed.map((s) => `${s.action} ${s.target}: ${s.message}`).join('; ')}`,
        steps,
      );
    }
  }

  async #killPodWithSyncResult(
    pod: V1Pod | undefined,
    runningPod: RunningPod,
    gracePeriodOverrideSeconds: number | undefined,
  ): Promise<SyncStepResult[]> {
    const ctx = this.#ctx;
    let podIP: Promise<string | undefined> | undefined;
    const lazyPodIP = () => {
      podIP ??= (async () => {
        for (const s of runningPod.sandboxes) {
          const st = await ctx.cri.podSandboxStatus({ podSandboxId: s.id }).catch(() => undefined);
          if (st?.status?.network?.ip) return st.status.network.ip;
        }
        return undefined;
      })();
      return podIP;
    };
    const specs = [...(pod?.spec?.containers ?? []), ...(pod?.spec?.initContainers ?? [])];
    const sidecars = (pod?.spec?.initContainers ?? []).filter(isRestartableInitContainer).map((c) => c.name);
    const kill = async (
      c: RunningPod['containers'][number],
      waitForTurn?: () => Promise<unknown>,
    ): Promise<SyncStepResult> => {
      const step: SyncStepResult = { action: 'KillContainer', target: c.name };
      try {
        await killContainer(ctx, {
          pod,
          container: specs.find((s) => s.name === c.name),
          id: c.id.id,
          name: c.name,
          reason: '',
          message: '',
          gracePeriodOverrideSeconds,
          podIP: lazyPodIP,
          waitForTurn,
        });
      } catch (err) {
        fail(step, ErrKillContainer, err);
      }
      return step;
    };
    const live = runningPod.containers.filter(
      (c) => c.state === 'running' || c.state === 'created' || c.state === 'unknown',
    );
    // KEP-753: sidecars serve the other containers until those have stopped, so app containers
    // get SIGTERM first, then the sidecars in reverse order of declaration, each once every
    // container before it in that order has stopped. All kills start at once (preStop hooks run
    // straight away); only the StopContainer waits, and the wait comes out of the grace period.
    // Each StopContainer call has a deadline of its grace period, which bounds the wait.
    const kills = live.filter((c) => !sidecars.includes(c.name)).map((c) => kill(c));
    for (const name of [...sidecars].reverse()) {
      const before = [...kills];
      kills.push(...live.filter((c) => c.name === name).map((c) => kill(c, () => Promise.all(before))));
    }
    const steps = await Promise.all(kills);
    for (const s of runningPod.sandboxes) {
      const step: SyncStepResult = { action: 'KillPodSandbox', target: s.id };
      steps.push(step);
      try {
        await ctx.cri.stopPodSandbox({ podSandboxId: s.id });
      } catch (err) {
        fail(step, ErrKillPodSandbox, err);
      }
    }
    return steps;
  }

  // ---- GC --------------------------------------------------------------------------------------

  async garbageCollect(
    policy: ContainerGCPolicy,
    allSourcesReady: boolean,
    evictNonDeletedPods: boolean,
  ): Promise<void> {
    const report = await this.garbageCollectWithReport(policy, allSourcesReady, evictNonDeletedPods);
    if (report.errors.length) {
      throw new AggregateError(
        report.errors,
        `container GC: ${report.errors.map((e) => e.message).join('; ')}`,
      );
    }
  }

  /** Like garbageCollect, but returns what was removed and collects errors instead of throwing. */
  garbageCollectWithReport(
    policy: ContainerGCPolicy,
    allSourcesReady: boolean,
    evictNonDeletedPods: boolean,
  ): Promise<ContainerGCReport> {
    return garbageCollectContainers(
      this.#ctx,
      this.#pods,
      policy,
      allSourcesReady,
      evictNonDeletedPods,
    ).finally(() => this.#statusCache?.invalidateAll());
  }

  // ---- exec & images -----------------------------------------------------------------------

  async runInContainer(id: ContainerID, cmd: string[], timeoutMs: number): Promise<ExecResult> {
    const r = await this.#ctx.cri.execSync(
      { containerId: id.id, cmd, timeout: BigInt(Math.max(1, Math.ceil(timeoutMs / 1000))) },
      { timeoutMs: timeoutMs + this.#ctx.stopTimeoutSlackMs },
    );
    return { stdout: r.stdout, stderr: r.stderr, exitCode: r.exitCode };
  }

  /** Pulls regardless of policy (the image service's PullImage), trying matching pull secrets. */
  async pullImage(image: string, pullSecrets: V1Secret[]): Promise<string> {
    return (await this.#ctx.images.pull(applyDefaultImageTag(image), pullSecrets)).ref;
  }

  async getImageRef(image: string): Promise<string | undefined> {
    return (await this.#imageCri.imageStatus({ image: { image } })).image?.id || undefined;
  }

  async listImages(): Promise<Image[]> {
    return (await this.#imageCri.listImages({})).images.map((i) => ({
      id: i.id,
      repoTags: i.repoTags,
      repoDigests: i.repoDigests,
      size: Number(i.size),
      pinned: i.pinned,
    }));
  }

  async removeImage(image: string): Promise<void> {
    await this.#imageCri.removeImage({ image: { image } });
  }

  async imageStats(): Promise<ImageStats> {
    return { totalStorageBytes: (await this.listImages()).reduce((n, i) => n + i.size, 0) };
  }

  async #imagesInUse(): Promise<Set<string>> {
    const used = new Set<string>();
    for (const c of (await this.#ctx.cri.listContainers({})).containers) {
      for (const v of [c.imageRef, c.imageId, c.image?.image, c.image?.userSpecifiedImage])
        if (v) used.add(v);
    }
    return used;
  }

  /** Image filesystem usage from CRI ImageFsInfo; capacity from statfs of the reported mountpoint. */
  async #imageFsUsage(): Promise<{ usedBytes: number; capacityBytes: number }> {
    const fs = (await this.#imageCri.imageFsInfo({})).imageFilesystems[0];
    if (!fs) throw new Error('runtime reported no image filesystem');
    const usedBytes = Number(fs.usedBytes?.value ?? 0n);
    return { usedBytes, capacityBytes: await this.#imageFsCapacity(fs.fsId?.mountpoint ?? '') };
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

function podRef(pod: V1Pod): string {
  return `${pod.metadata?.name ?? ''}_${pod.metadata?.namespace ?? ''}(${pod.metadata?.uid ?? ''})`;
}

function fail(step: SyncStepResult, reason: string, err: unknown, prefix = ''): void {
  const e = err as Error;
  step.error = e;
  step.reason = reason;
  step.message = prefix + (err instanceof SyncStepError ? e.message : (e.message ?? String(err)));
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
