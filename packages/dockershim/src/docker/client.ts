import type { Duplex, Readable } from 'node:stream';

// The Engine as the shim sees it: every call the CRI verbs, the caches and the log copiers make,
// by id, with the fields they read. cri-dockerd keeps the same seam in libdocker (an interface, a
// Docker SDK client, an instrumented one and a fake). Implementations: DockerodeClient (the Engine
// API over docker-modem), InstrumentedDockerClient (times every call), FakeDockerClient (memory).
// A failed call rejects with the Engine's error shape (errors.ts): statusCode + json.message, or a
// socket error code.

export type Labels = Record<string, string>;

/** GET /containers/{id}/json, the fields the shim reads. */
export interface ContainerInspect {
  Id: string;
  /** "/<name>", as the Engine reports it. */
  Name: string;
  Created: string;
  /** The image id the container runs. */
  Image: string;
  ResolvConfPath?: string;
  State: {
    Status: string;
    Running: boolean;
    OOMKilled: boolean;
    Pid: number;
    ExitCode: number;
    Error: string;
    StartedAt: string;
    FinishedAt: string;
  };
  Config: {
    Hostname?: string;
    Image: string;
    Labels: Labels | null;
    Tty: boolean;
    OpenStdin: boolean;
    User?: string;
    Env?: string[];
    Cmd?: string[] | null;
    Entrypoint?: string[] | null;
  };
  HostConfig: { NetworkMode?: string; CgroupParent?: string; Mounts?: BindMount[] | null };
  Mounts: { Source: string; Destination: string; RW: boolean; Propagation: string }[];
  NetworkSettings: { Networks: Record<string, { IPAddress: string; GlobalIPv6Address?: string }> };
}

/** GET /containers/json, one item. SizeRw only when asked with `size`. */
export interface ContainerSummary {
  Id: string;
  Names: string[];
  Image: string;
  ImageID: string;
  Created: number;
  State: string;
  Labels: Labels;
  SizeRw?: number;
}

export interface ListContainersOptions {
  all?: boolean;
  size?: boolean;
  /** The Engine's filters: id, label (`k` or `k=v`), name, status. */
  filters?: Record<string, string[]>;
}

/** A bind in HostConfig.Mounts (read-only binds on API 1.44+, where Binds' `ro` is recursive). */
export interface BindMount {
  Type: 'bind';
  Source: string;
  Target: string;
  ReadOnly: true;
  /** API 1.44's options: a read-only bind is recursive unless ReadOnlyNonRecursive says otherwise. */
  BindOptions: {
    Propagation: 'rprivate' | 'rslave' | 'rshared';
    ReadOnlyNonRecursive?: true;
    ReadOnlyForceRecursive?: true;
  };
}

export interface Device {
  PathOnHost: string;
  PathInContainer: string;
  CgroupPermissions: string;
}

/** The HostConfig of a create request, as far as the shim sets it. */
export interface HostConfig {
  NetworkMode?: string;
  IpcMode?: string;
  PidMode?: string;
  PortBindings?: Record<string, { HostIp: string; HostPort: string }[]>;
  Dns?: string[];
  DnsSearch?: string[];
  DnsOptions?: string[];
  CgroupParent?: string;
  Sysctls?: Record<string, string>;
  ReadonlyRootfs?: boolean;
  Privileged?: boolean;
  CapAdd?: string[];
  CapDrop?: string[];
  SecurityOpt?: string[];
  MaskedPaths?: string[];
  ReadonlyPaths?: string[];
  DeviceCgroupRules?: string[];
  Devices?: Device[];
  /** `source:target[:ro][,propagation]`. */
  Binds?: string[];
  Mounts?: BindMount[];
  CpuShares?: number;
  CpuQuota?: number;
  CpuPeriod?: number;
  CpusetCpus?: string;
  CpusetMems?: string;
  Memory?: number;
  MemorySwap?: number;
  OomScoreAdj?: number;
  GroupAdd?: string[];
  Runtime?: string;
  RestartPolicy?: { Name: string };
  LogConfig?: { Type: string; Config: Record<string, string> };
}

/** POST /containers/create: the name (a query parameter) and the body. */
export interface ContainerCreateRequest {
  name: string;
  Image: string;
  Hostname?: string;
  Entrypoint?: string[];
  Cmd?: string[];
  Env?: string[];
  WorkingDir?: string;
  Labels?: Labels;
  Tty?: boolean;
  OpenStdin?: boolean;
  StdinOnce?: boolean;
  User?: string;
  StopSignal?: string;
  ExposedPorts?: Record<string, object>;
  HostConfig: HostConfig;
}

/** POST /containers/{id}/update: the resources UpdateContainerResources changes. */
export type ResourceUpdate = Pick<
  HostConfig,
  'CpuShares' | 'CpuQuota' | 'CpuPeriod' | 'CpusetCpus' | 'CpusetMems' | 'Memory' | 'MemorySwap'
