// Helpers every backend needs: its kind-style node container and its CRI endpoint.

import { normalizeImageRef } from '@kh/apimachinery';
import { CriClient } from '@kh/cri-api';
import { done, NodeContainer, type NodeRuntime, notYet, type StartedNodeContainer, until } from '@kh/testkit';
import { projectMounts } from '../node/project.js';
import type { BackendContext } from './types.js';

/** Node containers get a memory limit so that pods (nested under the node's cgroup) feel it. */
export const NODE_MEMORY_LIMIT_BYTES = 2 * 1024 ** 3;

/** A node on the run's network under the node's name, with the checkout mounted; not started. */
export function kindNode(ctx: BackendContext, runtime: NodeRuntime): NodeContainer {
  return new NodeContainer(ctx.images.node)
    .withRuntime(runtime)
    .withName(ctx.nodeName)
    .withNetwork(ctx.network, ctx.nodeName)
    .withMemoryLimit(NODE_MEMORY_LIMIT_BYTES)
    .withBindMounts(projectMounts())
    .withProgress(ctx.progress);
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
  const present =
    node.runtime === 'containerd'
      ? (
          await node.execOk(['ctr', '-n', 'k8s.io', 'images', 'ls', '-q', `name==${normalizeImageRef(ref)}`])
        ).trim() !== ''
      : (await node.exec(['docker', 'image', 'inspect', '--format', '{{.Id}}', ref])).exitCode === 0;
  if (present) return false;
  await node.loadImages([ref]);
  return true;
}
