// The pod network in `cni` mode (cri-dockerd's default): the pause container has network mode
// `none`, and the CNI plugin sets its namespace up once it runs, found through its pid (the shim
// shares dockerd's pid namespace, as it already must for exec kills and port-forward dialers).
import { readFile } from 'node:fs/promises';
import {
  type CriError,
  DeadlineExceededError,
  FailedPreconditionError,
  InternalError,
  InvalidArgumentError,
  type NetworkUsage,
  type PodSandboxConfig,
  UnknownCriError,
} from '@kh/cri-api';
import type { ContainerInspect } from '../docker/client.js';
import { ContainerType } from '../model/labels.js';
import {
  CniNotReadyError,
  CniPluginError,
  type CniPortMapping,
  CniTimeoutError,
  InvalidPodCidrError,
  POD_INTERFACE,
  type PodNetwork,
} from '../network/cni.js';
import type { ShimContext } from './context.js';
import { PROTOCOL_NAME } from './convert.js';
import { findManaged } from './lookup.js';

/** Network mode of a pause container whose pod network CNI sets up. */
export const CNI_NETWORK_MODE = 'none';

/** A failure of the CNI plugin as the gRPC status a CRI client gets, in the plugin's own words. */
export function networkError(err: unknown, action: string): CriError {
  const message = `${action}: ${(err as Error).message}`;
  if (err instanceof CniNotReadyError)
    return new FailedPreconditionError(`${action}: network plugin is not ready: ${(err as Error).message}`);
  if (err instanceof CniTimeoutError) return new DeadlineExceededError(message, { cause: err });
  if (err instanceof InvalidPodCidrError) return new InvalidArgumentError(message, { cause: err });
  // containerd answers a failed plugin with UNKNOWN and the plugin's message.
  if (err instanceof CniPluginError) return new UnknownCriError(message, { cause: err });
  return new InternalError(message, { cause: err });
}

/**
 * /proc/<pid>/ns/net of a running pause container, checked to still be that container's process
 * (its cgroup path names the container), so a stale inspect never points DEL at another
 * process's namespace. Empty when it does not run: DEL then releases by container id alone.
 */
export async function pauseNetns(info: ContainerInspect | undefined): Promise<string> {
  const pid = info?.State.Running ? info.State.Pid : 0;
  if (!info || pid <= 0) return '';
  const cgroup = await readFile(`/proc/${pid}/cgroup`, 'utf8').catch(() => '');
  return cgroup.includes(info.Id) ? `/proc/${pid}/ns/net` : '';
}

function portMappings(config: PodSandboxConfig): CniPortMapping[] {
  return config.portMappings
    .filter((pm) => pm.hostPort > 0)
    .map((pm) => ({
      hostPort: pm.hostPort,
      containerPort: pm.containerPort,
      protocol: PROTOCOL_NAME[pm.protocol] ?? 'tcp',
      hostIP: pm.hostIp,
    }));
}

/** What the plugin needs to know of a sandbox to set its network up. */
export function podNetwork(config: PodSandboxConfig, sandboxId: string, netns: string): PodNetwork {
  const md = config.metadata!;
  const dns = config.dnsConfig;
  return {
    sandboxId,
    netns,
    podName: md.name,
    podNamespace: md.namespace,
    podUid: md.uid,
    portMappings: portMappings(config),
    ...(dns ? { dns: { servers: dns.servers, searches: dns.searches, options: dns.options } } : {}),
  };
}

/**
 * ADD for a started pause container. A failure is torn down (what a plugin half did, by
 * container id) and thrown as a gRPC error in cri-dockerd's words; the caller removes the sandbox.
 */
export async function setUpPodNetwork(
  ctx: ShimContext,
  config: PodSandboxConfig,
  info: ContainerInspect,
): Promise<void> {
  const network = ctx.network!;
  const pod = podNetwork(config, info.Id, await pauseNetns(info));
  try {
    if (!pod.netns) throw new Error('the pause container is not running');
    await network.setUpPod(pod);
  } catch (err) {
    await network.tearDownFailedSetUp(pod).catch(() => undefined);
    throw networkError(
      err,
      `failed to set up sandbox container ${JSON.stringify(info.Id)} network for pod ${JSON.stringify(pod.podName)}`,
    );
  }
}

