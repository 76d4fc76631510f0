import { DefaultImageTag, splitImageReference } from '@kh/apimachinery';
import {
  ContainerState,
  InvalidArgumentError,
  type LinuxContainerResources,
  type Mount,
  MountPropagation,
  NamespaceMode,
  type NamespaceOption,
  PodSandboxState,
  Protocol,
  Signal,
} from '@kh/cri-api';
import type { BindMount } from '../docker/client.js';

// Pure conversions between Docker Engine API values and CRI values. No I/O here, so all of it is
// unit-tested without a daemon.

/** CRI protocols by the names Docker port keys and CNI port mappings use. */
export const PROTOCOL_NAME: Record<number, string> = {
  [Protocol.TCP]: 'tcp',
  [Protocol.UDP]: 'udp',
  [Protocol.SCTP]: 'sctp',
};

const NS_PER_MS = 1_000_000n;
const NS_PER_S = 1_000_000_000n;

/**
 * Docker timestamps are RFC 3339 with up to 9 fractional digits ("2026-11-22T23:10:00.123456789Z").
 * CRI wants int64 ns, which a JS number cannot hold exactly, so the fraction is parsed as digits.
 * Docker's zero time (year 1) maps to 0.
 */
export function dockerTimeToNanos(value: string | undefined): bigint {
  if (!value) return 0n;
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/.exec(value);
  if (!m) throw new Error(`unparseable docker timestamp ${JSON.stringify(value)}`);
  const [, seconds = '', fraction = '', zone = 'Z'] = m;
  if (seconds.startsWith('0001-01-01')) return 0n;
  const ms = Date.parse(`${seconds}${zone}`);
  return BigInt(ms) * NS_PER_MS + BigInt(fraction.padEnd(9, '0'));
}

let lastNow = 0n;
/** Wall-clock ns, strictly increasing within this process so creation order is never a tie. */
export function nowNanos(): bigint {
  const ms = BigInt(Date.now()) * NS_PER_MS;
  const sub = process.hrtime.bigint() % NS_PER_MS;
  lastNow = ms + sub > lastNow ? ms + sub : lastNow + 1n;
  return lastNow;
}

/** Docker's Created in list results is whole seconds. */
export function unixSecondsToNanos(seconds: number): bigint {
  return BigInt(Math.trunc(seconds)) * NS_PER_S;
}

/** Docker State.Status -> CRI container state. A paused or restarting container still has live processes. */
export function toContainerState(dockerStatus: string | undefined): ContainerState {
  switch (dockerStatus) {
    case 'created':
      return ContainerState.CONTAINER_CREATED;
    case 'running':
    case 'paused':
    case 'restarting':
      return ContainerState.CONTAINER_RUNNING;
    case 'exited':
    case 'dead':
      return ContainerState.CONTAINER_EXITED;
    default:
      return ContainerState.CONTAINER_UNKNOWN;
  }
}

export function toSandboxState(dockerStatus: string | undefined): PodSandboxState {
  return dockerStatus === 'running' ? PodSandboxState.SANDBOX_READY : PodSandboxState.SANDBOX_NOTREADY;
}

/** The terminated reasons kubelet shows in pod status. */
export function exitReason(state: { OOMKilled?: boolean; ExitCode?: number }): string {
  if (state.OOMKilled) return 'OOMKilled';
  return state.ExitCode === 0 ? 'Completed' : 'Error';
}

/** CRI Signal enum -> the name Docker's StopSignal accepts; undefined for "runtime default". */
export function signalName(signal: Signal | undefined): string | undefined {
  if (signal === undefined || signal === Signal.SIGNAL_RUNTIME_DEFAULT) return undefined;
  const name = Signal[signal];
  if (name === undefined || name === 'UNRECOGNIZED') return undefined;
  return name
    .replace(/^SIGNAL_/, '')
    .replace(/PLUS(\d+)$/, '+$1')
    .replace(/MINUS(\d+)$/, '-$1');
}

