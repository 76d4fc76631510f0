// What the harness adds to a backend's started node from what it knows itself: the node's name
// (it chose it), the runtime's name and version (it asks CRI Version), the sandbox image (it built
// it), and what it noticed on the way. Backends only say what only they know.
import { waitForCri } from './cri.js';
import { versionMatches } from './releases.js';
import type {
  BackendCapability,
  BackendContext,
  RuntimeBackend,
  StartedBackend,
  StartedNode,
} from './types.js';

/** A runtime that answered its backend has nothing left to start; this is only the read. */
const VERSION_TIMEOUT_MS = 15_000;

export async function startedNode(
  backend: RuntimeBackend,
  started: StartedBackend,
  ctx: Pick<BackendContext, 'nodeName' | 'images' | 'progress'>,
): Promise<StartedNode> {
  const version = await waitForCri(started.hostCriEndpoint, VERSION_TIMEOUT_MS);
  const warnings =
    backend.expectedVersion && !versionMatches(backend.expectedVersion, version.runtimeVersion)
      ? [
          `column ${backend.name} names version ${backend.expectedVersion}, but the node runs ` +
            `${version.runtimeName} ${version.runtimeVersion}` +
            `${started.nodeImage ? ` (Debian ${started.nodeImage.release} moved; rename the column)` : ''}`,
        ]
      : [];
  for (const w of warnings) ctx.progress(`warning: ${w}`);
  return {
    ...started,
    nodeName: ctx.nodeName,
    ...version,
    sandboxImage: started.sandboxImage ?? ctx.images.pause,
    warnings,
  };
}

/** What a started node offers scenarios: its backend's static capabilities, and restart if it has it. */
export function nodeCapabilities(backend: RuntimeBackend, node: StartedBackend): Set<BackendCapability> {
  const caps = new Set<BackendCapability>(backend.capabilities);
  if (node.restart) caps.add('runtime-restart');
  return caps;
}

/**
 * The needs a backend cannot meet: with a started node, exactly; before one started, only those
 * its static capabilities rule out (whether a node can restart its runtime is seen once it runs).
 */
export function missingNeeds(
  backend: RuntimeBackend,
  scenario: { needs?: readonly BackendCapability[] },
  node?: StartedBackend,
): BackendCapability[] {
  const has = (n: BackendCapability) =>
    node ? nodeCapabilities(backend, node).has(n) : n === 'runtime-restart' || backend.capabilities.has(n);
  return (scenario.needs ?? []).filter((n) => !has(n));
}
