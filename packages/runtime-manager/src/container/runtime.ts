// The contract between the node agent and the runtime manager. It mirrors the kubelet's
// kubecontainer.Runtime: the agent thinks in pods, the runtime manager translates to CRI.
// Nothing here names a concrete runtime; containerd, the dockershim and the fake runtime all
// sit behind the same CRI client.
import type { V1Pod, V1Secret } from '@kubernetes/client-node';

/** Time source, injectable so backoff, GC ages and PLEG health are testable without sleeps. */
export type { Clock } from '@kh/apimachinery';

/** `containerd://<id>` or `docker://<id>`, as the API shows it in containerStatuses. */
export interface ContainerID {
  type: string;
  id: string;
}

export type ContainerState = 'created' | 'running' | 'exited' | 'unknown';

/** One container as the runtime manager rebuilt it from CRI status and its labels. */
export interface ContainerStatus {
  id: ContainerID;
  name: string;
  state: ContainerState;
  createdAt: Date;
  startedAt?: Date;
  finishedAt?: Date;
  exitCode?: number;
  image: string;
  imageRef: string;
  imageId?: string;
  hash: string;
  restartCount: number;
  reason?: string;
  /** Runtime message, or the termination message for exited containers. */
  message?: string;
  /** Host path of the container's log file (CRI log format). */
  logPath?: string;
  /** The cgroup values the runtime reports for a running container (CRI ContainerStatus.resources). */
  resources?: { cpuShares: bigint; cpuQuota: bigint; cpuPeriod: bigint; memoryLimitInBytes: bigint };
  /**
   * The identity the container's first process got (CRI ContainerStatus.user.linux); only
   * runtimes that implement SupplementalGroupsPolicy report it.
   */
  user?: { uid: bigint; gid: bigint; supplementalGroups: bigint[] };
}

export interface SandboxStatus {
  id: string;
  state: 'ready' | 'notready';
  attempt: number;
  createdAt: Date;
  /** Primary IP; '' when the runtime reported a network without an address, undefined when it reported none. */
  ip?: string;
  additionalIps: string[];
  /** True when the sandbox shares the node's network namespace. */
  hostNetwork: boolean;
}

/** Everything the runtime knows about one pod, newest sandbox first. */
export interface PodStatus {
  uid: string;
  name: string;
  namespace: string;
  ips: string[];
  sandboxStatuses: SandboxStatus[];
  containerStatuses: ContainerStatus[];
  timestamp: Date;
}

/** A pod as found in the runtime, possibly without an API object (orphans, adoption). */
export interface RunningPod {
  uid: string;
  name: string;
  namespace: string;
  sandboxes: { id: string; state: SandboxStatus['state'] }[];
  containers: {
    id: ContainerID;
    name: string;
    state: ContainerState;
    hash: string;
    image: string;
    imageRef: string;
    createdAt: Date;
  }[];
}

export type SyncAction =
  | 'CreatePodSandbox'
  | 'KillPodSandbox'
  | 'ConfigPodSandbox'
  | 'StartContainer'
  | 'KillContainer'
  | 'InitContainer'
  | 'ResizePodInPlace';

/** One step of a sync, with the kubelet's reason when it failed (ErrImagePull, CrashLoopBackOff...). */
export interface SyncStepResult {
  action: SyncAction;
  target: string;
  error?: Error;
  reason?: string;
  message?: string;
}

export interface PodSyncResult {
  steps: SyncStepResult[];
  /** Set when the sync could not run at all (for example, listing the pod's state failed). */
  syncError?: Error;
  /** The sync's signal fired and the rest of the pass was skipped (the pod's termination was requested). */
  aborted?: boolean;
}

/**
 * Per-key exponential backoff (CrashLoopBackOff, ImagePullBackOff). The clock lives inside the
 * implementation (see ExponentialBackoff); callers pass the time of the event that caused the
 * retry, for a container its finish time, as the kubelet does.
 */
export interface Backoff {
  /** True while `key` must not be retried: less than the current delay has passed since `eventTimeMs`. */
  isInBackOffSince(key: string, eventTimeMs: number): boolean;
  /** True while less than the current delay has passed since the last `next` for `key`. */
  isInBackOffSinceUpdate(key: string): boolean;
  /** Records a retry: the delay doubles up to the cap, or starts over when the entry expired. */
  next(key: string, eventTimeMs: number): void;
  /** Current delay for `key` in ms (0 when none). */
  get(key: string): number;
  reset(key: string): void;
  /** Forgets entries idle for more than twice the cap. */
  gc(): void;
}

export interface ContainerGCPolicy {
  /** Dead containers younger than this are kept (ms). */
  minAgeMs: number;
  /** Dead containers kept per (pod, container name); -1 means no limit. */
  maxPerPodContainer: number;
  /** Dead containers kept in total; -1 means no limit. */
  maxContainers: number;
}

export interface ImageGCPolicy {
  highThresholdPercent: number; // imageGCHighThresholdPercent, 85
  lowThresholdPercent: number; // imageGCLowThresholdPercent, 80
  minAgeMs: number; // imageMinimumGCAge, 2m
  /**
   * imageMaximumGCAge: unused images not used for longer than this go on every pass, whatever
   * the disk usage. 0 (the default, also when absent) turns it off.
   */
  maxAgeMs?: number;
}

