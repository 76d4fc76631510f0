import { randomUUID } from 'node:crypto';
import { checkDepth } from '../meta/depth.js';
import { deepEqual } from '../meta/equal.js';
import { type Clock, type KObject, rfc3339 } from '../meta/object.js';
import {
  ApiError,
  alreadyExists,
  badRequest,
  FieldErrors,
  forbidden,
  notFound,
  type ResourceRef,
  staleConflict,
} from '../meta/status.js';
import { applyJsonPatch } from '../patch/json-patch.js';
import { applyMergePatch } from '../patch/merge.js';
import { applyStrategicMergePatch } from '../patch/strategic.js';
import { pruneUnknownFields } from '../schema/walk.js';
import type { Store } from '../storage/store.js';
import { apiVersionOf, type ResourceDef, type StrategyContext } from './resource.js';

export type FieldValidation = 'Strict' | 'Warn' | 'Ignore';

export interface WriteOptions {
  dryRun?: boolean;
  fieldValidation?: FieldValidation;
  /** Collects warnings to send back (unknown fields under Warn). */
  warnings?: string[];
  /** Validating admission: sees the valid object about to be stored and may refuse it by throwing. */
  admit?: (operation: 'CREATE' | 'UPDATE', obj: KObject, old: KObject | undefined) => void;
  /** Admission that runs before validation (kube-apiserver's mutating phase, where NodeRestriction sits). */
  admitBeforeValidation?: (operation: 'CREATE' | 'UPDATE', obj: KObject, old: KObject | undefined) => void;
}

export interface DeleteOptions {
  gracePeriodSeconds?: number;
  preconditions?: { uid?: string; resourceVersion?: string };
  propagationPolicy?: string;
  dryRun?: boolean;
  /** Validating admission of the deletion of the stored object. */
  admit?: (old: KObject) => void;
}

/** A write to the main resource, or to its status subresource or one of its `parts`. */
export type SubresourceWrite = WriteOptions & { status?: boolean; part?: string };

export type PatchType = 'json' | 'merge' | 'strategic';

const ref = (d: ResourceDef): ResourceRef => ({ group: d.group, resource: d.resource });
const clone = <T>(o: T): T => structuredClone(o);
const GENERATE_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

function randomSuffix(): string {
  let s = '';
  for (let i = 0; i < 5; i++) s += GENERATE_ALPHABET[Math.floor(Math.random() * GENERATE_ALPHABET.length)];
  return s;
}

/** Everything but metadata and status: a change here bumps metadata.generation. */
function specOf(o: KObject): KObject {
  const { metadata: _m, status: _s, ...rest } = o;
  return rest;
}

function withoutRv(o: KObject): KObject {
  return { ...o, metadata: { ...o.metadata, resourceVersion: undefined } };
}

/**
 * The generic registry: create / update / patch / delete with the apiserver's semantics
 * (defaults, validation, optimistic concurrency, status split, graceful deletion, finalizers).
 * Both the HTTP layer and the built-in controllers write through it.
 */
export class RestStorage {
  readonly ctx: StrategyContext;

  constructor(
    readonly store: Store,
    readonly clock: Clock,
  ) {
    this.ctx = { store, clock };
  }

  /** Stored form -> the form of the API view (only events.k8s.io differs). */
  view(def: ResourceDef, stored: KObject): KObject {
    return def.toView ? def.toView(stored) : stored;
  }

  get(def: ResourceDef, ns: string, name: string): KObject {
    const o = this.store.get(def.storage, def.namespaced ? ns : '', name);
    if (o === undefined) throw notFound(ref(def), name);
    return this.view(def, o);
  }

