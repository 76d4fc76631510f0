// The sandbox (pause) image, which image GC and the eviction manager's reclaim must never
// remove: a node that loses it cannot start pods until it is pulled again, and a node without a
// registry cannot pull it at all. The kubelet takes it from --pod-infra-container-image; without
// the flag the agent asks the runtime. Its verbose CRI Status carries its configuration:
// containerd's `sandboxImage`, our dockershim's `podInfraContainerImage`.
import type { Logger } from '../util/log.js';

export interface RuntimeStatusClient {
  status(req: { verbose: boolean }): Promise<{ info: Record<string, string> }>;
}

export async function runtimeSandboxImage(
  cri: RuntimeStatusClient,
  log: Logger,
): Promise<string | undefined> {
  try {
    const { info } = await cri.status({ verbose: true });
    const config = info.config ? (JSON.parse(info.config) as Record<string, unknown>) : {};
    const image = config.sandboxImage ?? config.podInfraContainerImage;
    if (typeof image === 'string' && image !== '') return image;
    log.info('The runtime does not report its sandbox image; image GC may remove it', {
      hint: 'set --pod-infra-container-image',
    });
  } catch (err) {
    log.error('Cannot read the sandbox image from the runtime status', { err });
  }
  return undefined;
}
