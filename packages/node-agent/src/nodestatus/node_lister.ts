// The kubelet's node lister: a list and watch of this node's own Node object in the API, the one
// read of it the agent keeps. Admission reads the node from it, as the kubelet's getNodeAnyWay
// does, so that a label set through the API (kubectl label node) decides a nodeSelector at the
// next pod, not never; the status sync starts from it rather than a GET per sync.
import type { TimerClock } from '@kh/apimachinery';
import type { KubeConfig, V1Node } from '@kubernetes/client-node';
import { Reflector } from '../api/reflector.js';
import type { Logger } from '../util/log.js';

export class NodeLister {
  private readonly reflector: Reflector<V1Node>;

  constructor(
    private readonly opts: {
      kubeConfig: KubeConfig;
      nodeName: string;
      clock: TimerClock;
      retryMs?: number;
      log?: Logger;
    },
  ) {
    const { nodeName } = opts;
    const fieldSelector = `metadata.name=${nodeName}`;
    this.reflector = new Reflector({
      ...opts,
      listWatch: {
        list: (core) => core.listNode({ fieldSelector }),
        path: '/api/v1/nodes',
        fieldSelector,
        logFailure: { msg: 'Failed to list the node', fields: { node: nodeName } },
      },
    });
  }

  /** The Node as the API last showed it; undefined before the first list or once it is deleted. */
  get(): V1Node | undefined {
    return this.reflector.get(this.opts.nodeName);
  }

  run(signal: AbortSignal): Promise<void> {
    return this.reflector.run(signal);
  }
}
