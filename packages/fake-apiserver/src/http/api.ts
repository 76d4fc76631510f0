import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AdmissionPlugin, Operation } from '../admission/attributes.js';
import type { UserInfo } from '../auth/tokens.js';
import type { KObject } from '../meta/object.js';
import {
  ApiError,
  badRequest,
  expired,
  methodNotAllowed,
  notFound,
  unsupportedMediaType,
} from '../meta/status.js';
import { type KubeletClient, podKubeletRequest, STREAMING } from '../proxy/kubelet.js';
import { bindPod } from '../registry/binding.js';
import type { ResourceDef, ReviewContext } from '../registry/resource.js';
import { apiVersionOf } from '../registry/resource.js';
import type {
  DeleteOptions,
  FieldValidation,
  PatchType,
  RestStorage,
  SubresourceWrite,
  WriteOptions,
} from '../registry/rest.js';
import type { ServiceAccountTokens } from '../registry/serviceaccounts.js';
import { parseFieldSelector } from '../selectors/field.js';
import { parseLabelSelector } from '../selectors/label.js';
import {
  addWarnings,
  asObject,
  decodeObject,
  mediaType,
  parseJson,
  readBody,
  sendJson,
  sendJsonList,
  sendStored,
} from './body.js';
import { negotiate, renderList, renderOne } from './representation.js';
import { serveWatch } from './watch.js';

export interface ApiHandlerOptions {
  maxBodyBytes: number;
  /** What TokenReview and the access reviews consult. */
  reviews: ReviewContext;
  bookmarkIntervalMs: number;
  /** Upper bound for a watch without timeoutSeconds (the apiserver picks 30-60 min). */
  maxWatchSeconds: number;
  /** The enabled validating admission plugins, run on every write of an authenticated caller. */
  admission?: AdmissionPlugin;
  /** Plugins of the earlier phase, before validation (kube-apiserver's mutating admission). */
  mutatingAdmission?: AdmissionPlugin;
  /** Most watches open at once; one more is 429. */
  maxWatches: number;
  /** Most watches one user may hold open at once; one more is 429 for that user only. */
  maxWatchesPerUser: number;
  /** Longest watch a client may ask for with timeoutSeconds; a longer one is cut to this. */
  maxWatchTimeoutSeconds: number;
  /** serviceaccounts/token (TokenRequest). */
  serviceAccountTokens?: ServiceAccountTokens;
}

export interface ResourceRequest {
  def: ResourceDef;
  namespace: string;
  name?: string;
  subresource?: string;
  /** Legacy /watch/ path prefix. */
  watchPath: boolean;
  query: URLSearchParams;
  /** The authenticated caller (set by the router). */
  user?: UserInfo;
}

/** The verb a request is, for the resource's verb list (405 otherwise). */
export function verbOf(method: string, r: ResourceRequest): string {
  const collection = r.name === undefined;
  switch (method) {
    case 'GET':
      if (
        r.watchPath ||
        (r.query.get('watch') && r.query.get('watch') !== 'false' && r.query.get('watch') !== '0')
      )
        return 'watch';
      return collection ? 'list' : 'get';
    case 'POST':
      return 'create';
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return collection ? 'deletecollection' : 'delete';
    default:
      return method.toLowerCase();
  }
}

const PATCH_TYPES: Record<string, PatchType> = {
  'application/json-patch+json': 'json',
  'application/merge-patch+json': 'merge',
  'application/strategic-merge-patch+json': 'strategic',
};

interface ContinueToken {
  rv: number;
  /** The last [namespace, name] returned. */
  start: [string, string];
}

const encodeContinue = (t: ContinueToken) => Buffer.from(JSON.stringify(t)).toString('base64url');

function decodeContinue(s: string): ContinueToken {
  try {
    const t = JSON.parse(Buffer.from(s, 'base64url').toString('utf8')) as ContinueToken;
    if (typeof t.rv === 'number' && Array.isArray(t.start) && t.start.length === 2) return t;
  } catch {
    // fall through to the error below
  }
  throw badRequest(
    'continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)',
  );
}

const keyOf = (o: KObject): [string, string] => [o.metadata.namespace ?? '', o.metadata.name];

/** Orders like the store lists: by namespace, then name (a joined string would not: '-' < '/'). */
const after = (k: [string, string], start: [string, string]) =>
  k[0] > start[0] || (k[0] === start[0] && k[1] > start[1]);

