// The agent's KubeConfig: client-node's, with one connection pool for all requests.
//
// client-node 2.x builds a new undici Agent for every request (KubeConfig.createDispatcher,
// unlike createAgent, has no cache), so each API call paid a TLS handshake on both ends and left
// its keep-alive socket open until the idle timeout. On a node with 110 pods the status manager,
// events, lease and node status make hundreds of calls a minute: the agent held ~650 TLS sockets
// and secure contexts and spent a good share of its CPU in handshakes. Here every request gets
// the same dispatcher as long as the TLS settings stay the same, so connections are reused.
//
// undici also closes a connection after any request that carries a body its method does not
// expect (its defence against servers that leave such a body unread). The kubelet deletes a pod
// with a DELETE whose body holds the DeleteOptions (grace period 0, UID precondition), which API
// servers read; so every pod deletion cost a new TLS connection on both ends. DELETEs keep the
// connection.
import { createHash } from 'node:crypto';
import type { AgentOptions } from 'node:https';
import { type Cluster, KubeConfig, type RequestContext } from '@kubernetes/client-node';

type Dispatcher = NonNullable<ReturnType<RequestContext['getDispatcher']>>;
type CreateDispatcher = (cluster: Cluster | null, agentOptions: AgentOptions) => Dispatcher | undefined;

export class PooledKubeConfig extends KubeConfig {
  #pooled: { key: string; dispatcher: Dispatcher } | undefined;

  constructor() {
    super();
    // createDispatcher is private in client-node's typings; it is the one place every request
    // (API calls and watches alike) gets its dispatcher from.
    const self = this as unknown as { createDispatcher?: CreateDispatcher };
    const create = self.createDispatcher;
    if (typeof create !== 'function') {
      throw new Error(
        '@kubernetes/client-node has no KubeConfig.createDispatcher any more: revisit PooledKubeConfig',
      );
    }
    self.createDispatcher = (cluster, agentOptions) => {
      const key = createHash('sha256')
        .update(JSON.stringify(this.createDispatcherOptions(cluster, agentOptions)))
        .digest('hex');
      if (this.#pooled?.key === key) return this.#pooled.dispatcher;
      // New TLS material (a rotated client certificate): new requests use it, the old pool drains.
      void this.#pooled?.dispatcher.close().catch(() => {});
      const dispatcher = create.call(this, cluster, agentOptions)?.compose(keepAliveAfterDelete);
      this.#pooled = dispatcher ? { key, dispatcher } : undefined;
      return dispatcher;
    };
  }
}

const keepAliveAfterDelete =
  (dispatch: Dispatcher['dispatch']): Dispatcher['dispatch'] =>
  (opts, handler) =>
    dispatch(
      opts.method === 'DELETE' && opts.reset === undefined ? { ...opts, reset: false } : opts,
      handler,
    );

export function loadKubeConfig(path: string): KubeConfig {
  const kc = new PooledKubeConfig();
  kc.loadFromFile(path);
  return kc;
}
