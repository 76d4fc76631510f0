// rbac.authorization.k8s.io/v1: Roles, ClusterRoles and their bindings, which the RBAC
// authorizer reads, and the bootstrap policy kube-apiserver creates at start.
import { RBAC } from '../auth/authorizer.js';
import type { KObject } from '../meta/object.js';
import type { FieldErrors } from '../meta/status.js';
import { metadataFields } from '../selectors/field.js';
import { validateObjectMeta } from '../validation/meta.js';
import { ALL_VERBS, type ResourceDef } from './resource.js';

/** RBAC names are path segments (system:node is one), not DNS names. */
function checkPathSegment(errs: FieldErrors, field: string, v: string) {
  if (v === '.' || v === '..' || v.includes('/') || v.includes('%'))
    errs.invalid(field, v, `may not be '.' or '..' and may not contain '/' or '%'`);
}

function validateRules(obj: KObject, errs: FieldErrors) {
  (obj.rules ?? []).forEach((r: KObject, i: number) => {
    if ((r.verbs ?? []).length === 0)
      errs.required(`rules[${i}].verbs`, 'verbs must contain at least one value');
    const urls = (r.nonResourceURLs ?? []).length > 0;
    if (urls && (obj.metadata?.namespace || (r.resources ?? []).length > 0))
      errs.invalid(
        `rules[${i}].nonResourceURLs`,
        r.nonResourceURLs,
        'rules cannot apply to both regular resources and non-resource URLs',
      );
    if (!urls && (r.resources ?? []).length === 0)
      errs.required(`rules[${i}].resources`, 'resource rules must supply at least one resource');
  });
}

function validateBinding(obj: KObject, errs: FieldErrors) {
  const ref = obj.roleRef ?? {};
  if (ref.apiGroup !== 'rbac.authorization.k8s.io')
    errs.invalid('roleRef.apiGroup', ref.apiGroup ?? '', 'supported values: "rbac.authorization.k8s.io"');
  const kinds = obj.kind === 'ClusterRoleBinding' ? ['ClusterRole'] : ['Role', 'ClusterRole'];
  if (!kinds.includes(ref.kind))
    errs.invalid('roleRef.kind', ref.kind ?? '', `supported values: "${kinds.join('", "')}"`);
  if (!ref.name) errs.required('roleRef.name');
  (obj.subjects ?? []).forEach((s: KObject, i: number) => {
    if (!['User', 'Group', 'ServiceAccount'].includes(s.kind))
      errs.invalid(
        `subjects[${i}].kind`,
        s.kind ?? '',
        'supported values: "ServiceAccount", "User", "Group"',
      );
    if (!s.name) errs.required(`subjects[${i}].name`);
  });
}

const rbacDef = (
  kind: string,
  resource: string,
  namespaced: boolean,
  check: (o: KObject, e: FieldErrors) => void,
): ResourceDef => ({
  group: 'rbac.authorization.k8s.io',
  version: 'v1',
  resource,
  singular: kind.toLowerCase(),
  kind,
  namespaced,
  typeName: `io.k8s.api.rbac.v1.${kind}`,
  storage: RBAC[resource as keyof typeof RBAC],
  verbs: ALL_VERBS,
  subresources: [],
  hasStatus: false,
  fields: metadataFields,
  validate(obj, errs) {
    validateObjectMeta(obj, errs, namespaced, checkPathSegment);
    check(obj, errs);
  },
});

export const roles = rbacDef('Role', 'roles', true, validateRules);
export const clusterroles = rbacDef('ClusterRole', 'clusterroles', false, validateRules);
export const rolebindings = rbacDef('RoleBinding', 'rolebindings', true, validateBinding);
export const clusterrolebindings = rbacDef(
  'ClusterRoleBinding',
  'clusterrolebindings',
  false,
  validateBinding,
);

const rule = (verbs: string[], apiGroups: string[], resources: string[]): KObject => ({
  verbs,
  apiGroups,
  resources,
});
const READ = ['get', 'list', 'watch'];

/**
 * The bootstrap ClusterRoles (and bindings) users know, as far as this server has resources:
 * cluster-admin for system:masters, discovery and self-review for every authenticated user,
 * system:kubelet-api-admin for whoever is bound to it, and system:node: what a node agent reads
 * and writes (its Node and Lease, its pods' status, events, reviews, RuntimeClasses), the static
 * rules of the Node authorizer, which narrows them per node.
 */
