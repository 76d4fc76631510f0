import {
  CanceledError,
  NamespaceMode,
  NotFoundError,
  type PodSandboxConfig,
  type RunPodSandboxRequest,
  type RunPodSandboxResponse,
} from '@kh/cri-api';
import type { ContainerCreateRequest } from '../docker/client.js';
import { dockerStatusCode, isDockerNotFound } from '../docker/errors.js';
import { ContainerType, KubernetesLabels, LabelKeys, makeDockerLabels } from '../model/labels.js';
import { makeSandboxName } from '../model/naming.js';
import { CniNotReadyError } from '../network/cni.js';
import { removeDockerContainer } from './container_remove.js';
import type { ShimContext } from './context.js';
import { checkUserNamespace, nowNanos, PROTOCOL_NAME } from './convert.js';
import { docker, required, toCriError } from './errors.js';
import { withCapabilitiesToDrop } from './host_privileges.js';
import { ensureImage } from './image.js';
import { CNI_NETWORK_MODE, networkError, setUpPodNetwork, tearDownPodNetwork } from './pod_network.js';
import { loadSeccompProfile, requestedProfile, requestedSeccomp, securityHostConfig } from './security.js';

/** CRI port mappings -> Docker ExposedPorts + PortBindings. host_port 0 only exposes the port. */
export function portBindings(config: PodSandboxConfig): {
  exposed: Record<string, object>;
  bindings: Record<string, { HostIp: string; HostPort: string }[]>;
} {
  const exposed: Record<string, object> = {};
  const bindings: Record<string, { HostIp: string; HostPort: string }[]> = {};
  for (const pm of config.portMappings) {
    const key = `${pm.containerPort}/${PROTOCOL_NAME[pm.protocol] ?? 'tcp'}`;
    exposed[key] = {};
    if (pm.hostPort > 0) {
      bindings[key] ??= [];
      bindings[key].push({ HostIp: pm.hostIp, HostPort: String(pm.hostPort) });
    }
  }
  return { exposed, bindings };
}

export interface SandboxCreateParams {
  image: string;
  /**
   * Network mode of a pod-network sandbox: a Docker network (`docker` mode: port bindings go to
   * Docker), or `none` (`cni` mode: the portmap plugin forwards ports). DNS goes to Docker in both:
   * Docker 20.10 takes Dns/DnsSearch/DnsOptions with `none` (it refuses them only for `container:`).
   */
  network: string;
  runtimeHandler: string;
  createdAt: bigint;
  /** Content of a Localhost seccomp profile (loadSeccompProfile). */
  seccompJson: string | undefined;
  /** Capabilities the host cannot grant that Docker can name (withCapabilitiesToDrop). */
  missingCapabilities: string[];
}

/** The Docker create request for a sandbox's pause container. Pure: unit-tested without a daemon. */
export function sandboxCreateOptions(
  config: PodSandboxConfig,
  params: SandboxCreateParams,
): ContainerCreateRequest {
  const md = required(config.metadata, 'config.metadata');
  const sc = config.linux?.securityContext;
  const ns = sc?.namespaceOptions;
  checkUserNamespace(ns);
  const hostNetwork = ns?.network === NamespaceMode.NODE;
  const cni = params.network === CNI_NETWORK_MODE;
  const { exposed, bindings } = portBindings(config);
  const dns = config.dnsConfig;
  const labels = makeDockerLabels({
    labels: config.labels,
    annotations: config.annotations,
    standard: {
      [KubernetesLabels.podName]: md.name,
      [KubernetesLabels.podNamespace]: md.namespace,
      [KubernetesLabels.podUid]: md.uid,
    },
    internal: {
      [LabelKeys.containerType]: ContainerType.sandbox,
      [LabelKeys.metadata]: JSON.stringify(md),
      [LabelKeys.createdAt]: String(params.createdAt),
      [LabelKeys.logDirectory]: config.logDirectory,
      [LabelKeys.runtimeHandler]: params.runtimeHandler,
    },
  });
  return {
    name: makeSandboxName(md),
    Image: params.image,
    Hostname: config.hostname || undefined,
    Labels: labels,
    ExposedPorts: hostNetwork || cni ? undefined : exposed,
    HostConfig: {
      NetworkMode: hostNetwork ? 'host' : params.network,
      // 'shareable' so the pod's containers can join this IPC namespace.
      IpcMode: ns?.ipc === NamespaceMode.NODE ? 'host' : 'shareable',
      PidMode: ns?.pid === NamespaceMode.NODE ? 'host' : '',
      PortBindings: hostNetwork || cni ? undefined : bindings,
      Dns: dns?.servers.length ? dns.servers : undefined,
      DnsSearch: dns?.searches.length ? dns.searches : undefined,
      DnsOptions: dns?.options.length ? dns.options : undefined,
      CgroupParent: config.linux?.cgroupParent || undefined,
      // Network and IPC sysctls must be set where the namespaces are created: here.
      Sysctls:
        config.linux && Object.keys(config.linux.sysctls).length > 0 ? config.linux.sysctls : undefined,
      ReadonlyRootfs: sc?.readonlyRootfs ?? false,
      // A privileged sandbox is privileged as containerd makes it: no host devices for the pause process.
      ...securityHostConfig({
        privileged: sc?.privileged ?? false,
        seccomp: requestedSeccomp(sc),
        seccompJson: params.seccompJson,
        apparmor: requestedProfile('apparmor', sc?.apparmor, ''),
        noNewPrivs: false,
        capabilities: undefined,
        maskedPaths: [],
        readonlyPaths: [],
        missingCapabilities: params.missingCapabilities,
      }),
      Runtime:
        params.runtimeHandler && params.runtimeHandler !== 'docker' ? params.runtimeHandler : undefined,
      RestartPolicy: { Name: 'no' },
      LogConfig: { Type: 'json-file', Config: { 'max-size': '1m' } },
    },
  };
}