/**
 * DEL of a sandbox's pod network if it is still set up (StopPodSandbox does it before the pause
 * container stops; RemovePodSandbox when Stop did not). Idempotent, also after a restart of the
 * shim and when the pause container is gone: the CNI cache says what to tear down.
 */
export async function tearDownPodNetwork(ctx: ShimContext, sandboxId: string): Promise<void> {
  const network = ctx.network;
  if (!network || !(await network.isAttached(sandboxId))) return;
  const info = await findManaged(ctx, sandboxId, ContainerType.sandbox).catch(() => undefined);
  try {
    await network.tearDownPod(sandboxId, await pauseNetns(info));
  } catch (err) {
    throw networkError(err, `failed to tear down the network of pod sandbox ${JSON.stringify(sandboxId)}`);
  }
}

/**
 * The pod's IPs, IPv4 first: the CNI result's for a `none`-mode sandbox, Docker's address on its
 * network otherwise; none for a stopped or host-network sandbox.
 */
export async function sandboxIps(ctx: ShimContext, info: ContainerInspect): Promise<string[]> {
  const mode = info.HostConfig.NetworkMode;
  if (!info.State.Running || mode === 'host') return [];
  if (mode === CNI_NETWORK_MODE) return (await ctx.network?.podIps(info.Id)) ?? [];
  const networks = info.NetworkSettings.Networks ?? {};
  const own = networks[mode ?? '']?.IPAddress;
  const any = Object.values(networks).find((n) => n.IPAddress)?.IPAddress;
  const ip = own || any || ((info.NetworkSettings as { IPAddress?: string }).IPAddress ?? '');
  return ip ? [ip] : [];
}

/** The interfaces of /proc/<pid>/net/dev (the process's network namespace), loopback left out. */
export function parseNetDev(
  text: string,
): { name: string; rxBytes: bigint; rxErrors: bigint; txBytes: bigint; txErrors: bigint }[] {
  return text
    .split('\n')
    .slice(2)
    .map((line) => /^\s*([^:\s]+):\s*(.*)$/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null && m[1] !== 'lo')
    .map((m) => {
      // Receive: bytes packets errs drop fifo frame compressed multicast; then Transmit: bytes packets errs ...
      const f = (m[2] ?? '')
        .trim()
        .split(/\s+/)
        .map((n) => BigInt(n));
      return {
        name: m[1]!,
        rxBytes: f[0] ?? 0n,
        rxErrors: f[2] ?? 0n,
        txBytes: f[8] ?? 0n,
        txErrors: f[10] ?? 0n,
      };
    });
}

/**
 * A `none`-mode pod's network usage, read from its namespace (Docker's stats of such a container
 * carry no interfaces): eth0 is the default interface, as containerd reports it.
 */
export async function cniPodNetworkUsage(
  ctx: ShimContext,
  sandboxId: string,
  timestamp: bigint,
): Promise<NetworkUsage | undefined> {
  const info = await findManaged(ctx, sandboxId, ContainerType.sandbox).catch(() => undefined);
  if (info?.HostConfig.NetworkMode !== CNI_NETWORK_MODE) return undefined;
  const netns = await pauseNetns(info);
  const text = netns ? await readFile(netns.replace(/ns\/net$/, 'net/dev'), 'utf8').catch(() => '') : '';
  const interfaces = parseNetDev(text).map((i) => ({
    name: i.name,
    rxBytes: { value: i.rxBytes },
    rxErrors: { value: i.rxErrors },
    txBytes: { value: i.txBytes },
    txErrors: { value: i.txErrors },
  }));
  if (interfaces.length === 0) return undefined;
  const def = interfaces.find((i) => i.name === POD_INTERFACE) ?? interfaces[0];
  return { timestamp, defaultInterface: def, interfaces };
}
