// What an admission plugin sees of a write, after authorization and validation, before storage.
import type { UserInfo } from '../auth/tokens.js';
import type { KObject } from '../meta/object.js';
import { forbidden } from '../meta/status.js';

export type Operation = 'CREATE' | 'UPDATE' | 'DELETE';

export interface AdmissionAttributes {
  user: UserInfo;
  operation: Operation;
  group: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
  /** The object as it would be stored (CREATE, UPDATE) or the request body (pods/eviction). */
  object?: KObject;
  /** The stored object (UPDATE, DELETE). */
  oldObject?: KObject;
  /** Where a plugin's warnings go: the answer's `Warning` headers. */
  warnings?: string[];
}

/** A plugin's refusal of the write (admission.NewForbidden): 403 naming the resource and object. */
export const admissionForbidden = (a: AdmissionAttributes, why: string) =>
  forbidden({ group: a.group, resource: a.resource }, a.name, why);

/** Refuses a write by throwing an ApiError (403 for NodeRestriction). */
export type AdmissionPlugin = (a: AdmissionAttributes) => void;

/** Plugins run in order; the first refusal stops the write (kube-apiserver's validating chain). */
export function admissionChain(plugins: AdmissionPlugin[]): AdmissionPlugin {
  return (a) => {
    for (const p of plugins) p(a);
  };
}
