// The kubelet's node lister: a list and watch of this node's own Node object in the API, the one
// read of it the agent keeps. Admission reads the node from it, as the kubelet's getNodeAnyWay
// does, so that a label set through the API (kubectl label node) decides a nodeSelector at the
// next pod, not never; the status sync starts from it rather than a GET per sync.
import { sleep, type TimerClock } from '@kh/apimachinery';
import { CoreV1Api, type KubeConfig, type V1Node, Watch } from '@kubernetes/client-node';
import { type Logger, silentLogger } from '../util/log.js';

/** Wait before listing again after a failed list or a watch that ended. */
export const NODE_LISTER_RETRY_MS = 1_000;

export class NodeLister {
  private node: V1Node | undefined;

  constructor(
    private readonly opts: {
      kubeConfig: KubeConfig;
      nodeName: string;
      clock: TimerClock;
      retryMs?: number;
      log?: Logger;
    },
  ) {}

  /** The Node as the API last showed it; undefined before the first list or once it is deleted. */
  get(): V1Node | undefined {
    return this.node;
  }

  async run(signal: AbortSignal): Promise<void> {
    const { kubeConfig, nodeName, clock } = this.opts;
    const core = kubeConfig.makeApiClient(CoreV1Api);
    const watcher = new Watch(kubeConfig);
    const fieldSelector = `metadata.name=${nodeName}`;
    while (!signal.aborted) {
      try {
        const list = await core.listNode({ fieldSelector });
        this.node = list.items[0];
        await new Promise<void>((resolve) => {
          watcher
            .watch(
              '/api/v1/nodes',
              { fieldSelector, resourceVersion: list.metadata?.resourceVersion, allowWatchBookmarks: true },
              (type, obj: V1Node) => {
                if (type === 'ADDED' || type === 'MODIFIED') this.node = obj;
                else if (type === 'DELETED') this.node = undefined;
              },
              () => resolve(),
            )
            .then(
              (req) => {
                if (signal.aborted) req.abort();
                else signal.addEventListener('abort', () => req.abort(), { once: true });
              },
              () => resolve(),
            );
        });
      } catch (err) {
        (this.opts.log ?? silentLogger).error('Failed to list the node', { node: nodeName, err });
      }
      await sleep(clock, this.opts.retryMs ?? NODE_LISTER_RETRY_MS, signal).catch(() => {});
    }
  }
}
