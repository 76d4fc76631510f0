// Quantities come from @kh/apimachinery; this module adds the kubelet's "quantity or percentage"
// form used by eviction thresholds and minimum reclaims.
import { Quantity } from '@kh/apimachinery';

export { Quantity } from '@kh/apimachinery';

/** A value that is either an absolute quantity or a percentage of capacity ("10%"), as eviction thresholds are. */
export type QuantityOrPercent = { quantity: Quantity } | { percentage: number };

export function parseQuantityOrPercent(text: string): QuantityOrPercent {
  if (typeof text === 'string' && text.endsWith('%')) {
    const body = text.slice(0, -1);
    if (!/^\d+(\.\d+)?$/.test(body)) throw new Error(`invalid percentage "${text}"`);
    const pct = Number(body);
    if (pct <= 0 || pct > 100) throw new Error(`percentage must be greater than 0% and at most 100%`);
    return { percentage: pct / 100 };
  }
  return { quantity: Quantity.parse(text) };
}
