// TokenReview and the access reviews: create-only questions answered by this server's
// authenticator and authorizer (what a kubelet in webhook mode and `kubectl auth can-i` ask).
import type { Attributes } from '../auth/authorizer.js';
import type { UserInfo } from '../auth/tokens.js';
import type { KObject } from '../meta/object.js';
import type { ResourceDef, ReviewContext } from './resource.js';

const review = (
  group: string,
  kind: string,
  resource: string,
  typeName: string,
  answer: ResourceDef['review'],
): ResourceDef => ({
  group,
  version: 'v1',
  resource,
  singular: resource.slice(0, -1),
  kind,
  namespaced: false,
  typeName,
  storage: `${resource}.${group}`,
  verbs: ['create'],
  subresources: [],
  hasStatus: false,
  fields: {},
  review: answer,
});

const userInfo = (u: UserInfo) => ({
  username: u.name,
  uid: u.uid || undefined,
  groups: u.groups,
  ...(u.extra && Object.keys(u.extra).length > 0 && { extra: u.extra }),
});

/**
 * authentication.k8s.io/v1 TokenReview: who a bearer token belongs to, for the audiences asked
 * about (the API server's when none are): a token for another audience is not authenticated, and
 * status.audiences says which of those asked it is valid for.
 */
export const tokenreviews = review(
  'authentication.k8s.io',
  'TokenReview',
  'tokenreviews',
  'io.k8s.api.authentication.v1.TokenReview',
  (obj, _caller, ctx) => {
    const asked: string[] = Array.isArray(obj.spec?.audiences) ? obj.spec.audiences : [];
    const r = ctx.authenticateToken(obj.spec?.token ?? '', asked);
    const status: KObject = r
      ? { authenticated: true, user: userInfo(r.user), audiences: r.audiences }
      : { authenticated: false, user: {} };
    return { ...obj, metadata: { creationTimestamp: null }, status };
  },
);

/** The attributes a (self) subject access review asks about. */
function attributes(spec: KObject, user: UserInfo): Attributes {
  const r = spec.resourceAttributes;
  if (r) {
    return {
      user,
      verb: r.verb ?? '',
      resourceRequest: true,
      namespace: r.namespace ?? '',
      apiGroup: r.group ?? '',
      resource: r.resource ?? '',
      subresource: r.subresource ?? '',
      name: r.name ?? '',
      fieldSelector: r.fieldSelector?.rawSelector,
    };
  }
  const n = spec.nonResourceAttributes ?? {};
  return { user, verb: n.verb ?? '', resourceRequest: false, path: n.path ?? '' };
}

const decide = (obj: KObject, user: UserInfo, ctx: ReviewContext) => {
  const d = ctx.authorizer.authorize(attributes(obj.spec ?? {}, user));
  const status: KObject = { allowed: d.allowed };
  if (d.reason) status.reason = d.reason;
  return { ...obj, metadata: { creationTimestamp: null }, status };
};

/** authorization.k8s.io/v1 SubjectAccessReview: may the named user do this? */
export const subjectaccessreviews = review(
  'authorization.k8s.io',
  'SubjectAccessReview',
  'subjectaccessreviews',
  'io.k8s.api.authorization.v1.SubjectAccessReview',
  (obj, _caller, ctx) =>
    decide(
      obj,
      { name: obj.spec?.user ?? '', uid: obj.spec?.uid ?? '', groups: obj.spec?.groups ?? [] },
      ctx,
    ),
);

/** authorization.k8s.io/v1 SelfSubjectAccessReview: may I do this? (`kubectl auth can-i`) */
export const selfsubjectaccessreviews = review(
  'authorization.k8s.io',
  'SelfSubjectAccessReview',
  'selfsubjectaccessreviews',
  'io.k8s.api.authorization.v1.SelfSubjectAccessReview',
  (obj, caller, ctx) => decide(obj, caller, ctx),
);