function intParam(q: URLSearchParams, name: string): number | undefined {
  const v = q.get(name);
  if (v === null || v === '') return undefined;
  const n = Number(v);
  if (!Number.isInteger(n)) throw badRequest(`invalid value for ${name}: ${v}`);
  return n;
}

/** A resourceVersion is an unsigned integer (upstream parses a uint64; here it must be exact in a double). */
function parseResourceVersion(v: string): number {
  const n = Number(v);
  if (!/^\d+$/.test(v) || !Number.isSafeInteger(n)) throw badRequest(`invalid resource version: ${v}`);
  return n;
}

function fieldValidation(q: URLSearchParams): FieldValidation | undefined {
  const v = q.get('fieldValidation');
  if (v === null || v === '') return undefined;
  if (v !== 'Strict' && v !== 'Warn' && v !== 'Ignore') {
    throw badRequest(`fieldValidation must be one of Ignore, Warn, Strict, got: ${v}`);
  }
  return v;
}

/** Serves the verbs of every resource over the generic registry. */
export class ApiHandler {
  private openWatches = 0;
  private readonly watchesByUser = new Map<string, number>();

  constructor(
    private readonly rest: RestStorage,
    private readonly kubelet: KubeletClient,
    private readonly opts: ApiHandlerOptions,
  ) {}

  async handle(req: IncomingMessage, res: ServerResponse, r: ResourceRequest): Promise<void> {
    const method = req.method ?? 'GET';
    const { def, subresource } = r;
    if (subresource !== undefined) return this.handleSubresource(req, res, r);
    const verb = verbOf(method, r);
    if (!def.verbs.includes(verb)) throw methodNotAllowed(verb, def.kind);
    if (def.review) {
      // Reviews are answered from the request and the caller, never stored.
      const body = asObject(
        decodeObject(await readBody(req, this.opts.maxBodyBytes), mediaType(req)),
        def.kind,
      );
      const obj = this.rest.decode(def, body, { fieldValidation: fieldValidation(r.query) });
      return sendJson(
        res,
        201,
        def.review(
          obj,
          r.user ?? { name: 'system:anonymous', uid: '', groups: ['system:unauthenticated'] },
          this.opts.reviews,
        ),
      );
    }
    if (
      r.watchPath ||
      (method === 'GET' &&
        r.query.get('watch') &&
        r.query.get('watch') !== 'false' &&
        r.query.get('watch') !== '0')
    ) {
      return this.watch(req, res, r);
    }
    const writeOpts = (): WriteOptions => {
      const warnings: string[] = [];
      return {
        dryRun: r.query.get('dryRun') === 'All',
        fieldValidation: fieldValidation(r.query),
        warnings,
        admit: this.admitter(r, '', warnings),
        admitBeforeValidation: this.admitter(r, '', warnings, this.opts.mutatingAdmission),
      };
    };
    if (r.name === undefined) {
      if (method === 'GET') return this.list(req, res, r);
      if (method === 'POST') {
        const o = writeOpts();
        const body = asObject(
          decodeObject(await readBody(req, this.opts.maxBodyBytes), mediaType(req)),
          def.kind,
        );
        const created = this.rest.create(def, r.namespace, body, o);
        await this.rest.store.sync();
        addWarnings(res, o.warnings!);
        return sendStored(res, 201, created);
      }
      if (method === 'DELETE') return this.deleteCollection(req, res, r);
      throw methodNotAllowed(method, def.kind);
    }
    switch (method) {
      case 'GET': {
        const obj = this.rest.get(def, r.namespace, r.name);
        const rep = negotiate(req.headers.accept, r.query, this.rest.clock.now());
        if (rep.as === 'object') return sendStored(res, 200, obj);
        return sendJson(res, 200, renderOne(def, obj, rep));
      }
      case 'PUT': {
        const o = writeOpts();
        const body = asObject(
          decodeObject(await readBody(req, this.opts.maxBodyBytes), mediaType(req)),
          def.kind,
        );
        const existed =
          this.rest.store.get(def.storage, def.namespaced ? r.namespace : '', r.name) !== undefined;
        const out = this.rest.update(def, r.namespace, r.name, body, o);
        await this.rest.store.sync();
        addWarnings(res, o.warnings!);
        return sendStored(res, existed ? 200 : 201, out);
      }
      case 'PATCH': {
        const o = writeOpts();
        const out = this.rest.patch(def, r.namespace, r.name, ...(await this.patchBody(req)), o);
        await this.rest.store.sync();
        addWarnings(res, o.warnings!);
        return sendStored(res, 200, out);
      }
      case 'DELETE': {
        const out = this.rest.delete(def, r.namespace, r.name, await this.deleteOptions(req, r));
        await this.rest.store.sync();
        return sendJson(res, 200, out);
      }
      default:
        throw methodNotAllowed(method, def.kind);
    }
  }

