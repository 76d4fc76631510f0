// The Node authorizer (--authorization-mode Node): what a kubelet's identity may read and write.
// A node reads only the secrets, configmaps and service account tokens of pods bound to it and
// only its own Node and pods; its writes to nodes, pods and leases are narrowed further by the
// NodeRestriction admission plugin; everything else follows the static node rules.
import type { KObject } from '../meta/object.js';
import { exactMatch } from '../selectors/field.js';
import type { Store } from '../storage/store.js';
import {
  type Attributes,
  type Authorizer,
  type Decision,
  type PolicyRule,
  ruleAllows,
} from './authorizer.js';
import type { UserInfo } from './tokens.js';

export const NODES_GROUP = 'system:nodes';
const NODE_USER_PREFIX = 'system:node:';
export const MIRROR_POD_ANNOTATION = 'kubernetes.io/config.mirror';
export const NODE_LEASE_NAMESPACE = 'kube-node-lease';

/**
 * The node a user is: `system:node:<name>` in group system:nodes. undefined for anyone else;
 * '' for a member of system:nodes whose name names no node.
 */
export function nodeIdentity(user: UserInfo): string | undefined {
  if (!user.name.startsWith(NODE_USER_PREFIX) || !user.groups.includes(NODES_GROUP)) return undefined;
  return user.name.slice(NODE_USER_PREFIX.length);
}

export interface PodReferences {
  secrets: Set<string>;
  configmaps: Set<string>;
  serviceAccount: string | undefined;
}

/** The objects in its namespace a pod makes its node read: the edges of upstream's node graph. */
export function podReferences(pod: KObject): PodReferences {
  const spec = pod.spec ?? {};
  const secrets = new Set<string>();
  const configmaps = new Set<string>();
  const add = (set: Set<string>, name: unknown) => {
    if (typeof name === 'string' && name !== '') set.add(name);
  };
  for (const s of spec.imagePullSecrets ?? []) add(secrets, s?.name);
  for (const c of [
    ...(spec.containers ?? []),
    ...(spec.initContainers ?? []),
    ...(spec.ephemeralContainers ?? []),
  ]) {
    for (const f of c?.envFrom ?? []) {
      add(secrets, f?.secretRef?.name);
      add(configmaps, f?.configMapRef?.name);
    }
    for (const e of c?.env ?? []) {
      add(secrets, e?.valueFrom?.secretKeyRef?.name);
      add(configmaps, e?.valueFrom?.configMapKeyRef?.name);
    }
  }
  for (const v of spec.volumes ?? []) {
    add(secrets, v?.secret?.secretName);
    add(configmaps, v?.configMap?.name);
    for (const p of v?.projected?.sources ?? []) {
      add(secrets, p?.secret?.name);
      add(configmaps, p?.configMap?.name);
    }
    // Volume plugins name their credentials secretRef (cephfs, rbd, iscsi...) or, for CSI,
    // nodePublishSecretRef; azureFile names it secretName.
    for (const source of Object.values(v ?? {})) {
      if (typeof source !== 'object' || source === null) continue;
      add(secrets, (source as KObject).secretRef?.name);
      add(secrets, (source as KObject).nodePublishSecretRef?.name);
    }
    add(secrets, v?.azureFile?.secretName);
  }
  return { secrets, configmaps, serviceAccount: spec.serviceAccountName || undefined };
}

const allow: Decision = { allowed: true, reason: '' };
const noOpinion = (reason = ''): Decision => ({ allowed: false, reason });
const READ_VERBS = ['get', 'list', 'watch'];

/**
 * The Node authorizer. Requests of non-nodes get no opinion (the next mode decides); a node's
 * reads of secrets, configmaps and pods need a pod bound to it that relates them, looked up in
 * the store at the time of the request (upstream keeps a graph fed by informers).
 */
