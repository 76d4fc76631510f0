// Authorization: the request attributes kube-apiserver authorizes on, the AlwaysAllow and RBAC
// modes (--authorization-mode), and the Forbidden answer worded as kube-apiserver words it.
import type { KObject } from '../meta/object.js';
import { ApiError } from '../meta/status.js';
import type { Store } from '../storage/store.js';
import type { UserInfo } from './tokens.js';

/** What is being asked: a resource request (verb on group/resource/subresource) or a path. */
export type Attributes =
  | {
      user: UserInfo;
      verb: string;
      resourceRequest: true;
      namespace: string;
      apiGroup: string;
      resource: string;
      subresource: string;
      /** For list and watch, the name a `metadata.name=` field selector pins, as kube-apiserver reads it. */
      name: string;
      /** The raw field selector of a list or watch (the Node authorizer reads spec.nodeName from it). */
      fieldSelector?: string;
    }
  | { user: UserInfo; verb: string; resourceRequest: false; path: string };

export interface Decision {
  allowed: boolean;
  reason: string;
}

export interface Authorizer {
  authorize(a: Attributes): Decision;
}

export const AUTHORIZATION_MODES = ['AlwaysAllow', 'Node', 'RBAC'] as const;
export type AuthorizationMode = (typeof AUTHORIZATION_MODES)[number];

/** kube-apiserver's --authorization-mode value: a comma list of known modes, each once. */
export function parseAuthorizationModes(value: string): AuthorizationMode[] {
  const modes = value.split(',').map((m) => m.trim());
  for (const m of modes) {
    if (!(AUTHORIZATION_MODES as readonly string[]).includes(m))
      throw new Error(`authorization mode "${m}" is not supported: use ${AUTHORIZATION_MODES.join(', ')}`);
  }
  if (new Set(modes).size !== modes.length) throw new Error(`authorization modes repeat: ${value}`);
  return modes as AuthorizationMode[];
}

export const alwaysAllow: Authorizer = { authorize: () => ({ allowed: true, reason: '' }) };

/**
 * The modes in their order: the first that allows decides; when none does, the request is
 * refused with the reasons they gave (the Node authorizer explains, RBAC does not).
 */
export function unionAuthorizer(authorizers: Authorizer[]): Authorizer {
  return {
    authorize(a) {
      const reasons: string[] = [];
      for (const z of authorizers) {
        const d = z.authorize(a);
        if (d.allowed) return d;
        if (d.reason) reasons.push(d.reason);
      }
      return { allowed: false, reason: reasons.join('\n') };
    },
  };
}

/** The 403 kube-apiserver answers, e.g. `pods "web" is forbidden: User "x" cannot create resource "pods/exec" ...`. */
export function forbiddenFor(a: Attributes, reason: string): ApiError {
  const who = `User "${a.user.name}"`;
  const why = reason ? `: ${reason}` : '';
  if (!a.resourceRequest) {
    return new ApiError(403, 'Forbidden', `forbidden: ${who} cannot ${a.verb} path "${a.path}"${why}`, {});
  }
  const full = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  const qualified = a.apiGroup ? `${a.resource}.${a.apiGroup}` : a.resource;
  const subject = a.name ? `${qualified} "${a.name}"` : qualified;
  const scope = a.namespace ? `in the namespace "${a.namespace}"` : 'at the cluster scope';
  return new ApiError(
    403,
    'Forbidden',
    `${subject} is forbidden: ${who} cannot ${a.verb} resource "${full}" in API group "${a.apiGroup}" ${scope}${why}`,
    { name: a.name || undefined, group: a.apiGroup || undefined, kind: a.resource },
  );
}

/** The store tables of the rbac.authorization.k8s.io resources. */
export const RBAC = {
  roles: 'roles.rbac.authorization.k8s.io',
  clusterroles: 'clusterroles.rbac.authorization.k8s.io',
  rolebindings: 'rolebindings.rbac.authorization.k8s.io',
  clusterrolebindings: 'clusterrolebindings.rbac.authorization.k8s.io',
} as const;