  private async patchBody(req: IncomingMessage): Promise<[PatchType, unknown]> {
    const ct = mediaType(req);
    if (ct === 'application/apply-patch+yaml' || ct === 'application/apply-patch+cbor') {
      throw new ApiError(
        415,
        'UnsupportedMediaType',
        'server-side apply is not supported by this apiserver; use client-side apply (kubectl apply without --server-side) or another patch type',
      );
    }
    const type = PATCH_TYPES[ct];
    if (type === undefined) throw unsupportedMediaType(ct, Object.keys(PATCH_TYPES));
    const raw = await readBody(req, this.opts.maxBodyBytes);
    if (raw.length === 0) throw badRequest('the request body is empty');
    return [type, parseJson(raw, 'error decoding patch')];
  }

  /** The admission hook of a request's writes (none for a caller the router did not authenticate). */
  private admitter(
    r: ResourceRequest,
    subresource: string,
    warnings?: string[],
    admission = this.opts.admission,
  ) {
    const user = r.user;
    if (admission === undefined || user === undefined) return undefined;
    return (operation: Operation, object: KObject | undefined, oldObject: KObject | undefined) =>
      admission({
        user,
        operation,
        group: r.def.group,
        resource: r.def.resource,
        subresource,
        namespace: r.namespace,
        name: object?.metadata?.name ?? oldObject?.metadata?.name ?? r.name ?? '',
        object,
        oldObject,
        warnings,
      });
  }

  /** Both phases for a write that has no validation step of its own (deletions, eviction, token). */
  private admitAll(r: ResourceRequest, subresource: string) {
    const phases = [
      this.admitter(r, subresource, undefined, this.opts.mutatingAdmission),
      this.admitter(r, subresource),
    ].filter((p) => p !== undefined);
    if (phases.length === 0) return undefined;
    return (operation: Operation, object: KObject | undefined, oldObject: KObject | undefined) => {
      for (const p of phases) p(operation, object, oldObject);
    };
  }

  private async deleteOptions(req: IncomingMessage, r: ResourceRequest): Promise<DeleteOptions> {
    const q = r.query;
    const admit = this.admitAll(r, '');
    const raw = await readBody(req, this.opts.maxBodyBytes);
    const body: KObject = raw.length > 0 ? asObject(decodeObject(raw, mediaType(req)), 'DeleteOptions') : {};
    const policy = q.get('propagationPolicy') ?? body.propagationPolicy;
    if (policy !== undefined && policy !== null && !['Orphan', 'Background', 'Foreground'].includes(policy)) {
      throw new ApiError(
        422,
        'Invalid',
        `propagationPolicy: Unsupported value: "${policy}": supported values: "Foreground", "Background", "Orphan"`,
      );
    }
    const dryRun = q.get('dryRun') === 'All' || (Array.isArray(body.dryRun) && body.dryRun.includes('All'));
    return {
      gracePeriodSeconds: intParam(q, 'gracePeriodSeconds') ?? body.gracePeriodSeconds,
      preconditions: body.preconditions,
      propagationPolicy: policy ?? undefined,
      dryRun,
      admit: admit && ((old) => admit('DELETE', undefined, old)),
    };
  }