  /** Type checks, unknown-field handling per fieldValidation, apiVersion/kind checks. */
  decode(def: ResourceDef, body: KObject, opts: WriteOptions, owned = false): KObject {
    const expected = apiVersionOf(def);
    if (body.apiVersion !== undefined && body.apiVersion !== expected) {
      throw badRequest(
        `the API version in the data (${body.apiVersion}) does not match the expected API version (${expected})`,
      );
    }
    if (body.kind !== undefined && body.kind !== def.kind) {
      throw badRequest(
        `${body.kind} in version "${def.version}" cannot be handled as a ${def.kind}: the kind in the data does not match`,
      );
    }
    // A patch result is already a private copy; a request body may be shared.
    const obj = owned ? body : clone(body);
    obj.apiVersion = expected;
    obj.kind = def.kind;
    obj.metadata ??= {};
    const problems = pruneUnknownFields(obj, def.typeName);
    if (problems.typeErrors.length > 0) {
      throw badRequest(
        `${def.kind} in version "${def.version}" cannot be handled as a ${def.kind}: json: cannot unmarshal ${problems.typeErrors.join('; ')}`,
      );
    }
    const fv = opts.fieldValidation ?? 'Warn';
    if (problems.unknown.length > 0 && fv === 'Strict') {
      throw badRequest(
        `${def.kind} in version "${def.version}" cannot be handled as a ${def.kind}: strict decoding error: ${problems.unknown.map((u) => `unknown field "${u}"`).join(', ')}`,
      );
    }
    if (fv === 'Warn') for (const u of problems.unknown) opts.warnings?.push(`unknown field "${u}"`);
    return def.fromView ? def.fromView(obj) : obj;
  }

  private checkNamespace(def: ResourceDef, ns: string, name: string) {
    if (!def.namespaced) return;
    const nsObj = this.store.get('namespaces', '', ns);
    if (nsObj === undefined) throw notFound({ group: '', resource: 'namespaces' }, ns);
    if (nsObj.metadata.deletionTimestamp) {
      throw forbidden(
        ref(def),
        name,
        `unable to create new content in namespace ${ns} because it is being terminated`,
      );
    }
  }

  private validate(def: ResourceDef, obj: KObject, old: KObject | undefined) {
    const errs = new FieldErrors();
    def.validate?.(obj, errs, old);
    errs.throwIfAny(def.kind, obj.metadata.name ?? '', def.group);
  }

  create(def: ResourceDef, ns: string, body: KObject, opts: WriteOptions = {}): KObject {
    return this.createDecoded(def, ns, this.decode(def, body, opts), opts);
  }

  /** Create from an object already decoded into the stored form. */
  private createDecoded(def: ResourceDef, ns: string, obj: KObject, opts: WriteOptions): KObject {
    const md = obj.metadata;
    if (def.namespaced) {
      if (md.namespace && ns && md.namespace !== ns) {
        throw badRequest(
          'the namespace of the provided object does not match the namespace sent on the request',
        );
      }
      md.namespace = ns || md.namespace;
    } else delete md.namespace;
    if (!md.name && md.generateName) md.name = `${md.generateName}${randomSuffix()}`;
    md.uid = randomUUID();
    md.creationTimestamp = rfc3339(this.clock.now());
    // Only kinds whose strategy tracks it carry a generation (pods since 1.33), as upstream.
    if (def.tracksGeneration) md.generation = 1;
    else delete md.generation;
    delete md.resourceVersion;
    delete md.deletionTimestamp;
    delete md.deletionGracePeriodSeconds;
    delete md.selfLink;
    if (md.finalizers?.length === 0) delete md.finalizers;
    def.prepareForCreate?.(obj, this.ctx);
    opts.admitBeforeValidation?.('CREATE', obj, undefined);
    this.validate(def, obj, undefined);
    this.checkNamespace(def, md.namespace ?? '', md.name);
    opts.admit?.('CREATE', obj, undefined);
    if (this.store.get(def.storage, md.namespace ?? '', md.name) !== undefined)
      throw alreadyExists(ref(def), md.name);
    if (opts.dryRun) return this.view(def, obj);
    return this.view(def, this.store.write(def.storage, 'ADDED', obj));
  }