export function nodeAuthorizer(store: Store, nodeRules: PolicyRule[]): Authorizer {
  const related = (
    node: string,
    ns: string,
    name: string,
    kind: 'secrets' | 'configmaps' | 'serviceaccounts' | 'pods',
  ) =>
    store.podsOnNode(node).some((pod) => {
      if ((pod.metadata.namespace ?? '') !== ns) return false;
      if (kind === 'pods') return pod.metadata.name === name;
      const refs = podReferences(pod);
      return kind === 'serviceaccounts' ? refs.serviceAccount === name : refs[kind].has(name);
    });

  const byGraph = (node: string, a: ResourceAttributes, kind: Parameters<typeof related>[3]): Decision => {
    if (a.name === '') return noOpinion('No Object name found');
    return related(node, a.namespace, a.name, kind)
      ? allow
      : noOpinion(`no relationship found between node '${node}' and this object`);
  };

  const readNamespaced = (node: string, a: ResourceAttributes, kind: 'secrets' | 'configmaps'): Decision => {
    if (!READ_VERBS.includes(a.verb)) return noOpinion('can only read resources of this type');
    if (a.subresource !== '') return noOpinion('cannot read subresource');
    if (a.namespace === '') return noOpinion('can only read namespaced object of this type');
    return byGraph(node, a, kind);
  };

  const createToken = (node: string, a: ResourceAttributes): Decision => {
    if (a.verb !== 'create' || a.name === '')
      return noOpinion('can only create tokens for individual service accounts');
    if (a.subresource !== 'token') return noOpinion('can only create token subresource of serviceaccount');
    return byGraph(node, a, 'serviceaccounts');
  };

  const lease = (node: string, a: ResourceAttributes): Decision => {
    if (!['get', 'create', 'update', 'patch', 'delete'].includes(a.verb))
      return noOpinion('can only get, create, update, patch, or delete a node lease');
    if (a.namespace !== NODE_LEASE_NAMESPACE)
      return noOpinion(`can only access leases in the "${NODE_LEASE_NAMESPACE}" system namespace`);
    // A create names its lease in the body: NodeRestriction checks it.
    if (a.verb !== 'create' && a.name !== node)
      return noOpinion('can only access node lease with the same name as the requesting node');
    return allow;
  };

  const nodeObject = (node: string, a: ResourceAttributes): Decision => {
    if (a.subresource === '' && ['create', 'update', 'patch'].includes(a.verb)) return allow;
    if (a.subresource === 'status' && ['update', 'patch'].includes(a.verb)) return allow;
    if (a.subresource === '' && READ_VERBS.includes(a.verb)) {
      // By name, not by graph, so a kubelet may look for its Node before registering it.
      if (a.name === node) return allow;
      return noOpinion(
        a.name === ''
          ? `node '${node}' cannot read all nodes, only its own Node object`
          : `node '${node}' cannot read '${a.name}', only its own Node object`,
      );
    }
    return noOpinion();
  };

  const pod = (node: string, a: ResourceAttributes): Decision => {
    if (a.subresource === '') {
      // A pod that is gone is nobody's to hide: the node gets the 404 its status manager reads
      // as "deleted, stop writing", not a 403 it would retry on.
      if (a.verb === 'get' && a.name !== '' && store.get('pods', a.namespace, a.name) === undefined)
        return allow;
      if (a.verb === 'get') return byGraph(node, a, 'pods');
      if (a.verb === 'list' || a.verb === 'watch') {
        if (exactMatch(a.fieldSelector, 'spec.nodeName') === node) return allow;
        if (a.name !== '') return byGraph(node, a, 'pods');
        return noOpinion('can only list/watch pods with spec.nodeName field selector');
      }
      // Mirror pods; NodeRestriction limits them to the node's own.
      if (a.verb === 'create' || a.verb === 'delete') return allow;
    }
    if (a.subresource === 'status' && (a.verb === 'update' || a.verb === 'patch')) return allow;
    if (a.subresource === 'eviction' && a.verb === 'create') return allow;
    return noOpinion();
  };

  return {
    authorize(a) {
      const node = nodeIdentity(a.user);
      if (node === undefined) return noOpinion();
      if (node === '') return noOpinion(`unknown node for user "${a.user.name}"`);
      if (a.resourceRequest) {
        switch (`${a.apiGroup}/${a.resource}`) {
          case '/secrets':
            return readNamespaced(node, a, 'secrets');
          case '/configmaps':
            return readNamespaced(node, a, 'configmaps');
          case '/serviceaccounts':
            return createToken(node, a);
          case 'coordination.k8s.io/leases':
            return lease(node, a);
          case '/nodes':
            return nodeObject(node, a);
          case '/pods':
            return pod(node, a);
        }
      }
      return nodeRules.some((rule) => ruleAllows(rule, a)) ? allow : noOpinion();
    },
  };
}

type ResourceAttributes = Extract<Attributes, { resourceRequest: true }>;
