// Shared state of one runtime manager, handed to the sandbox, container and GC modules.
import type { CriClient, PodSandboxConfig, UserNamespace } from '@kh/cri-api';
import type { V1Pod } from '@kubernetes/client-node';
import type { Clock, EventRecorder, ProbeResults } from '../container/runtime.js';
import type { ImageManager } from '../images/image_manager.js';
import type { RuntimeHelper } from './runtime_helper.js';
import type { ImageUser, SecurityOptions } from './security_context.js';

/**
 * Resolves a pod's spec.runtimeClassName to the CRI runtime handler (the kubelet's
 * runtimeclass.Manager). No class, or an empty name, is the runtime's default handler "".
 * Throws when the class cannot be resolved; the message becomes the FailedCreatePodSandBox event.
 */
export interface RuntimeHandlerResolver {
  lookupRuntimeHandler(runtimeClassName: string | undefined): Promise<string>;
}

/**
 * The kubelet's user namespace manager as its runtime helper exposes it
 * (GetOrCreateUserNamespaceMappings): the CRI UserNamespace of a pod, mode NODE unless it sets
 * hostUsers: false, then mode POD with the ID range allocated to it (allocated on first use).
 * Throws when it cannot give one (the handler lacks support, the pool is exhausted); the message
 * becomes the FailedCreatePodSandBox event.
 */
export interface UserNamespaceProvider {
  getOrCreateUserNamespaceMappings(pod: V1Pod, runtimeHandler: string): Promise<UserNamespace>;
}

export interface ManagerContext {
  cri: CriClient;
  /** CRI runtimeName (containerd, docker, fake...): the scheme of container IDs. */
  runtimeName: string;
  clock: Clock;
  recorder: EventRecorder | undefined;
  helper: RuntimeHelper;
  /** Root of pod log directories, /var/log/pods by default. */
  podLogsRootDir: string;
  /** Root of per-pod directories (termination message files, emptyDirs), /var/lib/kubelet/pods by default. */
  podsDir: string;
  /** Bind-mount a host file at terminationMessagePath (needs podsDir shared with the runtime). */
  mountTerminationMessage: boolean;
  images: ImageManager<PodSandboxConfig>;
  probes: ProbeResults;
  /** Set when the runtime sees the agent's directories under another path. */
  pathMapping: PathMapping | undefined;
  /** Labels stamped on every sandbox and container besides the kubelet's (e.g. kh.run for leftover cleanup). */
  extraLabels: Record<string, string>;
  /** runtimeClassName → CRI runtime handler; undefined runs every pod on the default handler. */
  runtimeClasses: RuntimeHandlerResolver | undefined;
  /**
   * Present when the UserNamespacesSupport gate is on (the node agent's user namespace manager);
   * without it no pod may set hostUsers, as in a kubelet with the gate off.
   */
  userNamespaces: UserNamespaceProvider | undefined;
  /** seccompDefault and the Localhost seccomp root. */
  security: SecurityOptions;
  /** The user an image runs as (CRI ImageStatus), for the runAsNonRoot check. */
  imageUser(imageRef: string): Promise<ImageUser>;
}

/**
 * The agent's files (pod logs, termination message files, emptyDirs) live under `agentRoot`;
 * the runtime sees the same directory as `runtimeRoot`, e.g. a node container's bind mount.
 * Only paths under the roots are translated; hostPath volumes pass through unchanged.
 */
export interface PathMapping {
  agentRoot: string;
  runtimeRoot: string;
}

function swapPrefix(p: string, from: string, to: string): string {
  if (p === from) return to;
  return p.startsWith(from.endsWith('/') ? from : `${from}/`) ? to + p.slice(from.length) : p;
}

/** A path the agent wrote, as the runtime must be told it. */
export function toRuntimePath(ctx: ManagerContext, p: string): string {
  return ctx.pathMapping ? swapPrefix(p, ctx.pathMapping.agentRoot, ctx.pathMapping.runtimeRoot) : p;
}

/** A path the runtime reported, as the agent can open it. */
export function toAgentPath(ctx: ManagerContext, p: string): string {
  return ctx.pathMapping ? swapPrefix(p, ctx.pathMapping.runtimeRoot, ctx.pathMapping.agentRoot) : p;
}

export function recordEvent(
  ctx: ManagerContext,
  pod: V1Pod | undefined,
  type: 'Normal' | 'Warning',
  reason: string,
  message: string,
): void {
  if (pod) ctx.recorder?.event(pod, type, reason, message);
}

/** Epoch ms from a CRI int64 nanosecond timestamp. */
export function nsToMs(ns: bigint): number {
  return Number(ns / 1_000_000n);
}