  /** List semantics: selectors, resourceVersion, limit/continue, Table output. */
  private list(req: IncomingMessage, res: ServerResponse, r: ResourceRequest): Promise<void> | undefined {
    const { def, query: q } = r;
    const store = this.rest.store;
    const current = store.resourceVersion;
    const rvParam = q.get('resourceVersion');
    const match = q.get('resourceVersionMatch');
    if (rvParam !== null && rvParam !== '' && rvParam !== '0') {
      const rv = parseResourceVersion(rvParam);
      if (rv > current) {
        throw new ApiError(504, 'Timeout', `Too large resource version: ${rv}, current: ${current}`, {
          causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
          retryAfterSeconds: 1,
        });
      }
      // Only the present is kept: an exact read of the past cannot be served.
      if (match === 'Exact' && rv !== current) throw expired(`too old resource version: ${rv} (${current})`);
    }
    const label = parseLabelSelector(q.get('labelSelector'));
    const field = parseFieldSelector(q.get('fieldSelector'), def.fields);
    const limit = intParam(q, 'limit');
    const cont = q.get('continue');
    const token = cont ? decodeContinue(cont) : undefined;
    let items = store.list(def.storage, def.namespaced && r.namespace ? r.namespace : undefined);
    if (label || field)
      items = items.filter((o) => (!label || label(o.metadata.labels)) && (!field || field(o)));
    if (token) items = items.filter((o) => after(keyOf(o), token.start));
    const listMeta: KObject = { resourceVersion: String(token?.rv ?? current) };
    if (limit !== undefined && limit > 0 && items.length > limit) {
      const remaining = items.length - limit;
      items = items.slice(0, limit);
      listMeta.continue = encodeContinue({
        rv: token?.rv ?? current,
        start: keyOf(items[items.length - 1]!),
      });
      if (!label && !field) listMeta.remainingItemCount = remaining;
    }
    const viewed = def.toView ? items.map((o) => def.toView!(o)) : items;
    const rep = negotiate(req.headers.accept, q, this.rest.clock.now());
    if (rep.as === 'object') {
      const { items: _, ...head } = renderList(def, [], listMeta, rep);
      return sendJsonList(res, head, viewed);
    }
    sendJson(res, 200, renderList(def, viewed, listMeta, rep));
    return undefined;
  }

  private watch(req: IncomingMessage, res: ServerResponse, r: ResourceRequest) {
    const { def, query: q } = r;
    // One identity may not take every watch slot: its own cap answers it alone with 429.
    const who = r.user?.name ?? '';
    const mine = this.watchesByUser.get(who) ?? 0;
    if (this.openWatches >= this.opts.maxWatches || mine >= this.opts.maxWatchesPerUser) {
      throw new ApiError(429, 'TooManyRequests', 'Too many requests, please try again later.', {
        retryAfterSeconds: 1,
      });
    }
    const rvParam = q.get('resourceVersion');
    let fromRv: number | undefined;
    if (rvParam !== null && rvParam !== '') {
      fromRv = parseResourceVersion(rvParam);
    }
    let fieldSel = q.get('fieldSelector');
    if (r.name !== undefined) fieldSel = [fieldSel, `metadata.name=${r.name}`].filter(Boolean).join(',');
    const timeout = intParam(q, 'timeoutSeconds');
    const maxSeconds = this.opts.maxWatchSeconds;
    // A client's own timeout is honoured up to the limit (an unbounded one would overflow the timer).
    const seconds =
      timeout !== undefined && timeout > 0
        ? Math.min(timeout, this.opts.maxWatchTimeoutSeconds)
        : maxSeconds * (0.5 + Math.random() * 0.5);
    const rep = negotiate(req.headers.accept, q, this.rest.clock.now());
    this.openWatches++;
    this.watchesByUser.set(who, mine + 1);
    res.once('close', () => {
      this.openWatches--;
      const left = (this.watchesByUser.get(who) ?? 1) - 1;
      if (left > 0) this.watchesByUser.set(who, left);
      else this.watchesByUser.delete(who);
    });
    serveWatch(this.rest.store, req, res, {
      def,
      namespace: def.namespaced ? r.namespace : '',
      label: parseLabelSelector(q.get('labelSelector')),
      field: parseFieldSelector(fieldSel, def.fields),
      fromRv,
      sendInitialEvents: q.get('sendInitialEvents') === 'true',
      allowBookmarks: q.get('allowWatchBookmarks') === 'true',
      timeoutMs: seconds * 1000,
      bookmarkIntervalMs: this.opts.bookmarkIntervalMs,
      // Plain objects are serialised once per event for all watchers; other forms per watcher.
      render:
        rep.as === 'object'
          ? undefined
          : (o) => renderOne(def, o, rep.as === 'table' ? { ...rep, now: this.rest.clock.now() } : rep),
    });
  }

