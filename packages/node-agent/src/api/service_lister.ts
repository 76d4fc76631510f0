// The kubelet's service informer (NewMainKubelet's serviceLister): every service of the cluster
// with a cluster IP, listed and watched once for the node, so that a container start reads its
// service variables from memory instead of asking the API server.
import type { TimerClock } from '@kh/apimachinery';
import type { KubeConfig, V1Service } from '@kubernetes/client-node';
import type { Logger } from '../util/log.js';
import { Reflector } from './reflector.js';

/** Headless services give no variables, so the kubelet leaves them out (issue 122394). */
const fieldSelector = 'spec.clusterIP!=None';

export class ServiceLister {
  private readonly reflector: Reflector<V1Service>;

  constructor(opts: { kubeConfig: KubeConfig; clock: TimerClock; retryMs?: number; log?: Logger }) {
    this.reflector = new Reflector({
      ...opts,
      listWatch: {
        list: (core) => core.listServiceForAllNamespaces({ fieldSelector }),
        path: '/api/v1/services',
        fieldSelector,
        logFailure: { msg: 'Failed to list services' },
      },
    });
  }

  /** True once the services were listed at least once. */
  hasSynced(): boolean {
    return this.reflector.hasSynced();
  }

  /** The services of the cluster as the API last showed them. */
  list(): V1Service[] {
    return this.reflector.list();
  }

  run(signal: AbortSignal): Promise<void> {
    return this.reflector.run(signal);
  }
}