  /** PUT of the main resource or of its status subresource or one of its `parts`. */
  update(def: ResourceDef, ns: string, name: string, body: KObject, opts: SubresourceWrite = {}): KObject {
    const obj = this.decode(def, body, opts);
    if (obj.metadata.name !== undefined && obj.metadata.name !== name) {
      throw badRequest(
        `the name of the object (${obj.metadata.name}) does not match the name on the URL (${name})`,
      );
    }
    obj.metadata.name = name;
    const key = def.namespaced ? ns : '';
    if (def.namespaced) {
      if (obj.metadata.namespace && obj.metadata.namespace !== ns) {
        throw badRequest(
          'the namespace of the provided object does not match the namespace sent on the request',
        );
      }
      obj.metadata.namespace = ns;
    }
    const old = this.store.get(def.storage, key, name);
    if (old === undefined) {
      if (def.allowCreateOnUpdate && !opts.status && opts.part === undefined) {
        delete obj.metadata.resourceVersion;
        return this.createDecoded(def, ns, obj, opts);
      }
      throw notFound(ref(def), name);
    }
    return this.updateFrom(def, old, obj, opts);
  }

  /** Applies an already decoded object over the stored `old`. */
  private updateFrom(def: ResourceDef, old: KObject, obj: KObject, opts: SubresourceWrite): KObject {
    const rv = obj.metadata.resourceVersion;
    if (rv !== undefined && rv !== '' && rv !== old.metadata.resourceVersion)
      throw staleConflict(ref(def), old.metadata.name);
    let next: KObject;
    const part = opts.part === undefined ? undefined : def.parts?.[opts.part];
    if (opts.part !== undefined && part === undefined)
      throw notFound({ group: def.group, resource: `${def.resource}/${opts.part}` }, old.metadata.name);
    if (part !== undefined) next = part.prepare(obj, old);
    else if (opts.status) {
      // A status write changes status (and labels/annotations); everything else stays.
      next = clone(old);
      next.status = obj.status;
      next.metadata.labels = obj.metadata.labels;
      next.metadata.annotations = obj.metadata.annotations;
      if (next.metadata.labels === undefined) delete next.metadata.labels;
      if (next.metadata.annotations === undefined) delete next.metadata.annotations;
    } else {
      next = obj;
      if (def.hasStatus) {
        if (old.status === undefined) delete next.status;
        else next.status = clone(old.status);
      }
    }
    const md = next.metadata;
    for (const k of [
      'uid',
      'creationTimestamp',
      'deletionTimestamp',
      'deletionGracePeriodSeconds',
      'generation',
    ] as const) {
      if (old.metadata[k] === undefined) delete md[k];
      else (md as KObject)[k] = old.metadata[k];
    }
    if (md.finalizers?.length === 0) delete md.finalizers;
    if (old.metadata.deletionTimestamp) {
      const added = (md.finalizers ?? []).filter((f: string) => !(old.metadata.finalizers ?? []).includes(f));
      if (added.length > 0) {
        throw new ApiError(
          422,
          'Invalid',
          `${def.kind} "${md.name}" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers ${JSON.stringify(added)}`,
        );
      }
    }
    if (part === undefined) def.prepareForUpdate?.(next, old, this.ctx);
    if (def.tracksGeneration && !deepEqual(specOf(next), specOf(old)))
      md.generation = (old.metadata.generation ?? 0) + 1;
    opts.admitBeforeValidation?.('UPDATE', next, old);
    if (part !== undefined) {
      const errs = new FieldErrors();
      part.validate(next, errs, old);
      errs.throwIfAny(def.kind, md.name, def.group);
    } else this.validate(def, next, old);
    opts.admit?.('UPDATE', next, old);
    md.resourceVersion = old.metadata.resourceVersion;
    if (opts.dryRun) return this.view(def, next);
    // Removing the last finalizer of an object whose deletion is due completes the deletion.
    const finalized = !(md.finalizers?.length > 0) && !(md.deletionGracePeriodSeconds > 0);
    if (md.deletionTimestamp && finalized && def.resource !== 'namespaces') {
      return this.view(def, this.store.delete(def.storage, md.namespace ?? '', md.name) ?? next);
    }
    // A no-op write is not a write: same resourceVersion, no event (as the apiserver does).
    if (deepEqual(withoutRv(next), withoutRv(old))) return this.view(def, old);
    return this.view(def, this.store.write(def.storage, 'MODIFIED', next));
  }