export interface ImageGCResult {
  /** Bytes freed by both passes (age and disk usage). */
  freedBytes: number;
  /** Every image removed, by either pass. */
  removed: string[];
  /** The images of `removed` that went for being unused longer than imageMaximumGCAge. */
  removedForAge?: string[];
  /** Image filesystem usage after the age pass, which the threshold pass acts on. */
  usagePercentBefore: number;
}

export interface Image {
  id: string;
  repoTags: string[];
  repoDigests: string[];
  size: number;
  pinned: boolean;
}

export interface ImageStats {
  totalStorageBytes: number;
}

export interface RuntimeCondition {
  type: string; // RuntimeReady, NetworkReady
  status: boolean;
  reason: string;
  message: string;
}

/** What the runtime says it implements (CRI RuntimeFeatures). */
export interface RuntimeFeatures {
  /** SupplementalGroupsPolicy Strict: only the pod's groups, none from the image's /etc/group. */
  supplementalGroupsPolicy: boolean;
}

/** One runtime handler and what it supports (CRI RuntimeHandler); "" is the default handler. */
export interface RuntimeHandler {
  name: string;
  supportsRecursiveReadOnlyMounts: boolean;
  supportsUserNamespaces: boolean;
}

export interface RuntimeStatus {
  conditions: RuntimeCondition[];
  /** Undefined when the runtime sends none (runtimes older than the field). */
  features?: RuntimeFeatures;
  /** The handlers the runtime announces, in its order (empty from runtimes older than the field). */
  runtimeHandlers: RuntimeHandler[];
}

export interface ExecResult {
  stdout: Buffer;
  stderr: Buffer;
  exitCode: number;
}

/** Kubernetes events the runtime manager emits (Pulling, Pulled, Created, Started, Killing, BackOff, Failed). */
export interface EventRecorder {
  event(pod: V1Pod, type: 'Normal' | 'Warning', reason: string, message: string): void;
}

export interface Runtime {
  type(): string;
  version(): Promise<string>;
  apiVersion(): Promise<string>;
  status(): Promise<RuntimeStatus>;
  /**
   * The node's pod CIDRs ("a" or "a,b") for the runtime's network (CRI UpdateRuntimeConfig), as the
   * kubelet's UpdatePodCIDR passes on its Node's spec.podCIDRs.
   */
  updatePodCIDR(podCidr: string): Promise<void>;

  /**
   * Brings the pod toward its spec. Once `signal` fires (the kubelet cancels the sync's context
   * when termination is requested) no further container is killed or started.
   */
  syncPod(
    pod: V1Pod,
    podStatus: PodStatus,
    pullSecrets: V1Secret[],
    backoff: Backoff,
    signal?: AbortSignal,
  ): Promise<PodSyncResult>;
  killPod(pod: V1Pod | undefined, runningPod: RunningPod, gracePeriodOverrideSeconds?: number): Promise<void>;
  getPodStatus(uid: string, name: string, namespace: string): Promise<PodStatus>;
  getPods(all: boolean): Promise<RunningPod[]>;
  /** Removes an exited container and its log file; one already gone is not an error. */
  deleteContainer(id: ContainerID): Promise<void>;
  garbageCollect(
    policy: ContainerGCPolicy,
    allSourcesReady: boolean,
    evictNonDeletedPods: boolean,
  ): Promise<void>;

  /** Runs a command in a container through CRI ExecSync (probes, exec hooks). */
  runInContainer(id: ContainerID, cmd: string[], timeoutMs: number): Promise<ExecResult>;

  pullImage(image: string, pullSecrets: V1Secret[]): Promise<string>;
  getImageRef(image: string): Promise<string | undefined>;
  listImages(): Promise<Image[]>;
  removeImage(image: string): Promise<void>;
  imageStats(): Promise<ImageStats>;
}

export type PodLifecycleEventType =
  | 'ContainerStarted'
  | 'ContainerDied'
  | 'ContainerRemoved'
  | 'ContainerChanged';

export interface PodLifecycleEvent {
  podUid: string;
  type: PodLifecycleEventType;
  /** The container ID the event is about. */
  data: string;
}

/** Pod lifecycle event generator: relist or CRI GetContainerEvents. It feeds the PodCache. */
export interface Pleg {
  start(): void;
  stop(): Promise<void>;
  watch(listener: (event: PodLifecycleEvent) => void): () => void;
  healthy(): { ok: boolean; message: string };
  /** Which source is active: 'generic' relisting or 'evented'. */
  mode(): 'generic' | 'evented';
}

export type ProbeResult = 'success' | 'failure';

/** Latest liveness/startup results by runtime container id, supplied by the agent's prober. */
export interface ProbeResults {
  liveness(containerId: string): ProbeResult | undefined;
  startup(containerId: string): ProbeResult | undefined;
}

/** What container GC needs to know about pods from the API side (the kubelet's podStateProvider). */
export interface PodStateProvider {
  /** The pod is gone (deleted, or never known): its containers, sandboxes and logs can go. */
  shouldPodContentBeRemoved(uid: string): boolean;
  /** The pod is terminated: its runtime objects can go, with evictNonDeletedPods. */
  shouldPodRuntimeBeRemoved(uid: string): boolean;
}
