// The Node object the agent registers, and the reconciliation of an existing one.
import os from 'node:os';
import type { V1Node } from '@kubernetes/client-node';
import type { Taint } from '../config/types.js';

export const LabelHostname = 'kubernetes.io/hostname';
export const LabelOS = 'kubernetes.io/os';
export const LabelArch = 'kubernetes.io/arch';
// Attach/detach is left to the controller; the kubelet announces that on its Node.
const ControllerManagedAttachDetach = 'volumes.kubernetes.io/controller-managed-attach-detach';

export interface NodeIdentity {
  nodeName: string;
  hostname: string;
  os: string;
  arch: string;
  nodeLabels: Record<string, string>;
  taints: Taint[];
}

export function defaultLabels(id: NodeIdentity): Record<string, string> {
  return { [LabelHostname]: id.hostname, [LabelOS]: id.os, [LabelArch]: id.arch };
}

/** The Node to create: default labels win over --node-labels, as in the kubelet. */
export function initialNode(id: NodeIdentity): V1Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: id.nodeName,
      labels: { ...id.nodeLabels, ...defaultLabels(id) },
      annotations: { [ControllerManagedAttachDetach]: 'true' },
    },
    spec: id.taints.length > 0 ? { taints: id.taints.map((t) => ({ ...t })) } : {},
  };
}

/**
 * Brings an existing Node's kubelet-owned metadata in line (default labels, the attach/detach
 * annotation) and returns the metadata patch, or undefined when nothing differs. Like the
 * kubelet, --node-labels and taints apply at creation only, so an operator's later edits stay.
 */
export function reconcileExistingNode(existing: V1Node, id: NodeIdentity): { metadata: object } | undefined {
  const labels: Record<string, string> = {};
  for (const [k, v] of Object.entries(defaultLabels(id)))
    if (existing.metadata?.labels?.[k] !== v) labels[k] = v;
  const annotations: Record<string, string> = {};
  if (existing.metadata?.annotations?.[ControllerManagedAttachDetach] !== 'true')
    annotations[ControllerManagedAttachDetach] = 'true';
  if (Object.keys(labels).length === 0 && Object.keys(annotations).length === 0) return undefined;
  return {
    metadata: {
      ...(Object.keys(labels).length > 0 ? { labels } : {}),
      ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
    },
  };
}

/** The kubelet's node name: --hostname-override or the lower-cased hostname. */
export function nodeNameFor(hostnameOverride: string, hostname: string = os.hostname()): string {
  return (hostnameOverride || hostname).trim().toLowerCase();
}

/** InternalIP: --node-ip when given, else the first non-loopback, non-link-local IPv4. */
export function resolveNodeIP(
  nodeIpFlag: string,
  interfaces: NodeJS.Dict<os.NetworkInterfaceInfo[]> = os.networkInterfaces(),
): string {
  if (nodeIpFlag) return nodeIpFlag;
  for (const addrs of Object.values(interfaces)) {
    for (const a of addrs ?? []) {
      if (a.family === 'IPv4' && !a.internal && !a.address.startsWith('169.254.')) return a.address;
    }
  }
  throw new Error('no non-loopback IPv4 address found; set --node-ip');
}