>;

/** One-shot GET /containers/{id}/stats, the part the shim reads (cgroup v1 and v2 keys). */
export interface ContainerStatsSample {
  read: string;
  cpu_stats?: { cpu_usage?: { total_usage?: number } };
  memory_stats?: { usage?: number; limit?: number; stats?: Record<string, number> };
  pids_stats?: { current?: number };
  networks?: Record<string, { rx_bytes: number; rx_errors: number; tx_bytes: number; tx_errors: number }>;
}

export interface LogsOptions {
  follow: boolean;
  /** Docker's `since`: "<seconds>.<nanos>", inclusive. */
  since?: string;
}

export interface AttachOptions {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
}

export interface ExecCreateOptions {
  Cmd: string[];
  AttachStdin: boolean;
  AttachStdout: boolean;
  AttachStderr: boolean;
  Tty: boolean;
}

/** GET /exec/{id}/json, the fields the shim reads. */
export interface ExecInspect {
  Running: boolean;
  ExitCode: number | null;
  Pid: number;
  ContainerID: string;
}

export interface TerminalSize {
  height: number;
  width: number;
}

/** A live stream of the Engine's newline-delimited JSON (events, pull progress). */
export type JsonStream = Readable;

export interface DockerEvent {
  Type?: string;
  Action?: string;
  Actor?: { ID?: string; Attributes?: Record<string, string> };
  time?: number;
  timeNano?: number;
}

/** GET /images/{ref}/json, the fields the shim reads. */
export interface ImageInspect {
  Id: string;
  RepoTags?: string[];
  RepoDigests?: string[];
  Size: number;
  Config?: { User?: string };
  Architecture?: string;
  Os?: string;
  Created?: string;
}

/** GET /images/json, one item. */
export interface ImageSummary {
  Id: string;
  RepoTags?: string[] | null;
  RepoDigests?: string[] | null;
  Size: number;
}

export interface PullOptions {
  repository: string;
  tag: string;
  /** The X-Registry-Auth body. */
  auth?: Record<string, string>;
}

/** GET /version and GET /info, the fields the shim reads. */
export interface EngineVersion {
  Version: string;
  ApiVersion: string;
}

export interface EngineInfo {
  DockerRootDir: string;
  CgroupDriver?: string;
}

/** GET /system/df, the part ImageFsInfo reads. */
export interface DiskUsage {
  LayersSize?: number;
  Containers?: { SizeRw?: number }[];
}

/** Every Engine call the shim makes. */
export interface DockerClient {
  ping(): Promise<void>;
  version(): Promise<EngineVersion>;
  info(): Promise<EngineInfo>;
  diskUsage(): Promise<DiskUsage>;
  /** Rejects with 404 when the network does not exist. */
  inspectNetwork(name: string): Promise<void>;

  listContainers(options: ListContainersOptions): Promise<ContainerSummary[]>;
  inspectContainer(idOrName: string): Promise<ContainerInspect>;
  /** Returns the new container's full id. */
  createContainer(request: ContainerCreateRequest): Promise<string>;
  startContainer(id: string): Promise<void>;
  stopContainer(id: string, timeoutSeconds: number): Promise<void>;
  /** Force-removes the container and its anonymous volumes. */
  removeContainer(id: string): Promise<void>;
  updateContainer(id: string, update: ResourceUpdate): Promise<void>;
  containerStats(id: string): Promise<ContainerStatsSample>;
  /** stdout and stderr with timestamps, multiplexed unless the container has a TTY. */
  containerLogs(id: string, options: LogsOptions): Promise<Readable>;
  /** A hijacked connection to the main process (stream only, no past logs). */
  attachContainer(id: string, options: AttachOptions): Promise<Duplex>;
  resizeContainerTty(id: string, size: TerminalSize): Promise<void>;

  /** Returns the exec's id. */
  createExec(containerId: string, options: ExecCreateOptions): Promise<string>;
  /** Starts the exec over a hijacked connection: its stdin, and its output (framed unless `tty`). */
  startExec(execId: string, options: { stdin: boolean; tty: boolean }): Promise<Duplex>;
  resizeExecTty(execId: string, size: TerminalSize): Promise<void>;
  inspectExec(execId: string): Promise<ExecInspect>;

  /** The Engine's event stream from now on, filtered (type, event, label). */
  events(filters: Record<string, string[]>): Promise<JsonStream>;

  listImages(): Promise<ImageSummary[]>;
  inspectImage(ref: string): Promise<ImageInspect>;
  /** The pull's progress stream; a failed pull reports its error inside the stream. */
  pullImage(options: PullOptions): Promise<JsonStream>;
  removeImage(ref: string): Promise<void>;
}