export const BOOTSTRAP_CLUSTER_ROLES: Record<string, KObject[]> = {
  'cluster-admin': [rule(['*'], ['*'], ['*']), { verbs: ['*'], nonResourceURLs: ['*'] }],
  'system:discovery': [
    {
      verbs: ['get'],
      nonResourceURLs: [
        '/api',
        '/api/*',
        '/apis',
        '/apis/*',
        '/openapi',
        '/openapi/*',
        '/version',
        '/version/',
      ],
    },
  ],
  'system:basic-user': [
    rule(['create'], ['authorization.k8s.io'], ['selfsubjectaccessreviews', 'selfsubjectrulesreviews']),
    rule(['create'], ['authentication.k8s.io'], ['selfsubjectreviews']),
  ],
  'system:kubelet-api-admin': [
    rule(['get', 'list', 'watch', 'proxy'], [''], ['nodes']),
    rule(['*'], [''], ['nodes/log', 'nodes/metrics', 'nodes/proxy', 'nodes/stats']),
  ],
  // Upstream's NodeRules, resources this server does not serve included: the Node authorizer
  // narrows nodes, pods, secrets, configmaps, service account tokens and leases per node, and
  // NodeRestriction its writes; bound to anyone through RBAC, these rules are exactly upstream's.
  'system:node': [
    rule(['create'], ['authentication.k8s.io'], ['tokenreviews']),
    rule(['create'], ['authorization.k8s.io'], ['subjectaccessreviews', 'localsubjectaccessreviews']),
    rule(READ, [''], ['services']),
    rule(['create', 'get', 'list', 'watch'], [''], ['nodes']),
    rule(['update', 'patch'], [''], ['nodes/status']),
    rule(['update', 'patch'], [''], ['nodes']),
    rule(['create', 'update', 'patch'], [''], ['events']),
    rule(READ, [''], ['pods']),
    rule(['create', 'delete'], [''], ['pods']),
    rule(['update', 'patch'], [''], ['pods/status']),
    rule(['create'], [''], ['pods/eviction']),
    rule(READ, [''], ['secrets', 'configmaps']),
    rule(['get'], [''], ['persistentvolumeclaims', 'persistentvolumes']),
    rule(['get'], [''], ['endpoints']),
    rule(['create', 'get', 'list', 'watch'], ['certificates.k8s.io'], ['certificatesigningrequests']),
    rule(['get', 'create', 'update', 'patch', 'delete'], ['coordination.k8s.io'], ['leases']),
    rule(['get'], ['storage.k8s.io'], ['volumeattachments']),
    rule(['create'], [''], ['serviceaccounts/token']),
    rule(['get', 'update', 'patch'], [''], ['persistentvolumeclaims/status']),
    rule(READ, ['storage.k8s.io'], ['csidrivers']),
    rule(['get', 'create', 'update', 'patch', 'delete'], ['storage.k8s.io'], ['csinodes']),
    rule(READ, ['node.k8s.io'], ['runtimeclasses']),
  ],
};

/** Bootstrap bindings to a group; system:node's has no subject, as upstream's: the Node authorizer grants its rules. */
const BOOTSTRAP_BINDINGS: Record<string, string | undefined> = {
  'cluster-admin': 'system:masters',
  'system:discovery': 'system:authenticated',
  'system:basic-user': 'system:authenticated',
  'system:node': undefined,
};

/** The bootstrap objects, labelled as kube-apiserver labels its own. */
export function bootstrapPolicy(): { clusterroles: KObject[]; clusterrolebindings: KObject[] } {
  const metadata = (name: string) => ({
    name,
    labels: { 'kubernetes.io/bootstrapping': 'rbac-defaults' },
    annotations: { 'rbac.authorization.kubernetes.io/autoupdate': 'true' },
  });
  return {
    clusterroles: Object.entries(BOOTSTRAP_CLUSTER_ROLES).map(([name, rules]) => ({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: metadata(name),
      rules,
    })),
    clusterrolebindings: Object.entries(BOOTSTRAP_BINDINGS).map(([name, group]) => ({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: metadata(name),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      ...(group && { subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: group }] }),
    })),
  };
}
