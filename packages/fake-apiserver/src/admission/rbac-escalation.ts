// RBAC's escalation check, which kube-apiserver runs in its policy-based Role, ClusterRole and
// binding storage: a user may write a role only with rules it already holds (or the `escalate`
// verb on it), and bind a role only whose rules it already holds (or the `bind` verb on it).
// system:masters may do both. It runs where admission runs, on the object about to be stored.
import {
  type Attributes,
  type Authorizer,
  type PolicyRule,
  PRIVILEGED_GROUP,
  roleRefRules,
  rulesFor,
} from '../auth/authorizer.js';
import type { UserInfo } from '../auth/tokens.js';
import { deepEqual } from '../meta/equal.js';
import type { KObject } from '../meta/object.js';
import { notFound } from '../meta/status.js';
import type { Store } from '../storage/store.js';
import { type AdmissionAttributes, type AdmissionPlugin, admissionForbidden } from './attributes.js';

const RBAC_GROUP = 'rbac.authorization.k8s.io';

const has = (list: string[] | undefined, v: string) => (list ?? []).some((x) => x === '*' || x === v);

// Whether the owner's resources cover one resource: `*`, itself, all subresources of its
// resource (`pods/` then `*`), or that subresource of every resource (`*` then `/exec`).
function resourceCovered(owner: string[] | undefined, r: string): boolean {
  if (has(owner, r)) return true;
  const slash = r.indexOf('/');
  if (slash < 0) return false;
  return (owner ?? []).some((o) => o === `${r.slice(0, slash)}/*` || o === `*${r.slice(slash)}`);
}

function urlCovered(owner: string[] | undefined, url: string): boolean {
  return (owner ?? []).some(
    (o) => o === '*' || o === url || (o.endsWith('*') && url.startsWith(o.slice(0, -1))),
  );
}

/** One verb on one resource (or URL) and name: upstream breaks servant rules down so. */
interface SimpleRule {
  verb: string;
  group?: string;
  resource?: string;
  name?: string;
  url?: string;
}

function breakdown(rule: PolicyRule): SimpleRule[] {
  const out: SimpleRule[] = [];
  for (const verb of rule.verbs ?? []) {
    for (const url of rule.nonResourceURLs ?? []) out.push({ verb, url });
    for (const group of rule.apiGroups ?? []) {
      for (const resource of rule.resources ?? []) {
        const names = rule.resourceNames?.length ? rule.resourceNames : [undefined];
        for (const name of names) out.push({ verb, group, resource, name });
      }
    }
  }
  return out;
}

function covers(owner: PolicyRule, s: SimpleRule): boolean {
  if (!has(owner.verbs, s.verb)) return false;
  if (s.url !== undefined) return urlCovered(owner.nonResourceURLs, s.url);
  if (!has(owner.apiGroups, s.group!) || !resourceCovered(owner.resources, s.resource!)) return false;
  const names = owner.resourceNames ?? [];
  return names.length === 0 || (s.name !== undefined && names.includes(s.name));
}

/** kube-apiserver's compact form of a rule in its escalation message. */
function describe(s: SimpleRule): string {
  const q = (v: string) => JSON.stringify(v);
  if (s.url !== undefined) return `{NonResourceURLs:[${q(s.url)}], Verbs:[${q(s.verb)}]}`;
  const name = s.name === undefined ? '' : `, ResourceNames:[${q(s.name)}]`;
  return `{APIGroups:[${q(s.group!)}], Resources:[${q(s.resource!)}]${name}, Verbs:[${q(s.verb)}]}`;
}

/** The parts of `rules` the user does not hold in `namespace` ('' for cluster-wide). */
export function escalations(store: Store, user: UserInfo, namespace: string, rules: PolicyRule[]): string[] {
  const owned = rulesFor(store, user, namespace);
  const missing = rules.flatMap(breakdown).filter((s) => !owned.some((o) => covers(o, s)));
  return [...new Set(missing.map(describe))];
}

/** An update that touches only what garbage collection owns needs no check, as upstream's. */
function onlyGcFields(obj: KObject, old: KObject): boolean {
  const strip = (o: KObject) => {
    const {
      ownerReferences: _o,
      finalizers: _f,
      resourceVersion: _r,
      managedFields: _m,
      ...md
    } = o.metadata ?? {};
    return { ...o, metadata: md };
  };
  return deepEqual(strip(obj), strip(old));
}

export function rbacEscalationCheck(store: Store, authz: Authorizer): AdmissionPlugin {
  const allowedTo = (a: AdmissionAttributes, verb: 'bind' | 'escalate', resource: string, name: string) => {
    const attrs: Attributes = {
      user: a.user,
      verb,
      resourceRequest: true,
      namespace: a.namespace,
      apiGroup: RBAC_GROUP,
      resource,
      subresource: '',
      name,
    };
    return authz.authorize(attrs).allowed;
  };
  return (a) => {
    if (a.group !== RBAC_GROUP || a.subresource !== '' || a.operation === 'DELETE') return;
    if (a.user.groups.includes(PRIVILEGED_GROUP)) return;
    const obj = a.object ?? {};
    if (a.operation === 'UPDATE' && a.oldObject !== undefined && onlyGcFields(obj, a.oldObject)) return;
    const refuse = (why: string) => admissionForbidden(a, why);
    const notHeld = (missing: string[]) =>
      refuse(
        `user "${a.user.name}" (groups=${JSON.stringify(a.user.groups)}) is attempting to grant RBAC permissions not currently held:\n${missing.join('\n')}`,
      );
    if (a.resource === 'roles' || a.resource === 'clusterroles') {
      if (allowedTo(a, 'escalate', a.resource, a.name)) return;
      if (a.resource === 'clusterroles' && obj.aggregationRule != null)
        throw refuse('must have cluster-admin privileges to use the aggregationRule');
      const missing = escalations(store, a.user, a.namespace, obj.rules ?? []);
      if (missing.length > 0) throw notHeld(missing);
      return;
    }
    if (a.resource === 'rolebindings' || a.resource === 'clusterrolebindings') {
      const ref: KObject = obj.roleRef ?? {};
      const refResource = ref.kind === 'ClusterRole' ? 'clusterroles' : 'roles';
      if (allowedTo(a, 'bind', refResource, ref.name ?? '')) return;
      const rules = roleRefRules(store, ref, a.namespace);
      if (rules === undefined) throw notFound({ group: RBAC_GROUP, resource: refResource }, ref.name ?? '');
      const missing = escalations(store, a.user, a.namespace, rules);
      if (missing.length > 0) throw notHeld(missing);
    }
  };
}