  patch(
    def: ResourceDef,
    ns: string,
    name: string,
    type: PatchType,
    patch: unknown,
    opts: SubresourceWrite = {},
  ): KObject {
    const stored = this.store.get(def.storage, def.namespaced ? ns : '', name);
    if (stored === undefined) throw notFound(ref(def), name);
    const current = clone(this.view(def, stored));
    let patched: unknown;
    if (type === 'json') patched = applyJsonPatch(current, patch);
    else if (type === 'merge') patched = applyMergePatch(current, patch);
    else patched = applyStrategicMergePatch(current, patch, def.typeName);
    if (typeof patched !== 'object' || patched === null || Array.isArray(patched)) {
      throw badRequest('the patch produced something that is not an object');
    }
    // A patch may graft a deep value onto a deep place: the sum must stay within the limit too.
    checkDepth(patched);
    const obj = this.decode(def, patched as KObject, opts, true);
    const md = obj.metadata;
    if (md.name !== name) throw badRequest(`metadata.name: Invalid value: "${md.name}": field is immutable`);
    // Only a resourceVersion the patch itself carries is a precondition.
    if (md.resourceVersion === stored.metadata.resourceVersion) delete md.resourceVersion;
    return this.updateFrom(def, stored, obj, opts);
  }

  delete(def: ResourceDef, ns: string, name: string, opts: DeleteOptions = {}): KObject {
    const key = def.namespaced ? ns : '';
    const old = this.store.get(def.storage, key, name);
    if (old === undefined) throw notFound(ref(def), name);
    def.beforeDelete?.(old);
    opts.admit?.(old);
    const pre = opts.preconditions;
    if (pre?.uid && pre.uid !== old.metadata.uid) {
      throw new ApiError(
        409,
        'Conflict',
        `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${old.metadata.uid}`,
        {
          name,
          kind: def.resource,
        },
      );
    }
    if (pre?.resourceVersion && pre.resourceVersion !== old.metadata.resourceVersion) {
      throw new ApiError(
        409,
        'Conflict',
        `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${old.metadata.resourceVersion}`,
        {
          name,
          kind: def.resource,
        },
      );
    }
    const grace = def.gracePeriod ? def.gracePeriod(old, opts.gracePeriodSeconds) : 0;
    const hasFinalizers = (old.metadata.finalizers ?? []).length > 0;
    // Namespaces always pass through Terminating so their content can be removed first.
    const graceful = grace > 0 || hasFinalizers || def.resource === 'namespaces';
    // A kind with graceful deletion is deleted at once with grace 0, and its watchers see that
    // grace on the deleted object: the kubelet then stops a force-deleted pod's containers at
    // once, not after the pod's own terminationGracePeriodSeconds.
    const last = def.gracePeriod
      ? { deletionTimestamp: rfc3339(this.clock.now()), deletionGracePeriodSeconds: 0 }
      : {};
    const removeNow = () =>
      opts.dryRun ? this.view(def, old) : this.view(def, this.store.delete(def.storage, key, name, last)!);
    if (!graceful) return removeNow();
    const next = clone(old);
    const md = next.metadata;
    if (md.deletionTimestamp !== undefined) {
      // Already being deleted: only a shorter grace period changes anything (the kubelet's final
      // grace-0 delete of a pod removes it).
      if (grace >= (md.deletionGracePeriodSeconds ?? 0)) return this.view(def, old);
      if (grace === 0 && !hasFinalizers) return removeNow();
    } else if (md.generation !== undefined) md.generation += 1;
    md.deletionTimestamp = rfc3339(this.clock.now() + grace * 1000);
    md.deletionGracePeriodSeconds = grace;
    if (def.resource === 'namespaces') next.status = { ...(next.status ?? {}), phase: 'Terminating' };
    if (opts.dryRun) return this.view(def, next);
    return this.view(def, this.store.write(def.storage, 'MODIFIED', next));
  }
}
