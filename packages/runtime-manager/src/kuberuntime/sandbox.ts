// Pod sandboxes: the CRI config generated from a pod, creation with its attempt number and
// log directory, and the status the runtime reports back.
import { mkdir } from 'node:fs/promises';
import {
  NamespaceMode,
  type NamespaceOption,
  type PodSandbox,
  type PodSandboxConfig,
  PodSandboxState,
  type PodSandboxStatus,
  Protocol,
  SecurityProfile_ProfileType,
  type UserNamespace,
} from '@kh/cri-api';
import type { V1Pod } from '@kubernetes/client-node';
import type { SandboxStatus } from '../container/runtime.js';
import { type ManagerContext, nsToMs, toRuntimePath } from './context.js';
import { podHostname } from './hostname.js';
import { newPodAnnotations, newPodLabels, podUid } from './labels.js';
import { podLogDirOf } from './logs.js';
import { normalizeSysctlName, supplementalGroupsPolicy, toSELinuxOption } from './security_context.js';

function protocolOf(p: string | undefined): Protocol {
  if (p === 'UDP') return Protocol.UDP;
  if (p === 'SCTP') return Protocol.SCTP;
  return Protocol.TCP;
}

/** The pod's runtime handler: its RuntimeClass's, or the default "" without a resolver. */
export async function podRuntimeHandler(ctx: ManagerContext, pod: V1Pod): Promise<string> {
  return ctx.runtimeClasses ? ctx.runtimeClasses.lookupRuntimeHandler(pod.spec?.runtimeClassName) : '';
}

/**
 * The pod's namespaces for its sandbox or one of its containers (the kubelet's namespacesForPod).
 * The user namespace comes from the provider, which hands out the same mapping on every call.
 */
export async function namespaceOptions(
  ctx: ManagerContext,
  pod: V1Pod,
  forContainer: boolean,
): Promise<NamespaceOption> {
  const spec = pod.spec;
  let pid = NamespaceMode.CONTAINER;
  if (spec?.hostPID) pid = NamespaceMode.NODE;
  else if (spec?.shareProcessNamespace || !forContainer) pid = NamespaceMode.POD;
  return {
    network: spec?.hostNetwork ? NamespaceMode.NODE : NamespaceMode.POD,
    pid,
    ipc: spec?.hostIPC ? NamespaceMode.NODE : NamespaceMode.POD,
    targetId: '',
    usernsOptions: await userNamespaceOf(ctx, pod),
  };
}

async function userNamespaceOf(ctx: ManagerContext, pod: V1Pod): Promise<UserNamespace | undefined> {
  if (ctx.userNamespaces) {
    return ctx.userNamespaces.getOrCreateUserNamespaceMappings(pod, await podRuntimeHandler(ctx, pod));
  }
  // As a kubelet with UserNamespacesSupport off: no option sent, and hostUsers may not be set.
  if (pod.spec?.hostUsers != null) {
    throw new Error('the feature gate "UserNamespacesSupport" is disabled: can\'t set spec.HostUsers');
  }
  return undefined;
}

export async function generatePodSandboxConfig(
  ctx: ManagerContext,
  pod: V1Pod,
  attempt: number,
): Promise<PodSandboxConfig> {
  const uid = podUid(pod);
  const sc = pod.spec?.securityContext;
  const portMappings = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].flatMap((c) =>
    (c.ports ?? [])
      .filter((p) => p.hostPort)
      .map((p) => ({
        protocol: protocolOf(p.protocol),
        containerPort: p.containerPort,
        hostPort: p.hostPort ?? 0,
        hostIp: p.hostIP ?? '',
      })),
  );
  const sysctls: Record<string, string> = {};
  for (const s of sc?.sysctls ?? []) sysctls[normalizeSysctlName(s.name)] = s.value;
  const dns = ctx.helper.podDNS(pod);
  const namespaces = await namespaceOptions(ctx, pod, false);
  return {
    metadata: { name: pod.metadata?.name ?? '', namespace: pod.metadata?.namespace ?? '', uid, attempt },
    hostname: pod.spec?.hostNetwork ? '' : podHostname(pod),
    logDirectory: toRuntimePath(ctx, podLogDirOf(ctx.podLogsRootDir, pod)),
    dnsConfig: dns,
    portMappings,
    labels: { ...ctx.extraLabels, ...newPodLabels(pod) },
    annotations: newPodAnnotations(pod),
    linux: {
      cgroupParent: ctx.helper.podCgroupParent(pod),
      securityContext: {
        namespaceOptions: namespaces,
        selinuxOptions: toSELinuxOption(sc?.seLinuxOptions),
        runAsUser: sc?.runAsUser != null ? { value: BigInt(sc.runAsUser) } : undefined,
        runAsGroup: sc?.runAsGroup != null ? { value: BigInt(sc.runAsGroup) } : undefined,
        readonlyRootfs: false,
        supplementalGroups: [
          ...(sc?.fsGroup != null ? [sc.fsGroup] : []),
          ...(sc?.supplementalGroups ?? []),
        ].map((g) => BigInt(g)),
        supplementalGroupsPolicy: supplementalGroupsPolicy(pod),
        // Any container of the pod, ephemeral ones too (kubecontainer.HasPrivilegedContainer).
        privileged: [
          ...(pod.spec?.initContainers ?? []),
          ...(pod.spec?.containers ?? []),
          ...(pod.spec?.ephemeralContainers ?? []),
        ].some((c) => c.securityContext?.privileged === true),
        // The kubelet always confines the sandbox with the runtime's default profile, so that a
        // pod-level profile need not allow what the pause process does (kubernetes#84623).
        seccomp: { profileType: SecurityProfile_ProfileType.RuntimeDefault, localhostRef: '' },
        apparmor: undefined,
        seccompProfilePath: '',
      },
      sysctls,
      overhead: undefined,
      resources: undefined,
    },
    windows: undefined,
  };
}

/**
 * Creates the sandbox (and its log directory) with the pod's runtime handler; returns its id and
 * the config used. Without a resolver (standalone, as the kubelet without an API server) every
 * pod runs on the default handler.
 */
export async function createPodSandbox(
  ctx: ManagerContext,
  pod: V1Pod,
  attempt: number,
): Promise<{ id: string; config: PodSandboxConfig }> {
  const runtimeHandler = await podRuntimeHandler(ctx, pod);
  const config = await generatePodSandboxConfig(ctx, pod, attempt);
  await mkdir(podLogDirOf(ctx.podLogsRootDir, pod), { recursive: true, mode: 0o755 });
  const res = await ctx.cri.runPodSandbox({ config, runtimeHandler });
  return { id: res.podSandboxId, config };
}

export function toSandboxStatus(s: PodSandboxStatus): SandboxStatus {
  return {
    id: s.id,
    state: s.state === PodSandboxState.SANDBOX_READY ? 'ready' : 'notready',
    attempt: s.metadata?.attempt ?? 0,
    createdAt: new Date(nsToMs(s.createdAt)),
    ip: s.network ? s.network.ip : undefined,
    additionalIps: s.network?.additionalIps.map((i) => i.ip) ?? [],
    hostNetwork: s.linux?.namespaces?.options?.network === NamespaceMode.NODE,
  };
}

export function sandboxState(s: PodSandbox): SandboxStatus['state'] {
  return s.state === PodSandboxState.SANDBOX_READY ? 'ready' : 'notready';
}
