// The NodeRestriction admission plugin: the Node authorizer lets a node write nodes, pods and
// leases at all; this narrows those writes to its own Node and Lease, its own mirror pods, the
// status and eviction of pods bound to it and tokens bound to them, and keeps it from
// relabelling or untainting itself.
import { MIRROR_POD_ANNOTATION, NODE_LEASE_NAMESPACE, nodeIdentity, podReferences } from '../auth/node.js';
import { deepEqual } from '../meta/equal.js';
import type { KObject } from '../meta/object.js';
import { notFound } from '../meta/status.js';
import type { Store } from '../storage/store.js';
import { type AdmissionAttributes, type AdmissionPlugin, admissionForbidden } from './attributes.js';

/** Labels a kubelet sets on its Node itself (kubelet's --node-labels may only use these). */
const KUBELET_LABELS = new Set([
  'kubernetes.io/hostname',
  'kubernetes.io/arch',
  'kubernetes.io/os',
  'beta.kubernetes.io/arch',
  'beta.kubernetes.io/os',
  'beta.kubernetes.io/instance-type',
  'node.kubernetes.io/instance-type',
  'topology.kubernetes.io/region',
  'topology.kubernetes.io/zone',
  'failure-domain.beta.kubernetes.io/region',
  'failure-domain.beta.kubernetes.io/zone',
]);
const KUBELET_LABEL_NAMESPACES = ['kubelet.kubernetes.io', 'node.kubernetes.io'];
const RESTRICTED_NAMESPACE = 'node-restriction.kubernetes.io';

const labelNamespace = (key: string) => (key.includes('/') ? key.slice(0, key.indexOf('/')) : '');
const inDomain = (ns: string, domain: string) => ns === domain || ns.endsWith(`.${domain}`);

/**
 * Labels a node may not set or change on itself: the node-restriction.kubernetes.io prefix
 * (reserved for labels only an administrator sets, to steer workloads) and any other
 * kubernetes.io or k8s.io label that is not a kubelet's own.
 */
export function forbiddenNodeLabels(labels: Record<string, string>, old: Record<string, string>): string[] {
  const changed = new Set([...Object.keys(labels), ...Object.keys(old)].filter((k) => labels[k] !== old[k]));
  return [...changed]
    .filter((key) => {
      const ns = labelNamespace(key);
      if (inDomain(ns, RESTRICTED_NAMESPACE)) return true;
      const kubernetes = inDomain(ns, 'kubernetes.io') || inDomain(ns, 'k8s.io');
      const kubelets = KUBELET_LABELS.has(key) || KUBELET_LABEL_NAMESPACES.some((d) => inDomain(ns, d));
      return kubernetes && !kubelets;
    })
    .sort();
}

export function nodeRestriction(store: Store): AdmissionPlugin {
  return (a) => {
    const node = nodeIdentity(a.user);
    if (node === undefined) return;
    const refuse = (why: string) => admissionForbidden(a, why);
    if (node === '') throw refuse(`could not determine node from user "${a.user.name}"`);
    const boundPod = (name: string): KObject => {
      const pod = store.get('pods', a.namespace, name);
      if (pod === undefined) throw notFound({ group: '', resource: 'pods' }, name);
      return pod;
    };
    switch (`${a.group}/${a.resource}`) {
      case '/pods':
        return admitPod(node, a, refuse, boundPod);
      case '/nodes':
        return admitNode(node, a, refuse);
      case '/serviceaccounts':
        if (a.subresource === 'token' && a.operation === 'CREATE')
          admitTokenRequest(node, a, refuse, boundPod);
        return;
      case 'coordination.k8s.io/leases':
        if (a.namespace !== NODE_LEASE_NAMESPACE)
          throw refuse(`can only access leases in the "${NODE_LEASE_NAMESPACE}" system namespace`);
        if (a.name !== node)
          throw refuse('can only access node lease with the same name as the requesting node');
        return;
    }
  };
}

type Refuse = (why: string) => Error;

