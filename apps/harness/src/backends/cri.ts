// Helpers every backend needs: its kind-style node container and its CRI endpoint.

import { CriClient } from '@kh/cri-api';
import {
  type BuiltinNodeRuntime,
  DEFAULT_NODE_RELEASE,
  done,
  KUBELET_SUBORDINATE_IDS,
  NodeContainer,
  type NodeRelease,
  type NodeRuntimeSpec,
  nodeImageName,
  notYet,
  type StartedNodeContainer,
  until,
} from '@kh/testkit';
import { projectMounts } from '../node/project.js';
import type { BackendContext } from './types.js';

/** Node containers get a memory limit so that pods (nested under the node's cgroup) feel it. */
export const NODE_MEMORY_LIMIT_BYTES = 2 * 1024 ** 3;

/**
 * A node's own disk (BackendContext.ownDisk): a tmpfs of this size under its volumes (testkit's
 * withVolumesOnTmpfs). Its pages are RAM only once written; the disk-pressure scenarios write
 * under 1.5 GiB, so two such cells at once stay within a few GiB of the host's RAM.
 */
export const OWN_DISK_BYTES = 2 * 1024 ** 3;

/**
 * The node's memory limit: tmpfs pages are charged to the node's cgroup as they are written, so
 * a node with a disk of its own gets its size on top, and its pods keep the memory others get.
 */
export const nodeMemoryLimitBytes = (ctx: Pick<BackendContext, 'ownDisk'>): number =>
  NODE_MEMORY_LIMIT_BYTES + (ctx.ownDisk ? OWN_DISK_BYTES : 0);

/**
 * A node on the run's network under the node's name, with the checkout mounted, and a disk of its
 * own when the context asks for one; not started. Its image is `release`'s node image, which the
 * backend lists in its `images`.
 */
export function kindNode(
  ctx: BackendContext,
  runtime: BuiltinNodeRuntime | NodeRuntimeSpec,
  release: NodeRelease = DEFAULT_NODE_RELEASE,
): NodeContainer {
  const image = ctx.images[nodeImageName(release)];
  if (!image)
    throw new Error(`the run did not build ${nodeImageName(release)}: list it in the backend's images`);
  const node = new NodeContainer(image)
    .withRuntime(runtime)
    .withName(ctx.nodeName)
    .withNetwork(ctx.network, ctx.nodeName)
    .withMemoryLimit(nodeMemoryLimitBytes(ctx))
    // The agent passes on the pod CIDR the apiserver allocated to its Node.
    .withPodCidr(undefined)
    .withBindMounts(projectMounts())
    // Set up for user namespaces as upstream's nodes are: the agent maps pods into this range.
    .withKubeletSubordinateIds(KUBELET_SUBORDINATE_IDS)
    .withProgress(ctx.progress);
  return ctx.ownDisk ? node.withVolumesOnTmpfs(`size=${OWN_DISK_BYTES}`) : node;
}

/**
 * Waits until the endpoint answers CRI Version; returns the runtime's name and version. On a
 * timeout the error ends with `logs()` (the runtime's last lines).
 */
export async function waitForCri(
  endpoint: string,
  timeoutMs: number,
  logs: () => Promise<string> = async () => '',
): Promise<{ runtimeName: string; runtimeVersion: string }> {
  try {
    return await until(
      async () => {
        let client: CriClient | undefined;
        try {
          client = await CriClient.connect(endpoint, { timeoutMs: 5_000, connectTimeoutMs: 2_000 });
          const v = await client.version({});
          return done({ runtimeName: v.runtimeName, runtimeVersion: v.runtimeVersion });
        } catch (err) {
          return notYet((err as Error).message);
        } finally {
          client?.close();
        }
      },
      { timeoutMs, intervalMs: 200, describe: `CRI Version at ${endpoint}` },
    );
  } catch (err) {
    const more = await logs().catch(() => '');
    throw more ? new Error(`${(err as Error).message}:\n${more}`, { cause: err }) : err;
  }
}

/**
 * Loads the node's sandbox image again when something removed it (image GC or eviction's image
 * reclaim on an agent that does not know it): the node's runtime cannot pull it, so every later
 * pod on the node would fail. Returns whether it had to. The removal itself is what the scenario
 * that caused it reports; this only keeps the next cells independent of it.
 */
export async function restoreSandboxImage(node: StartedNodeContainer, ref: string): Promise<boolean> {
  if (await node.hasImage(ref)) return false;
  await node.loadImages([ref]);
  return true;
}

/**
 * Runs one pod through the endpoint as the agent would, on `handler` (the runtime's default when
 * absent): a sandbox on the pod network and a container from the sandbox image that exits 0; then
 * removes both. Throws the runtime's own error, for a backend to tell "cannot run here" from a
 * failed start (see BackendUnavailableError).
 */
export async function probePod(
  endpoint: string,
  opts: { sandboxImage: string; handler?: string; cgroupParent?: string; timeoutMs?: number },
): Promise<void> {
  const client = await CriClient.connect(endpoint, { timeoutMs: opts.timeoutMs ?? 60_000 });
  const uid = `kh-probe-${Date.now().toString(36)}`;
  let sandboxId: string | undefined;
  try {
    const config = {
      metadata: { name: uid, namespace: 'kh-probe', uid, attempt: 0 },
      ...(opts.cgroupParent ? { linux: { cgroupParent: opts.cgroupParent } } : {}),
    };
    ({ podSandboxId: sandboxId } = await client.runPodSandbox({
      config,
      runtimeHandler: opts.handler ?? '',
    }));
    const { containerId } = await client.createContainer({
      podSandboxId: sandboxId,
      config: {
        metadata: { name: 'probe', attempt: 0 },
        image: { image: opts.sandboxImage },
        command: ['/bin/sh', '-c', 'exit 0'],
      },
      sandboxConfig: config,
    });
    await client.startContainer({ containerId });
    const exitCode = await until(
      async () => {
        const { status } = await client.containerStatus({ containerId });
        return status?.finishedAt ? done(status.exitCode) : notYet(`state ${status?.state}`);
      },
      { timeoutMs: 30_000, intervalMs: 200, describe: 'the probe container to exit' },
    );
    if (exitCode !== 0) throw new Error(`the probe container exited with ${exitCode}`);
  } finally {
    if (sandboxId) {
      await client.stopPodSandbox({ podSandboxId: sandboxId }).catch(() => {});
      await client.removePodSandbox({ podSandboxId: sandboxId }).catch(() => {});
    }
    client.close();
  }
}
