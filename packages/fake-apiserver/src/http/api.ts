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
import type { ObjectKey } from '../storage/store.js';
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

/** The continue token, as upstream encodes it (storage.EncodeContinue): JSON in unpadded base64url. */
interface ContinueToken {
  v: 'meta.k8s.io/v1';
  /** The resourceVersion of the first page; -1: the latest (after an expired token). */
  rv: number;
  /** The next key relative to the listed prefix: 'name' or 'namespace/name', then '\0' past the last one read. */
  start: string;
}

const TOKEN_VERSION = 'meta.k8s.io/v1';

const encodeContinue = (start: string, rv: number) =>
  Buffer.from(JSON.stringify({ v: TOKEN_VERSION, rv, start } satisfies ContinueToken)).toString('base64url');

/** The start key of the page after `key`, relative to the listing's prefix (its namespace, if any). */
const nextStart = (key: ObjectKey, namespaced: boolean) => `${namespaced ? key[1] : key.join('/')}\0`;

/** The store key a start key names (a cluster-scoped object's namespace is ''). */
function startKey(start: string, prefixNamespace: string | undefined, clusterScoped: boolean): ObjectKey {
  if (prefixNamespace !== undefined || clusterScoped) return [prefixNamespace ?? '', start];
  const slash = start.indexOf('/');
  return slash < 0 ? [start, ''] : [start.slice(0, slash), start.slice(slash + 1)];
}

/** Upstream's checks (storage.DecodeContinue), with its messages, each a 400 "invalid continue token". */
function decodeContinue(s: string): ContinueToken {
  const invalid = (why: string) => badRequest(`invalid continue token: continue key is not valid${why}`);
  let t: Partial<ContinueToken>;
  try {
    if (!/^[A-Za-z0-9_-]*$/.test(s)) throw new Error('illegal base64 data');
    t = JSON.parse(Buffer.from(s, 'base64url').toString('utf8'));
  } catch (e) {
    throw invalid(`: ${(e as Error).message}`);
  }
  if (t === null || typeof t !== 'object') throw invalid(': not a JSON object');
  if (t.v !== TOKEN_VERSION) throw invalid(`: server does not recognize this encoded version ${t.v ?? ''}`);
  if (typeof t.rv !== 'number' || !Number.isSafeInteger(t.rv) || t.rv === 0)
    throw invalid(': incorrect encoded start resourceVersion (version meta.k8s.io/v1)');
  if (typeof t.start !== 'string' || t.start === '')
    throw invalid(': encoded start key empty (version meta.k8s.io/v1)');
  // A start key may not climb out of the listed prefix: it must be a clean path (path.Clean's).
  const rel = t.start.startsWith('/') ? t.start.slice(1) : t.start;
  if (rel !== '' && rel.split('/').some((p) => p === '' || p === '.' || p === '..'))
    throw invalid(`: ${t.start}`);
  return { ...(t as ContinueToken), start: rel };
}

/** Upstream's Status message for a continue token whose resourceVersion was compacted. */
export const CONTINUE_EXPIRED =
  'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.';

const tooLargeResourceVersion = (rv: number, current: number) =>
  new ApiError(504, 'Timeout', `Too large resource version: ${rv}, current: ${current}`, {
    causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
    retryAfterSeconds: 1,
  });

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
    const cont = q.get('continue');
    const token = cont ? decodeContinue(cont) : undefined;
    const hasRv = rvParam !== null && rvParam !== '' && rvParam !== '0';
    // The token carries the resourceVersion of its first page.
    if (token && hasRv) throw badRequest('specifying resource version is not allowed when using continue');
    if (hasRv) {
      const rv = parseResourceVersion(rvParam);
      if (rv > current) throw tooLargeResourceVersion(rv, current);
      // Only the present is kept: an exact read of the past cannot be served.
      if (match === 'Exact' && rv !== current) throw expired(`too old resource version: ${rv} (${current})`);
    }
    if (token && token.rv > current) throw tooLargeResourceVersion(token.rv, current);
    const label = parseLabelSelector(q.get('labelSelector'));
    const field = parseFieldSelector(q.get('fieldSelector'), def.fields);
    const limit = intParam(q, 'limit');
    const namespace = def.namespaced && r.namespace ? r.namespace : undefined;
    const page = store.page(def.storage, {
      namespace,
      from: token && startKey(token.start, namespace, !def.namespaced),
      rv: token && token.rv > 0 ? token.rv : undefined,
      limit: limit !== undefined && limit > 0 ? limit : Number.POSITIVE_INFINITY,
      match: label || field ? (o) => (!label || label(o.metadata.labels)) && (!field || field(o)) : undefined,
    });
    if (page === undefined) {
      // The watch cache no longer reaches the token's resourceVersion (etcd's compaction): the
      // client may go on from the same key at the latest one, knowing the list is inconsistent.
      throw expired(CONTINUE_EXPIRED, { continue: encodeContinue(token!.start, -1) });
    }
    const { items } = page;
    const listMeta: KObject = { resourceVersion: String(page.rv) };
    if (page.next) {
      listMeta.continue = encodeContinue(
        nextStart(page.next, namespace !== undefined || !def.namespaced),
        page.rv,
      );
      if (page.remaining !== undefined) listMeta.remainingItemCount = page.remaining;
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