function admitPod(node: string, a: AdmissionAttributes, refuse: Refuse, boundPod: (n: string) => KObject) {
  if (a.subresource === 'status') {
    if (a.operation !== 'UPDATE') throw refuse(`unexpected operation "${a.operation}"`);
    if (a.oldObject?.spec?.nodeName !== node)
      throw refuse(`node "${node}" can only update pod status for pods with spec.nodeName set to itself`);
    if (!deepEqual(a.oldObject?.metadata?.labels ?? {}, a.object?.metadata?.labels ?? {}))
      throw refuse(`node "${node}" cannot update labels through pod status`);
    return;
  }
  if (a.subresource === 'eviction') {
    if (boundPod(a.name).spec?.nodeName !== node)
      throw refuse(`node ${node} can only evict pods with spec.nodeName set to itself`);
    return;
  }
  if (a.subresource !== '')
    throw refuse(`unexpected pod subresource "${a.subresource}", only 'status' and 'eviction' are allowed`);
  if (a.operation === 'DELETE') {
    if (a.oldObject?.spec?.nodeName !== node)
      throw refuse(`node "${node}" can only delete pods with spec.nodeName set to itself`);
    return;
  }
  if (a.operation !== 'CREATE')
    throw refuse(
      `unexpected operation "${a.operation}", node "${node}" can only create and delete mirror pods`,
    );
  const pod = a.object ?? {};
  if (pod.metadata?.annotations?.[MIRROR_POD_ANNOTATION] === undefined)
    throw refuse(
      `pod does not have "${MIRROR_POD_ANNOTATION}" annotation, node "${node}" can only create mirror pods`,
    );
  if (pod.spec?.nodeName !== node)
    throw refuse(`node "${node}" can only create pods with spec.nodeName set to itself`);
  const owners: KObject[] = pod.metadata?.ownerReferences ?? [];
  if (owners.length > 1)
    throw refuse(`node "${node}" can only create pods with a single owner reference set to itself`);
  const owner = owners[0];
  if (owner !== undefined) {
    if (owner.apiVersion !== 'v1' || owner.kind !== 'Node' || owner.name !== node)
      throw refuse(`node "${node}" can only create pods with an owner reference set to itself`);
    if (owner.controller !== true)
      throw refuse(`node "${node}" can only create pods with a controller owner reference set to itself`);
    if (owner.blockOwnerDeletion === true)
      throw refuse(`node "${node}" must not set blockOwnerDeletion on an owner reference`);
  }
  // A mirror pod reflects a static pod, which no API object feeds: naming one would let the node read it.
  const refs = podReferences(pod);
  if (refs.serviceAccount !== undefined)
    throw refuse(`node "${node}" can not create pods that reference a service account`);
  if (refs.secrets.size > 0) throw refuse(`node "${node}" can not create pods that reference secrets`);
  if (refs.configmaps.size > 0) throw refuse(`node "${node}" can not create pods that reference configmaps`);
  if ((pod.spec?.volumes ?? []).some((v: KObject) => v?.persistentVolumeClaim || v?.ephemeral))
    throw refuse(`node "${node}" can not create pods that reference persistentvolumeclaims`);
}

/** A node's service account token must be bound to a pod that runs on it, and to that very pod. */
function admitTokenRequest(
  node: string,
  a: AdmissionAttributes,
  refuse: Refuse,
  boundPod: (n: string) => KObject,
) {
  const ref = a.object?.spec?.boundObjectRef;
  if (ref?.apiVersion !== 'v1' || ref?.kind !== 'Pod' || !ref?.name)
    throw refuse('node requested token not bound to a pod');
  if (!ref.uid) throw refuse('node requested token with a pod binding without a uid');
  const pod = boundPod(ref.name);
  if (ref.uid !== pod.metadata.uid)
    throw refuse(
      `the UID in the bound object reference (${ref.uid}) does not match the UID in record (${pod.metadata.uid}). The object might have been deleted and then recreated`,
    );
  if (pod.spec?.nodeName !== node)
    throw refuse('node requested token bound to a pod scheduled on a different node');
}

function admitNode(node: string, a: AdmissionAttributes, refuse: Refuse) {
  const labels = a.object?.metadata?.labels ?? {};
  if (a.operation === 'CREATE') {
    const bad = forbiddenNodeLabels(labels, {});
    if (bad.length > 0)
      throw refuse(`node "${node}" is not allowed to set the following labels: ${bad.join(', ')}`);
  }
  if (a.name !== node) throw refuse(`node "${node}" is not allowed to modify node "${a.name}"`);
  if (a.operation !== 'UPDATE') return;
  // Its taints and restricted labels keep workloads off a node or steer them to it: an admin's call.
  if (!deepEqual(a.object?.spec?.taints ?? [], a.oldObject?.spec?.taints ?? []))
    throw refuse(`node "${node}" is not allowed to modify taints`);
  const bad = forbiddenNodeLabels(labels, a.oldObject?.metadata?.labels ?? {});
  if (bad.length > 0) throw refuse(`is not allowed to modify labels: ${bad.join(', ')}`);
}
