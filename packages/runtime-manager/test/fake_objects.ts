// An in-memory PodObjectSource for the helper's tests: objects by name, issued tokens recorded.
import type { V1ConfigMap, V1Node, V1Pod, V1Secret } from '@kubernetes/client-node';
import type { PodObjectSource } from '../src/kuberuntime/pod_objects.js';

export class FakeObjects implements PodObjectSource {
  readonly configMaps = new Map<string, V1ConfigMap>();
  readonly secrets = new Map<string, V1Secret>();
  readonly tokenRequests: { pod: string; audience?: string; expirationSeconds: number }[] = [];
  node: V1Node | undefined;
  token = 'token-1';

  configMap(name: string, data: Record<string, string>, binaryData?: Record<string, string>): this {
    this.configMaps.set(name, { metadata: { name }, data, ...(binaryData ? { binaryData } : {}) });
    return this;
  }

  secret(name: string, data: Record<string, string>): this {
    const encoded = Object.fromEntries(
      Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
    );
    this.secrets.set(name, { metadata: { name }, data: encoded });
    return this;
  }

  async getConfigMap(_pod: V1Pod, name: string) {
    return this.configMaps.get(name);
  }

  async getSecret(_pod: V1Pod, name: string) {
    return this.secrets.get(name);
  }

  async getServiceAccountToken(pod: V1Pod, audience: string | undefined, expirationSeconds: number) {
    this.tokenRequests.push({
      pod: pod.metadata?.name ?? '',
      ...(audience ? { audience } : {}),
      expirationSeconds,
    });
    return this.token;
  }

  async getNode() {
    return this.node;
  }
}
