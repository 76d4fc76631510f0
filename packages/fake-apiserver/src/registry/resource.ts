import type { Authorizer } from '../auth/authorizer.js';
import type { TokenAuthentication, UserInfo } from '../auth/tokens.js';
import type { Clock, KObject } from '../meta/object.js';
import type { FieldErrors } from '../meta/status.js';
import type { FieldSet } from '../selectors/field.js';
import type { Store } from '../storage/store.js';

/** What reviews consult: the server's token authenticator and its authorizer. */
export interface ReviewContext {
  authenticateToken(token: string, audiences?: string[]): TokenAuthentication | undefined;
  authorizer: Authorizer;
}

export interface StrategyContext {
  store: Store;
  clock: Clock;
}

export interface TableColumn {
  name: string;
  type: 'string' | 'integer' | 'date' | 'number' | 'boolean';
  format?: string;
  description: string;
  priority?: number;
  cell: (obj: KObject, now: number) => string | number | boolean;
}

/** Everything the generic REST layer needs to serve one resource. */
export interface ResourceDef {
  group: string;
  version: string;
  /** Plural, lower case: the URL segment. */
  resource: string;
  singular: string;
  kind: string;
  namespaced: boolean;
  shortNames?: string[];
  categories?: string[];
  /** OpenAPI definition name of the kind. */
  typeName: string;
  /** Store table; two API views of one storage (events) share it. */
  storage: string;
  verbs: string[];
  /** Subresources besides status (binding, eviction, log, and the keys of `parts`). */
  subresources: string[];
  /** status is its own subresource: writes to the main resource keep it, and vice versa. */
  hasStatus: boolean;
  fields: FieldSet;
  allowCreateOnUpdate?: boolean;
  /** metadata.generation is set on create and bumped on spec changes and graceful deletion. */
  tracksGeneration?: boolean;
  columns?: TableColumn[];
  /** Sets server-owned fields and defaults on create. */
  prepareForCreate?(obj: KObject, ctx: StrategyContext): void;
  /** Adjusts an update before validation (old is the stored object). */
  prepareForUpdate?(obj: KObject, old: KObject, ctx: StrategyContext): void;
  validate?(obj: KObject, errs: FieldErrors, old: KObject | undefined): void;
  /**
   * Subresources written through the generic update path, each changing one part of the object
   * (pods/resize, pods/ephemeralcontainers), by name.
   */
  parts?: Record<string, PartSubresource>;
  /** Refuses the deletion of an object that must stay (the built-in PriorityClasses) by throwing. */
  beforeDelete?(obj: KObject): void;
  /** Grace period for deletion, when the resource supports graceful deletion (pods). */
  gracePeriod?(obj: KObject, requested: number | undefined): number;
  /** A create-only review that is answered, never stored (SelfSubjectReview, TokenReview...). */
  review?(obj: KObject, user: UserInfo, ctx: ReviewContext): KObject;
  /** Converts from the stored form to this view and back (events.k8s.io over core events). */
  toView?(stored: KObject): KObject;
  fromView?(obj: KObject): KObject;
}

/** One part of an object behind its own subresource: the whole object in and out, one part written. */
export interface PartSubresource {
  /** The next object: the stored one with the request's part in it. */
  prepare(obj: KObject, old: KObject): KObject;
  validate(obj: KObject, errs: FieldErrors, old: KObject): void;
}

export const apiVersionOf = (d: Pick<ResourceDef, 'group' | 'version'>) =>
  d.group === '' ? d.version : `${d.group}/${d.version}`;

export const ALL_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