/** Docker StopSignal ("SIGTERM", "15", "TERM") -> CRI Signal, best effort. */
export function signalFromDocker(value: string | undefined): Signal {
  if (!value) return Signal.SIGNAL_RUNTIME_DEFAULT;
  const name = value.toUpperCase().startsWith('SIG') ? value.toUpperCase() : `SIG${value.toUpperCase()}`;
  const key = `SIGNAL_${name.replace(/\+(\d+)$/, 'PLUS$1').replace(/-(\d+)$/, 'MINUS$1')}`;
  const found = (Signal as unknown as Record<string, number>)[key];
  return typeof found === 'number' ? (found as Signal) : Signal.SIGNAL_RUNTIME_DEFAULT;
}

const PROPAGATION: Record<number, 'rslave' | 'rshared'> = {
  [MountPropagation.PROPAGATION_HOST_TO_CONTAINER]: 'rslave',
  [MountPropagation.PROPAGATION_BIDIRECTIONAL]: 'rshared',
};

/** A Docker bind string: host:container[:options], with read-only and propagation options. */
export function toDockerBind(mount: Mount): string {
  const options = [mount.readonly ? 'ro' : 'rw', PROPAGATION[mount.propagation] ?? 'rprivate'];
  return `${mount.hostPath}:${mount.containerPath}:${options.join(',')}`;
}

/**
 * Engine API 1.44 (Docker 25) made a read-only bind recursively read-only unless
 * BindOptions.ReadOnlyNonRecursive says otherwise (moby#47391), and added ReadOnlyForceRecursive.
 * The CRI's `readonly` alone is not recursive, so from that version on read-only binds go through
 * Mounts, which can say which one is meant.
 */
export const BIND_READONLY_OPTIONS_API = '1.44';

/** Numeric comparison of Engine API versions ("1.41" < "1.44" < "1.100"). */
export function apiAtLeast(version: string, min: string): boolean {
  const [a = 0, b = 0] = version.split('.').map(Number);
  const [c = 0, d = 0] = min.split('.').map(Number);
  return a !== c ? a > c : b >= d;
}

/** Whether recursive read-only mounts can be asked of an Engine (the runtime handler's feature). */
export function supportsRecursiveReadOnly(apiVersion: string): boolean {
  return apiAtLeast(apiVersion, BIND_READONLY_OPTIONS_API);
}

/** Checks a recursive read-only mount as the CRI defines it: read-only, private propagation. */
function checkRecursiveReadOnly(m: Mount, apiVersion: string): void {
  const where = JSON.stringify(m.containerPath);
  if (!m.readonly) throw new InvalidArgumentError(`recursive read-only mount of ${where} must be read-only`);
  if (m.propagation !== MountPropagation.PROPAGATION_PRIVATE)
    throw new InvalidArgumentError(`recursive read-only mount of ${where} must have private propagation`);
  if (!supportsRecursiveReadOnly(apiVersion))
    throw new InvalidArgumentError(
      `recursive read-only mount of ${where} needs Docker Engine API ${BIND_READONLY_OPTIONS_API}; this engine speaks ${apiVersion}`,
    );
}

/** The HostConfig fields of a container's CRI mounts on an Engine speaking `apiVersion`. */
export function toDockerMounts(
  mounts: readonly Mount[],
  apiVersion: string,
): { Binds: string[] | undefined; Mounts: BindMount[] | undefined } {
  for (const m of mounts) if (m.recursiveReadOnly) checkRecursiveReadOnly(m, apiVersion);
  const viaMounts = supportsRecursiveReadOnly(apiVersion) ? mounts.filter((m) => m.readonly) : [];
  const binds = mounts.filter((m) => !viaMounts.includes(m)).map(toDockerBind);
  return {
    Binds: binds.length > 0 ? binds : undefined,
    Mounts:
      viaMounts.length > 0
        ? viaMounts.map((m) => ({
            Type: 'bind',
            Source: m.hostPath,
            Target: m.containerPath,
            ReadOnly: true,
            BindOptions: {
              Propagation: PROPAGATION[m.propagation] ?? 'rprivate',
              ...(m.recursiveReadOnly ? { ReadOnlyForceRecursive: true } : { ReadOnlyNonRecursive: true }),
            },
          }))
        : undefined,
  };
}

