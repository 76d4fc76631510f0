import {
  CgroupDriver,
  type RuntimeCondition,
  type RuntimeConfigResponse,
  type StatusRequest,
  type StatusResponse,
  type UpdateRuntimeConfigRequest,
  type UpdateRuntimeConfigResponse,
  type VersionResponse,
} from '@kh/cri-api';
import { dockerMessage } from '../docker/errors.js';
import type { ShimContext } from './context.js';
import { supportsRecursiveReadOnly } from './convert.js';
import { docker } from './errors.js';
import { networkError } from './pod_network.js';

/** The CRI API version kubelet expects in Version.version. */
export const KUBE_RUNTIME_API_VERSION = '0.1.0';
export const RUNTIME_NAME = 'docker';

export async function version(ctx: ShimContext): Promise<Partial<VersionResponse>> {
  const v = await docker('docker version', () => ctx.docker.version());
  return {
    version: KUBE_RUNTIME_API_VERSION,
    runtimeName: RUNTIME_NAME,
    runtimeVersion: v.Version,
    runtimeApiVersion: 'v1',
  };
}

/** NetworkReady when it is not: the reason the kubelet shows in the node's Ready condition. */
async function networkProblem(ctx: ShimContext): Promise<string | undefined> {
  if (ctx.network) {
    const problem = await ctx.network.status();
    // containerd's words: "Network plugin returns error: cni plugin not initialized".
    return problem ? `Network plugin returns error: ${problem}` : undefined;
  }
  try {
    await ctx.docker.inspectNetwork(ctx.config.network);
    return undefined;
  } catch (err) {
    return `docker network ${JSON.stringify(ctx.config.network)}: ${dockerMessage(err)}`;
  }
}

/**
 * Status: RuntimeReady is "dockerd answers"; NetworkReady is "the pod network can be set up" (a
 * valid CNI config in `cni` mode, the Docker network in `docker` mode). Both go false (with a
 * reason) when Docker is down, instead of the call failing.
 */
export async function status(ctx: ShimContext, req: StatusRequest): Promise<Partial<StatusResponse>> {
  const conditions: RuntimeCondition[] = [];
  let runtimeReady = true;
  try {
    await ctx.docker.ping();
    conditions.push({ type: 'RuntimeReady', status: true, reason: '', message: '' });
  } catch (err) {
    runtimeReady = false;
    conditions.push({
      type: 'RuntimeReady',
      status: false,
      reason: 'DockerDaemonNotAvailable',
      message: `docker is not reachable: ${dockerMessage(err)}`,
    });
  }
  if (!runtimeReady) {
    conditions.push({
      type: 'NetworkReady',
      status: false,
      reason: 'DockerDaemonNotAvailable',
      message: 'docker is not reachable, so neither is its pod network',
    });
  } else {
    const problem = await networkProblem(ctx);
    conditions.push(
      problem
        ? { type: 'NetworkReady', status: false, reason: 'NetworkPluginNotReady', message: problem }
        : { type: 'NetworkReady', status: true, reason: '', message: '' },
    );
  }
  const info: Record<string, string> = {};
  if (req.verbose) {
    info.config = JSON.stringify({
      podInfraContainerImage: ctx.config.podInfraContainerImage,
      networkPlugin: ctx.config.networkPlugin,
      ...(ctx.network ? { cni: await ctx.network.describe() } : { network: ctx.config.network }),
      restrictOomScoreAdj: ctx.config.restrictOomScoreAdj,
    });
  }
  // Docker has no per-container user namespaces (only the daemon-wide userns-remap).
  const recursiveReadOnlyMounts =
    runtimeReady && supportsRecursiveReadOnly(await ctx.engineApiVersion().catch(() => '0'));
  return {
    status: { conditions },
    info,
    runtimeHandlers: [{ name: '', features: { recursiveReadOnlyMounts, userNamespaces: false } }],
    // Strict would need the Engine to leave out the image's groups; it has no such option.
    features: { supplementalGroupsPolicy: false, userNamespacesHostNetwork: false, mountOptions: false },
  };
}

export async function runtimeConfig(ctx: ShimContext): Promise<Partial<RuntimeConfigResponse>> {
  const driver = await ctx.cgroupDriver();
  return { linux: { cgroupDriver: driver === 'systemd' ? CgroupDriver.SYSTEMD : CgroupDriver.CGROUPFS } };
}

/**
 * UpdateRuntimeConfig: the node's pod CIDR (the kubelet sends its Node's spec.podCIDRs, joined by
 * ","). In `cni` mode the plugin takes it (and renders --cni-conf-template); `docker` mode has no
 * use for it.
 */
export async function updateRuntimeConfig(
  ctx: ShimContext,
  req: UpdateRuntimeConfigRequest,
): Promise<Partial<UpdateRuntimeConfigResponse>> {
  const podCidr = req.runtimeConfig?.networkConfig?.podCidr ?? '';
  if (!ctx.network || podCidr === '') return {};
  try {
    await ctx.network.updatePodCidr(podCidr);
  } catch (err) {
    throw networkError(err, `update pod CIDR ${JSON.stringify(podCidr)}`);
  }
  return {};
}