/** RunPodSandbox: create and start the pause container that holds the pod's namespaces. */
export async function runPodSandbox(
  ctx: ShimContext,
  req: RunPodSandboxRequest,
  signal?: AbortSignal,
): Promise<Partial<RunPodSandboxResponse>> {
  const config = required(req.config, 'config');
  const md = required(config.metadata, 'config.metadata');
  required(md.name, 'config.metadata.name');
  required(md.namespace, 'config.metadata.namespace');
  required(md.uid, 'config.metadata.uid');

  const sc = config.linux?.securityContext;
  const hostNetwork = sc?.namespaceOptions?.network === NamespaceMode.NODE;
  // Without a usable CNI config no pod network can be set up: say so before creating anything.
  const notReady = hostNetwork ? undefined : await ctx.network?.status();
  if (notReady)
    throw networkError(new CniNotReadyError(notReady), `run sandbox for pod ${JSON.stringify(md.name)}`);
  const seccompJson = await loadSeccompProfile(requestedSeccomp(sc), sc?.privileged ?? false);
  const image = ctx.config.podInfraContainerImage;
  const create = () =>
    withCapabilitiesToDrop((missingCapabilities) =>
      createReplacingDead(
        ctx,
        sandboxCreateOptions(config, {
          image,
          network: ctx.network ? CNI_NETWORK_MODE : ctx.config.network,
          runtimeHandler: req.runtimeHandler,
          createdAt: nowNanos(),
          seccompJson,
          missingCapabilities,
        }),
        `create sandbox for pod ${JSON.stringify(md.name)}`,
      ),
    );
  // The pause image is there but for the first sandbox: pull it only when Docker says it is missing,
  // rather than inspecting it before every create.
  const id = await create().catch(async (err: unknown) => {
    if (!(err instanceof NotFoundError) || !/no such image/i.test(err.message)) throw err;
    await ensureImage(ctx, image);
    return create();
  });
  ctx.known.add(id, ContainerType.sandbox);
  try {
    await ctx.docker.startContainer(id);
  } catch (err) {
    // A sandbox that cannot start is useless and would block the name: remove it, report the cause.
    await ctx.docker.removeContainer(id).catch(() => undefined);
    throw toCriError(err, `start sandbox for pod ${JSON.stringify(md.name)}`);
  }
  // Its containers and the client's PodSandboxStatus come next: keep the sandbox's inspect for them.
  const mark = ctx.inspects.mark();
  const info = await docker('inspect sandbox', () => ctx.docker.inspectContainer(id));
  ctx.inspects.put(info, mark);
  if (ctx.network && !hostNetwork) {
    try {
      await setUpPodNetwork(ctx, config, info);
    } catch (err) {
      // No half-made sandbox stays behind: the plugin's error is the answer.
      await removeDockerContainer(ctx, id).catch(() => undefined);
      throw err;
    }
  }
  // A client gone before the answer never learns this id, so nothing would ever remove the sandbox
  // (critest -benchmark exits with RunPodSandbox calls in flight): undo it, as containerd does.
  if (signal?.aborted) {
    await tearDownPodNetwork(ctx, id);
    await removeDockerContainer(ctx, id);
    throw new CanceledError(
      `run sandbox for pod ${JSON.stringify(md.name)}: cancelled by the client; removed`,
    );
  }
  return { podSandboxId: id };
}

/**
 * Creates a container. A name clash with a container that is not running (a leftover of a failed
 * attempt) is resolved by removing the leftover, as kubelet retries with the same name.
 */
export async function createReplacingDead(
  ctx: ShimContext,
  options: ContainerCreateRequest,
  action: string,
): Promise<string> {
  try {
    return await ctx.docker.createContainer(options);
  } catch (err) {
    if (dockerStatusCode(err) !== 409 || !options.name) throw toCriError(err, action);
    const info = await ctx.docker
      .inspectContainer(options.name)
      .catch((e: unknown) => (isDockerNotFound(e) ? undefined : Promise.reject(e)));
    if (info?.State.Running) throw toCriError(err, action);
    await ctx.docker.removeContainer(options.name).catch(() => undefined);
    return docker(action, () => ctx.docker.createContainer(options));
  }
}
