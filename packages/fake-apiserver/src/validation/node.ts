import { Quantity } from '@kh/apimachinery';
import { parseCidr } from '../meta/cidr.js';
import type { KObject } from '../meta/object.js';
import type { FieldErrors } from '../meta/status.js';
import { checkQualifiedKey } from './meta.js';

const EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];
const CONDITION_STATUS = ['True', 'False', 'Unknown'];

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
