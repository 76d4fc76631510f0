import {
  CgroupDriver,
  type RuntimeCondition,
  type RuntimeConfigResponse,
  type StatusRequest,
  type StatusResponse,
  type VersionResponse,
} from '@kh/cri-api';
import type { ShimContext } from './context.js';
import { docker, dockerMessage } from './errors.js';

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

/**
 * Status: RuntimeReady is "dockerd answers"; NetworkReady is "the pod network exists". Both go false
 * (with a reason) when Docker is down, instead of the call failing.
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
    try {
      await ctx.docker.getNetwork(ctx.config.network).inspect();
      conditions.push({ type: 'NetworkReady', status: true, reason: '', message: '' });
    } catch (err) {
      conditions.push({
        type: 'NetworkReady',
        status: false,
        reason: 'NetworkPluginNotReady',
        message: `docker network ${JSON.stringify(ctx.config.network)}: ${dockerMessage(err)}`,
      });
    }
  }
  const info: Record<string, string> = {};
  if (req.verbose) {
    info.config = JSON.stringify({
      podInfraContainerImage: ctx.config.podInfraContainerImage,
      network: ctx.config.network,
      restrictOomScoreAdj: ctx.config.restrictOomScoreAdj,
    });
  }
  return { status: { conditions }, info, runtimeHandlers: [{ name: '', features: undefined }] };
}

export async function runtimeConfig(ctx: ShimContext): Promise<Partial<RuntimeConfigResponse>> {
  const info = (await docker('docker info', () => ctx.docker.info())) as { CgroupDriver?: string };
  return {
    linux: { cgroupDriver: info.CgroupDriver === 'systemd' ? CgroupDriver.SYSTEMD : CgroupDriver.CGROUPFS },
  };
}
