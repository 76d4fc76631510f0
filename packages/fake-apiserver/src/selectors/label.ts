import type { KObject } from '../meta/object.js';
import { badRequest } from '../meta/status.js';

type Requirement =
  | { key: string; op: 'in' | 'notin'; values: string[] }
  | { key: string; op: 'exists' | '!exists' }
  | { key: string; op: 'gt' | 'lt'; value: number };

export type LabelSelector = (labels: Record<string, string> | undefined) => boolean;

const KEY = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/** Splits on commas that are not inside a `(...)` value set. */
function splitTerms(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      out.push(cur);
      cur = '';
    } else cur += ch;
  }
  out.push(cur);
  return out.map((t) => t.trim()).filter((t) => t !== '');
}

const VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

function checkValue(value: string, raw: string): string {
  if (value.length > 63 || !VALUE.test(value)) {
    throw badRequest(`unable to parse requirement: invalid label value: "${value}" in "${raw}"`);
  }
  return value;
}

function checkKey(key: string, raw: string): string {
  if (!KEY.test(key)) throw badRequest(`unable to parse requirement: invalid label key "${key}" in "${raw}"`);
  return key;
}

function parseTerm(term: string): Requirement {
  let m = /^(\S+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(term);
  if (m) {
    const values = m[3]!
      .split(',')
      .map((v) => v.trim())
      .filter((v) => v !== '')
      .map((v) => checkValue(v, term));
    return { key: checkKey(m[1]!, term), op: m[2] as 'in' | 'notin', values };
  }
  m = /^!\s*(\S+)$/.exec(term);
  if (m) return { key: checkKey(m[1]!, term), op: '!exists' };
  m = /^([^=!<>\s]+)\s*(==|=|!=|<|>)\s*(\S*)$/.exec(term);
  if (m) {
    const key = checkKey(m[1]!, term);
    const value = m[3]!;
    if (m[2] === '<' || m[2] === '>') {
      const n = Number(value);
      if (!Number.isInteger(n))
        throw badRequest(
          `unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer`,
        );
      return { key, op: m[2] === '<' ? 'lt' : 'gt', value: n };
    }
    return { key, op: m[2] === '!=' ? 'notin' : 'in', values: [checkValue(value, term)] };
  }
  if (/^\S+$/.test(term)) return { key: checkKey(term, term), op: 'exists' };
  throw badRequest(`unable to parse requirement: found '${term}', expected: identifier`);
}

/** Parses the label selector syntax of `?labelSelector=`: =, ==, !=, in, notin, exists, !exists, <, >. */
export function parseLabelSelector(s: string | undefined | null): LabelSelector | undefined {
  if (s === undefined || s === null || s.trim() === '') return undefined;
  const reqs = splitTerms(s).map(parseTerm);
  return (labels) => reqs.every((r) => matches(r, labels ?? {}));
}

function matches(r: Requirement, labels: Record<string, string>): boolean {
  const has = Object.hasOwn(labels, r.key);
  const v = labels[r.key];
  switch (r.op) {
    case 'in':
      return has && r.values.includes(v!);
    case 'notin':
      return !has || !r.values.includes(v!);
    case 'exists':
      return has;
    case '!exists':
      return !has;
    case 'gt':
      return has && Number(v) > r.value;
    case 'lt':
      return has && Number(v) < r.value;
  }
}

const OPERATORS: Record<string, Requirement['op']> = {
  In: 'in',
  NotIn: 'notin',
  Exists: 'exists',
  DoesNotExist: '!exists',
};

/**
 * A metav1.LabelSelector object (matchLabels and matchExpressions) as a predicate. An empty
 * selector matches everything, as upstream's; an unknown operator matches nothing.
 */
export function labelSelectorOf(sel: KObject): LabelSelector {
  const reqs: (Requirement | undefined)[] = [
    ...Object.entries<string>(sel.matchLabels ?? {}).map(([key, v]) => ({
      key,
      op: 'in' as const,
      values: [v],
    })),
    ...(sel.matchExpressions ?? []).map((e: KObject) => {
      const op = OPERATORS[e.operator];
      if (op === undefined) return undefined;
      return op === 'in' || op === 'notin'
        ? { key: e.key, op, values: e.values ?? [] }
        : { key: e.key, op: op as 'exists' | '!exists' };
    }),
  ];
  return (labels) => reqs.every((r) => r !== undefined && matches(r, labels ?? {}));
}