  private async deleteCollection(req: IncomingMessage, res: ServerResponse, r: ResourceRequest) {
    const { def, query: q } = r;
    const opts = await this.deleteOptions(req, r);
    const label = parseLabelSelector(q.get('labelSelector'));
    const field = parseFieldSelector(q.get('fieldSelector'), def.fields);
    const store = this.rest.store;
    const deleted: KObject[] = [];
    for (const o of store.list(def.storage, def.namespaced && r.namespace ? r.namespace : undefined)) {
      if ((label && !label(o.metadata.labels)) || (field && !field(o))) continue;
      deleted.push(this.rest.delete(def, o.metadata.namespace ?? '', o.metadata.name, opts));
    }
    await store.sync();
    sendJson(res, 200, {
      kind: `${def.kind}List`,
      apiVersion: apiVersionOf(def),
      metadata: { resourceVersion: String(store.resourceVersion) },
      items: deleted,
    });
  }

  private async handleSubresource(req: IncomingMessage, res: ServerResponse, r: ResourceRequest) {
    const method = req.method ?? 'GET';
    const { def, subresource } = r;
    const name = r.name!;
    // status and the parts (resize, ephemeralcontainers): the whole object in, the whole object
    // out, one part of it written.
    const isPart = subresource !== undefined && def.parts?.[subresource] !== undefined;
    if ((subresource === 'status' && def.hasStatus) || isPart) {
      const warnings: string[] = [];
      const o: SubresourceWrite = {
        dryRun: r.query.get('dryRun') === 'All',
        fieldValidation: fieldValidation(r.query),
        warnings,
        admit: this.admitter(r, subresource, warnings),
        admitBeforeValidation: this.admitter(r, subresource, warnings, this.opts.mutatingAdmission),
        ...(isPart ? { part: subresource } : { status: true }),
      };
      let out: KObject;
      if (method === 'GET') out = this.rest.get(def, r.namespace, name);
      else if (method === 'PUT') {
        const body = asObject(
          decodeObject(await readBody(req, this.opts.maxBodyBytes), mediaType(req)),
          def.kind,
        );
        out = this.rest.update(def, r.namespace, name, body, o);
      } else if (method === 'PATCH') {
        out = this.rest.patch(def, r.namespace, name, ...(await this.patchBody(req)), o);
      } else throw methodNotAllowed(method, def.kind);
      await this.rest.store.sync();
      addWarnings(res, o.warnings!);
      return sendStored(res, 200, out);
    }
    if (def.resource === 'pods' && subresource === 'binding' && method === 'POST') {
      const body = asObject(
        decodeObject(await readBody(req, this.opts.maxBodyBytes), mediaType(req)),
        'Binding',
      );
      const status = bindPod(this.rest, r.namespace, name, body);
      await this.rest.store.sync();
      return sendJson(res, 201, status);
    }
    if (def.resource === 'pods' && subresource === 'eviction' && method === 'POST') {
      const body = asObject(
        decodeObject(await readBody(req, this.opts.maxBodyBytes), mediaType(req)),
        'Eviction',
      );
      if (body.metadata?.name && body.metadata.name !== name) {
        throw badRequest(`name in URL does not match name in Eviction object`);
      }
      this.admitAll(r, 'eviction')?.('CREATE', body, undefined);
      this.rest.delete(def, r.namespace, name, body.deleteOptions ?? {});
      await this.rest.store.sync();
      return sendJson(res, 201, {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Success',
        code: 201,
      });
    }
    if (def.resource === 'serviceaccounts' && subresource === 'token' && method === 'POST') {
      const tokens = this.opts.serviceAccountTokens;
      if (tokens === undefined) throw notFound({ group: '', resource: 'serviceaccounts/token' }, name);
      const body = asObject(
        decodeObject(await readBody(req, this.opts.maxBodyBytes), mediaType(req)),
        'TokenRequest',
      );
      this.admitAll(r, 'token')?.('CREATE', body, undefined);
      return sendJson(res, 201, tokens.request(r.namespace, name, body));
    }
    if (def.resource === 'pods' && subresource === 'log' && method === 'GET') {
      return this.kubelet.proxy(
        req,
        res,
        podKubeletRequest(this.rest.store, r.namespace, name, 'log', r.query),
      );
    }
    // Upgrades never get here (the server's 'upgrade' listener takes them).
    if (def.resource === 'pods' && STREAMING.includes(subresource!))
      throw badRequest('Upgrade request required');
    throw notFound({ group: def.group, resource: `${def.resource}/${subresource}` }, name);
  }
}
