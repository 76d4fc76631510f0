import { isIP } from 'node:net';
import { Quantity } from '@kh/apimachinery';
import { parseCidr } from '../meta/cidr.js';
import type { KObject } from '../meta/object.js';
import type { FieldErrors } from '../meta/status.js';
import { checkDnsSubdomain, checkQualifiedKey } from './meta.js';

const EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];
const CONDITION_STATUS = ['True', 'False', 'Unknown'];
const IP_ADDRESS_TYPES = ['InternalIP', 'ExternalIP'];
const ADDRESS_TYPES = ['Hostname', 'InternalIP', 'ExternalIP', 'InternalDNS', 'ExternalDNS'];

/** An IP literal, without a zone (the apiserver dials it: nothing else may ride along). */
export const isNodeIp = (v: unknown): v is string =>
  typeof v === 'string' && !v.includes('%') && isIP(v) !== 0;

/**
 * status.addresses and the kubelet's port: the apiserver dials them with its kubelet client
 * certificate (logs, exec, nodes/proxy), so a node may report only real addresses: IP literals
 * for the IP types, DNS names for the others, each once, and a port in range.
 */
function validateNodeAddresses(node: KObject, errs: FieldErrors) {
  const seen = new Set<string>();
  (node.status?.addresses ?? []).forEach((a: KObject, i: number) => {
    const f = `status.addresses[${i}]`;
    if (!ADDRESS_TYPES.includes(a?.type)) errs.notSupported(`${f}.type`, a?.type, ADDRESS_TYPES);
    else if (IP_ADDRESS_TYPES.includes(a.type)) {
      if (!isNodeIp(a.address))
        errs.invalid(
          `${f}.address`,
          a.address,
          'must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)',
        );
    } else if (typeof a.address !== 'string' || a.address === '') errs.required(`${f}.address`);
    // Host names are compared without case, as DNS does (a machine's may have capitals).
    else checkDnsSubdomain(errs, `${f}.address`, a.address.toLowerCase());
    const key = `${a?.type}/${a?.address}`;
    if (seen.has(key)) errs.duplicate(f, { type: a?.type, address: a?.address });
    seen.add(key);
  });
  const port = node.status?.daemonEndpoints?.kubeletEndpoint?.Port;
  if (port !== undefined && port !== null && !(Number.isInteger(port) && port >= 0 && port <= 65535))
    errs.invalid(
      'status.daemonEndpoints.kubeletEndpoint.Port',
      port,
      'must be between 0 and 65535, inclusive',
    );
}

export function validateNode(node: KObject, errs: FieldErrors, old: KObject | undefined) {
  (node.spec?.taints ?? []).forEach((t: KObject, i: number) => {
    const f = `spec.taints[${i}]`;
    if (!t.key) errs.required(`${f}.key`);
    else checkQualifiedKey(errs, `${f}.key`, t.key);
    if (!EFFECTS.includes(t.effect)) errs.notSupported(`${f}.effect`, t.effect, EFFECTS);
  });
  for (const kind of ['capacity', 'allocatable'] as const) {
    for (const [r, q] of Object.entries(node.status?.[kind] ?? {})) {
      if (Quantity.tryFromJSON(q) === undefined)
        errs.invalid(`status.${kind}[${r}]`, q, 'must be a valid quantity');
    }
  }
  validateNodeAddresses(node, errs);
  (node.status?.conditions ?? []).forEach((c: KObject, i: number) => {
    if (!c.type) errs.required(`status.conditions[${i}].type`);
    if (!CONDITION_STATUS.includes(c.status))
      errs.notSupported(`status.conditions[${i}].status`, c.status, CONDITION_STATUS);
  });
  if (old?.spec?.podCIDR && node.spec?.podCIDR !== old.spec.podCIDR) {
    errs.forbidden('spec.podCIDR', 'node updates may not change podCIDR except from "" to valid');
  }
  const cidrs: unknown[] = node.spec?.podCIDRs ?? [];
  cidrs.forEach((c, i) => {
    if (typeof c !== 'string' || !parseCidr(c))
      errs.invalid(`spec.podCIDRs[${i}]`, c, 'must be a valid CIDR');
  });
  const families = cidrs.map((c) => (typeof c === 'string' ? parseCidr(c)?.family : undefined));
  if (cidrs.length > 2 || (cidrs.length === 2 && families[0] === families[1]))
    errs.invalid('spec.podCIDRs', cidrs, 'may specify no more than one CIDR for each IP family');
  const oldCidrs: unknown[] = old?.spec?.podCIDRs ?? [];
  if (oldCidrs.length > 0 && JSON.stringify(oldCidrs) !== JSON.stringify(cidrs))
    errs.forbidden('spec.podCIDRs', 'node updates may not change podCIDR except from "" to valid');
  if (old?.spec?.providerID && node.spec?.providerID !== old.spec.providerID) {
    errs.forbidden('spec.providerID', 'node updates may not change providerID except from "" to valid');
  }
}
