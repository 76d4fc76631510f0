// The RuntimeClass read behind the runtime class manager, over client-node.
import { type KubeConfig, NodeV1Api } from '@kubernetes/client-node';
import { isNotFound, toApiError } from '../api/node_api.js';

export interface RuntimeClassApi {
  /** The class's handler; undefined when the class does not exist. Other failures are ApiErrors. */
  getRuntimeHandler(name: string): Promise<string | undefined>;
}

export class KubeRuntimeClassApi implements RuntimeClassApi {
  private readonly node: NodeV1Api;

  constructor(kubeConfig: KubeConfig) {
    this.node = kubeConfig.makeApiClient(NodeV1Api);
  }

  async getRuntimeHandler(name: string) {
    try {
      return (await this.node.readRuntimeClass({ name })).handler;
    } catch (e) {
      const err = toApiError(e);
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }
}