export function propagationFromDocker(value: string | undefined): MountPropagation {
  if (value === 'rshared' || value === 'shared') return MountPropagation.PROPAGATION_BIDIRECTIONAL;
  if (value === 'rslave' || value === 'slave') return MountPropagation.PROPAGATION_HOST_TO_CONTAINER;
  return MountPropagation.PROPAGATION_PRIVATE;
}

/** The subset of Docker's HostConfig the namespace and resource conversions read. */
export interface HostConfigLike {
  NetworkMode?: string;
  IpcMode?: string;
  PidMode?: string;
  CpuShares?: number;
  CpuQuota?: number;
  CpuPeriod?: number;
  Memory?: number;
  MemorySwap?: number;
  CpusetCpus?: string;
  CpusetMems?: string;
  OomScoreAdj?: number;
}

/** Namespace options of a sandbox, rebuilt from its pause container's HostConfig. */
export function sandboxNamespaceOptions(hc: HostConfigLike | undefined): NamespaceOption {
  return {
    network: hc?.NetworkMode === 'host' ? NamespaceMode.NODE : NamespaceMode.POD,
    pid: hc?.PidMode === 'host' ? NamespaceMode.NODE : NamespaceMode.CONTAINER,
    ipc: hc?.IpcMode === 'host' ? NamespaceMode.NODE : NamespaceMode.POD,
    targetId: '',
    usernsOptions: undefined,
  };
}

/**
 * Docker runs every container in the daemon's user namespace (userns-remap is daemon-wide), so
 * the shim takes only mode NODE (or no option, from kubelets before the field) and refuses a
 * per-pod user namespace, as Status announces with userNamespaces: false.
 */
export function checkUserNamespace(ns: NamespaceOption | undefined): void {
  const mode = ns?.usernsOptions?.mode;
  if (mode === undefined || mode === NamespaceMode.NODE) return;
  throw new InvalidArgumentError(
    `user namespace mode ${NamespaceMode[mode]} is not supported by docker: it has no per-pod user namespaces, only the daemon-wide userns-remap`,
  );
}

/** Docker PidMode for an application container, per CRI NamespaceOption.pid. */
export function containerPidMode(
  pid: NamespaceMode | undefined,
  sandboxId: string,
  targetId: string,
): string {
  switch (pid) {
    case NamespaceMode.POD:
      return `container:${sandboxId}`;
    case NamespaceMode.NODE:
      return 'host';
    case NamespaceMode.TARGET:
      return `container:${targetId}`;
    default:
      return '';
  }
}

export function resourcesFromHostConfig(hc: HostConfigLike | undefined): LinuxContainerResources {
  return {
    cpuPeriod: BigInt(hc?.CpuPeriod ?? 0),
    cpuQuota: BigInt(hc?.CpuQuota ?? 0),
    cpuShares: BigInt(hc?.CpuShares ?? 0),
    memoryLimitInBytes: BigInt(hc?.Memory ?? 0),
    oomScoreAdj: BigInt(hc?.OomScoreAdj ?? 0),
    cpusetCpus: hc?.CpusetCpus ?? '',
    cpusetMems: hc?.CpusetMems ?? '',
    hugepageLimits: [],
    unified: {},
    memorySwapLimitInBytes: BigInt(hc?.MemorySwap && hc.MemorySwap > 0 ? hc.MemorySwap : 0),
  };
}

/**
 * Image Config.User -> CRI uid / username: "1000" or "1000:1000" is a uid, anything else a user name
 * (the runtime resolves it inside the image). Empty means the image runs as root (uid 0).
 */
export function imageUser(user: string | undefined): { uid: bigint | undefined; username: string } {
  const name = (user ?? '').split(':')[0] ?? '';
  if (name === '') return { uid: 0n, username: '' };
  if (/^\d+$/.test(name)) return { uid: BigInt(name), username: '' };
  return { uid: undefined, username: name };
}

/** Splits an image reference into the fromImage / tag pair the Engine's pull API takes. */
export function splitImageRef(ref: string): { repository: string; tag: string } {
  const { repository, tag, digest } = splitImageReference(ref);
  // A digest pins the content, so the Engine takes it in place of a tag.
  return { repository, tag: digest ?? tag ?? DefaultImageTag };
}