export interface PolicyRule {
  verbs?: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

/** kube-apiserver's privileged group: allowed everything, and to grant everything. */
export const PRIVILEGED_GROUP = 'system:masters';

const has = (list: string[] | undefined, v: string) => (list ?? []).some((x) => x === '*' || x === v);

/** Whether one RBAC rule covers the request (verbs, groups, resources with subresources, names, URLs). */
export function ruleAllows(rule: PolicyRule, a: Attributes): boolean {
  if (!has(rule.verbs, a.verb)) return false;
  if (!a.resourceRequest) {
    return (rule.nonResourceURLs ?? []).some(
      (u) => u === '*' || u === a.path || (u.endsWith('*') && a.path.startsWith(u.slice(0, -1))),
    );
  }
  if (!has(rule.apiGroups, a.apiGroup)) return false;
  const full = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  const resources = rule.resources ?? [];
  const resourceOk = resources.some(
    (r) => r === '*' || r === full || (a.subresource !== '' && r === `*/${a.subresource}`),
  );
  if (!resourceOk) return false;
  return (rule.resourceNames ?? []).length === 0 || (rule.resourceNames ?? []).includes(a.name);
}

/** Whether a binding's subject is the user: by name, by group, or as a service account. */
function subjectMatches(s: KObject, user: UserInfo, bindingNamespace: string): boolean {
  if (s.kind === 'User') return s.name === user.name;
  if (s.kind === 'Group') return user.groups.includes(s.name);
  if (s.kind === 'ServiceAccount') {
    return user.name === `system:serviceaccount:${s.namespace || bindingNamespace}:${s.name}`;
  }
  return false;
}

/** The store's rules of a role reference: a ClusterRole, or a Role in the binding's namespace. */
export function roleRefRules(store: Store, ref: KObject, namespace: string): PolicyRule[] | undefined {
  const role =
    ref.kind === 'ClusterRole'
      ? store.get(RBAC.clusterroles, '', ref.name)
      : ref.kind === 'Role' && namespace !== ''
        ? store.get(RBAC.roles, namespace, ref.name)
        : undefined;
  return role === undefined ? undefined : (role.rules ?? []);
}

/** The bindings that name the user, cluster-wide and in `namespace`, with the namespace each applies in. */
function bindingsOf(store: Store, user: UserInfo, namespace: string): [KObject, string][] {
  const bindings: [KObject, string][] = store.list(RBAC.clusterrolebindings, '').map((b) => [b, '']);
  if (namespace) for (const b of store.list(RBAC.rolebindings, namespace)) bindings.push([b, namespace]);
  return bindings.filter(([b, ns]) => (b.subjects ?? []).some((s: KObject) => subjectMatches(s, user, ns)));
}

/** Every rule RBAC grants the user in `namespace` ('' for cluster-wide only): upstream's RulesFor. */
export function rulesFor(store: Store, user: UserInfo, namespace: string): PolicyRule[] {
  return bindingsOf(store, user, namespace).flatMap(
    ([b, ns]) => roleRefRules(store, b.roleRef ?? {}, ns) ?? [],
  );
}

/**
 * RBAC over the stored Roles, ClusterRoles and their bindings: allowed when any rule of a role
 * bound to the user (cluster-wide, or in the request's namespace) covers the request. Members of
 * system:masters are always allowed, as kube-apiserver's privileged group is.
 */
export function rbacAuthorizer(store: Store): Authorizer {
  return {
    authorize(a) {
      if (a.user.groups.includes(PRIVILEGED_GROUP)) return { allowed: true, reason: '' };
      const namespace = a.resourceRequest ? a.namespace : '';
      for (const [b, ns] of bindingsOf(store, a.user, namespace)) {
        const kind = ns ? 'RoleBinding' : 'ClusterRoleBinding';
        if ((roleRefRules(store, b.roleRef ?? {}, ns) ?? []).some((r) => ruleAllows(r, a))) {
          return { allowed: true, reason: `RBAC: allowed by ${kind} "${b.metadata.name}"` };
        }
      }
      return { allowed: false, reason: '' };
    },
  };
}
