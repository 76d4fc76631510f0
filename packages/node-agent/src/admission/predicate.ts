// The kubelet's predicate admit handler: a pod must be for this node's OS; a pod asking for
// SupplementalGroupsPolicy Strict needs a node whose runtime implements it; the pod must be for
// this node, match its selector and required affinity, not collide on host ports, and fit in
// allocatable next to the pods already admitted, extended resources and hugepages included. A
// rejected pod fails with the kubelet's reason: PodOSSelectorNodeLabelDoesNotMatch,
// PodOSNotSupported, SupplementalGroupsPolicyNotSupported, OutOfpods, OutOf<resource> (OutOfcpu,
// OutOfmemory, OutOfexample.com/foo), NodeName, NodeAffinity, NodePorts.
import { isExtendedResourceName, isHugePageResourceName, podMatchesNodeAffinity } from '@kh/apimachinery';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { Quantity } from '../util/quantity.js';
import type { AdmitHandler, AdmitResult, PodAdmitAttributes } from './handler.js';
import { podOSRejection } from './pod_os.js';
import { podRequests } from './resources.js';

const CHECKED_RESOURCES = ['cpu', 'memory', 'ephemeral-storage'];

export const SupplementalGroupsPolicyNotSupported = 'SupplementalGroupsPolicyNotSupported';

function predicateFailure(name: string, desc: string): AdmitResult {
  return { admit: false, reason: name, message: `Predicate ${name} failed: ${desc}` };
}

export class PredicateAdmitHandler implements AdmitHandler {
  /** `node`: this node as admission sees it (labels, allocatable), read for every pod. */
  constructor(private readonly node: () => V1Node) {}

  admit({ pod, otherPods }: PodAdmitAttributes): AdmitResult {
    const node = this.node();
    // Before the general predicates, as the kubelet checks them: no preemption would help.
    const wrongOS = podOSRejection(pod);
    if (wrongOS) return wrongOS;
    if (
      pod.spec?.securityContext?.supplementalGroupsPolicy === 'Strict' &&
      node.status?.features?.supplementalGroupsPolicy !== true
    ) {
      return {
        admit: false,
        reason: SupplementalGroupsPolicyNotSupported,
        message: 'SupplementalGroupsPolicy=Strict is not supported in this node',
      };
    }
    const nodeName = node.metadata?.name ?? '';
    if (pod.spec?.nodeName && pod.spec.nodeName !== nodeName) {
      return predicateFailure('NodeName', "node(s) didn't match the requested node name");
    }
    if (!podMatchesNodeAffinity(pod, node)) {
      return predicateFailure('NodeAffinity', "node(s) didn't match Pod's node affinity/selector");
    }
    if (hostPortConflict(pod, otherPods)) {
      return predicateFailure('NodePorts', "node(s) didn't have free ports for the requested pod ports");
    }
    return resourceFit(pod, node, otherPods) ?? { admit: true };
  }
}

function resourceFit(pod: V1Pod, node: V1Node, otherPods: V1Pod[]): AdmitResult | undefined {
  const allocatable = node.status?.allocatable ?? {};
  const maxPods = allocatable.pods !== undefined ? Quantity.parse(allocatable.pods).value() : undefined;
  if (maxPods !== undefined && BigInt(otherPods.length + 1) > maxPods) {
    return insufficient('pods', 1n, BigInt(otherPods.length), maxPods);
  }
  const want = podRequests(pod);
  const used: Record<string, bigint> = {};
  for (const p of otherPods)
    for (const [k, v] of Object.entries(podRequests(p))) used[k] = (used[k] ?? 0n) + v;
  for (const r of [...CHECKED_RESOURCES, ...Object.keys(want).filter(isScalarResource)]) {
    const req = want[r] ?? 0n;
    if (req === 0n) continue;
    const available = allocatable[r];
    // A node that reports no cpu, memory or ephemeral-storage is not checked for it; an extended
    // resource it does not list is the cluster's, not the node's, and the kubelet drops it from
    // the pod's requests (removeMissingExtendedResources); hugepages it lacks it has none of.
    if (available === undefined && !isHugePageResourceName(r)) continue;
    const cap = available === undefined ? 0n : Quantity.parse(available).milliValue();
    const inUse = used[r] ?? 0n;
    if (req + inUse > cap) {
      // Kubernetes prints cpu in millicores and everything else in whole units.
      const unit = (v: bigint) => (r === 'cpu' ? v : v / 1000n);
      return insufficient(r, unit(req), unit(inUse), unit(cap));
    }
  }
  return undefined;
}

/** The fit's scalar resources: hugepages and extended resources, as the scheduler's Resource keeps them. */
const isScalarResource = (r: string) => isHugePageResourceName(r) || isExtendedResourceName(r);

function insufficient(resource: string, requested: bigint, used: bigint, capacity: bigint): AdmitResult {
  return {
    admit: false,
    reason: `OutOf${resource}`,
    message: `Node didn't have enough resource: ${resource}, requested: ${requested}, used: ${used}, capacity: ${capacity}`,
  };
}

function hostPorts(pod: V1Pod): string[] {
  const out: string[] = [];
  for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
    for (const p of c.ports ?? []) {
      if (p.hostPort) out.push(`${p.hostIP || '0.0.0.0'}/${p.protocol ?? 'TCP'}/${p.hostPort}`);
    }
  }
  return out;
}

function hostPortConflict(pod: V1Pod, active: V1Pod[]): boolean {
  const wanted = hostPorts(pod);
  if (wanted.length === 0) return false;
  const taken = new Set(active.flatMap(hostPorts));
  return wanted.some((w) => {
    const [ip, proto, port] = w.split('/') as [string, string, string];
    // 0.0.0.0 conflicts with every address on the same protocol and port.
    return [...taken].some((t) => {
      const [tip, tproto, tport] = t.split('/') as [string, string, string];
      return proto === tproto && port === tport && (ip === tip || ip === '0.0.0.0' || tip === '0.0.0.0');
    });
  });
}
