// An in-memory NodeApi with API-server semantics the agent depends on: uids, resourceVersions,
// 404/409, and an outage switch. Used until tests run against @kh/fake-apiserver.
import { randomUUID } from 'node:crypto';
import type { CoreV1Event, V1Lease, V1Node, V1Pod, V1PodStatus, V1Secret } from '@kubernetes/client-node';
import { ApiError, type NodeApi } from '../../src/api/node_api.js';
import type { PodApi } from '../../src/api/pod_api.js';

export class MemoryNodeApi implements NodeApi, PodApi {
  readonly nodes = new Map<string, V1Node>();
  readonly leases = new Map<string, V1Lease>();
  readonly events: CoreV1Event[] = [];
  readonly calls: string[] = [];
  statusPatches: { name: string; status: V1Node['status'] }[] = [];
  readonly pods = new Map<string, V1Pod>();
  podStatusPatches: { name: string; status: V1PodStatus }[] = [];
  /** The next N pod status patches fail with 409, as if another writer got there first. */
  podConflicts = 0;
  down = false;
  private rv = 0;

  private enter(method: string): void {
    this.calls.push(method);
    if (this.down) throw new ApiError(0, 'connect ECONNREFUSED 127.0.0.1:6443');
  }

  private stamp<T extends { metadata?: { resourceVersion?: string } }>(obj: T): T {
    obj.metadata = { ...obj.metadata, resourceVersion: String(++this.rv) };
    return structuredClone(obj);
  }

  async getNode(name: string) {
    this.enter('getNode');
    const n = this.nodes.get(name);
    return n ? structuredClone(n) : undefined;
  }

  async createNode(node: V1Node) {
    this.enter('createNode');
    const name = node.metadata?.name ?? '';
    if (this.nodes.has(name)) throw new ApiError(409, `nodes "${name}" already exists`, 'AlreadyExists');
    const stored = structuredClone(node);
    stored.metadata = { ...stored.metadata, uid: randomUUID(), creationTimestamp: new Date() };
    this.nodes.set(name, stored);
    return this.stamp(stored);
  }

  async patchNode(name: string, patch: { metadata?: { labels?: object; annotations?: object } }) {
    this.enter('patchNode');
    const n = this.nodes.get(name);
    if (!n) throw new ApiError(404, `nodes "${name}" not found`, 'NotFound');
    n.metadata = {
      ...n.metadata,
      labels: { ...n.metadata?.labels, ...patch.metadata?.labels },
      annotations: { ...n.metadata?.annotations, ...patch.metadata?.annotations },
    };
    return this.stamp(n);
  }

  async patchNodeStatus(name: string, status: object) {
    this.enter('patchNodeStatus');
    const n = this.nodes.get(name);
    if (!n) throw new ApiError(404, `nodes "${name}" not found`, 'NotFound');
    // As a merge patch applies: maps merge, null removes, lists and scalars replace.
    n.status = mergePatch(n.status ?? {}, structuredClone(status)) as V1Node['status'];
    this.statusPatches.push({ name, status: structuredClone(status) as V1Node['status'] });
    return this.stamp(n);
  }

  async getLease(namespace: string, name: string) {
    this.enter('getLease');
    const l = this.leases.get(`${namespace}/${name}`);
    return l ? structuredClone(l) : undefined;
  }

  async createLease(lease: V1Lease) {
    this.enter('createLease');
    const key = `${lease.metadata?.namespace}/${lease.metadata?.name}`;
    if (this.leases.has(key))
      throw new ApiError(409, `leases "${lease.metadata?.name}" already exists`, 'AlreadyExists');
    const stored = structuredClone(lease);
    stored.metadata = { ...stored.metadata, uid: randomUUID() };
    this.leases.set(key, stored);
    return this.stamp(stored);
  }

  async updateLease(lease: V1Lease) {
    this.enter('updateLease');
    const key = `${lease.metadata?.namespace}/${lease.metadata?.name}`;
    const cur = this.leases.get(key);
    if (!cur) throw new ApiError(404, `leases "${lease.metadata?.name}" not found`, 'NotFound');
    if (lease.metadata?.resourceVersion !== cur.metadata?.resourceVersion) {
      throw new ApiError(
        409,
        'the object has been modified; please apply your changes to the latest version and try again',
        'Conflict',
      );
    }
    const stored = structuredClone(lease);
    this.leases.set(key, stored);
    return this.stamp(stored);
  }

  async createEvent(event: CoreV1Event) {
    this.enter('createEvent');
    this.events.push(structuredClone(event));
  }

  addPod(pod: V1Pod): V1Pod {
    const stored = structuredClone(pod);
    stored.metadata = { namespace: 'default', ...stored.metadata, uid: stored.metadata?.uid ?? randomUUID() };
    this.pods.set(`${stored.metadata.namespace}/${stored.metadata.name}`, stored);
    return structuredClone(stored);
  }

  readonly secrets = new Map<string, V1Secret>();

  async getSecret(namespace: string, name: string) {
    this.enter('getSecret');
    const s = this.secrets.get(`${namespace}/${name}`);
    return s ? structuredClone(s) : undefined;
  }

  async getPod(namespace: string, name: string) {
    this.enter('getPod');
    const p = this.pods.get(`${namespace}/${name}`);
    return p ? structuredClone(p) : undefined;
  }

  async patchPodStatus(namespace: string, name: string, status: V1PodStatus) {
    this.enter('patchPodStatus');
    const p = this.pods.get(`${namespace}/${name}`);
    if (!p) throw new ApiError(404, `pods "${name}" not found`, 'NotFound');
    if (this.podConflicts > 0) {
      this.podConflicts--;
      throw new ApiError(409, 'the object has been modified', 'Conflict');
    }
    p.status = structuredClone(status);
    this.podStatusPatches.push({ name, status: structuredClone(status) });
    return this.stamp(p);
  }

  async deletePod(namespace: string, name: string, uid: string) {
    this.enter('deletePod');
    const p = this.pods.get(`${namespace}/${name}`);
    if (!p) throw new ApiError(404, `pods "${name}" not found`, 'NotFound');
    if (p.metadata?.uid !== uid)
      throw new ApiError(409, 'Precondition failed: UID in precondition', 'Conflict');
    this.pods.delete(`${namespace}/${name}`);
  }

  /** Simulates another writer bumping the lease (a conflict for the agent's next update). */
  touchLease(namespace: string, name: string): void {
    const l = this.leases.get(`${namespace}/${name}`);
    if (l) this.stamp(l);
  }
}

function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> =
    target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}
