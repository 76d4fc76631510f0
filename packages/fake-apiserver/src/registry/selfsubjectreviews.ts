import type { ResourceDef } from './resource.js';

/** authentication.k8s.io/v1 SelfSubjectReview: who the caller is (`kubectl auth whoami`). */
export const selfsubjectreviews: ResourceDef = {
  group: 'authentication.k8s.io',
  version: 'v1',
  resource: 'selfsubjectreviews',
  singular: 'selfsubjectreview',
  kind: 'SelfSubjectReview',
  namespaced: false,
  typeName: 'io.k8s.api.authentication.v1.SelfSubjectReview',
  storage: 'selfsubjectreviews.authentication.k8s.io',
  verbs: ['create'],
  subresources: [],
  hasStatus: false,
  fields: {},
  review(obj, user) {
    const userInfo: Record<string, unknown> = { username: user.name, groups: user.groups };
    if (user.uid) userInfo.uid = user.uid;
    return { ...obj, metadata: { creationTimestamp: null }, status: { userInfo } };
  },
};

/** The beta version kubectl 1.27 asks for. */
export const selfsubjectreviewsV1beta1: ResourceDef = {
  ...selfsubjectreviews,
  version: 'v1beta1',
  typeName: 'io.k8s.api.authentication.v1beta1.SelfSubjectReview',
};
