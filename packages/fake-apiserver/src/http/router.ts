import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { verbForMethod } from '@kh/apimachinery';
import { type Attributes, type Authorizer, forbiddenFor } from '../auth/authorizer.js';
import type { Authenticator } from '../auth/tokens.js';
import {
  aggregatedDiscovery,
  aggregatedVersion,
  apiGroup,
  apiGroupList,
  apiResourceList,
  apiVersions,
  versionInfo,
} from '../discovery/discovery.js';
import { openApiV2, openApiV3, openApiV3Root } from '../discovery/openapi.js';
import { ApiError, badRequest, resourceNotFound, unauthorized } from '../meta/status.js';
import {
  type KubeletClient,
  type KubeletRequest,
  nodeKubeletRequest,
  podKubeletRequest,
  STREAMING,
  writeSocketStatus,
} from '../proxy/kubelet.js';
import { findResource } from '../registry/index.js';
import { exactMatch } from '../selectors/field.js';
import type { Store } from '../storage/store.js';
import { type ApiHandler, type ResourceRequest, verbOf } from './api.js';
import { sendError, sendJson } from './body.js';

const HEALTH = new Set(['healthz', 'readyz', 'livez']);

function sendText(res: ServerResponse, code: number, text: string, type = 'text/plain; charset=utf-8') {
  res.writeHead(code, {
    'Content-Type': type,
    'Content-Length': Buffer.byteLength(text),
    'X-Content-Type-Options': 'nosniff',
  });
  res.end(text);
}

/** Resolves a resource URL below /api/v1 or /apis/<group>/<version>. */
function parseResourcePath(
  group: string,
  version: string,
  rest: string[],
  query: URLSearchParams,
): ResourceRequest | undefined {
  let watchPath = false;
  if (rest[0] === 'watch') {
    watchPath = true;
    rest = rest.slice(1);
  }
  let namespace = '';
  if (rest[0] === 'namespaces' && rest.length >= 3 && findResource(group, version, rest[2]!)) {
    namespace = rest[1]!;
    rest = rest.slice(2);
  }
  const def = findResource(group, version, rest[0] ?? '');
  if (def === undefined || rest.length > 3) return undefined;
  if (namespace !== '' && !def.namespaced) return undefined;
  const name = rest[1];
  if (def.namespaced && name !== undefined && namespace === '') return undefined;
  const sub = rest[2];
  const streaming = def.resource === 'pods' && sub !== undefined && STREAMING.includes(sub);
  if (sub !== undefined && sub !== 'status' && !def.subresources.includes(sub) && !streaming)
    return undefined;
  if (sub === 'status' && !def.hasStatus) return undefined;
  return { def, namespace, name, subresource: sub, watchPath, query };
}

/** The resource a path below /api/v1 or /apis/<group>/<version> names, if any. */
function resourceRequest(segs: string[], query: URLSearchParams): ResourceRequest | undefined {
  const legacy = segs[0] === 'api';
  if (!legacy && segs[0] !== 'apis') return undefined;
  const rest = segs.slice(legacy ? 2 : 3);
  const version = legacy ? segs[1] : segs[2];
  if (version === undefined || rest.length === 0) return undefined;
  return parseResourcePath(legacy ? '' : segs[1]!, version, rest, query);
}

export interface RouterOptions {
  auth: Authenticator;
  api: ApiHandler;
  kubelet: KubeletClient;
  store: Store;
  authz: Authorizer;
  serverAddress: () => string;
}

/**
 * A request the kubelet answers: pods/{exec,attach,portforward} (`upgrade`) or
 * nodes/<name>/proxy/<path>; undefined for everything else. `resolve` validates it (after
 * authorization, as kube-apiserver checks existence only for callers that may ask).
 */
function kubeletRequest(
  store: Store,
  segs: string[],
  url: URL,
): { attrs: ResourceAttrs; upgrade: boolean; resolve: () => KubeletRequest } | undefined {
  if (segs[0] !== 'api' || segs[1] !== 'v1') return undefined;
  if (segs[2] === 'nodes' && segs[4] === 'proxy' && segs.length >= 5) {
    return {
      attrs: { namespace: '', apiGroup: '', resource: 'nodes', subresource: 'proxy', name: segs[3]! },
      upgrade: false,
      resolve: () => nodeKubeletRequest(store, segs[3]!, segs.slice(5), url.search),
    };
  }
  const sub = segs[6];
  if (segs[2] === 'namespaces' && segs[4] === 'pods' && segs.length === 7 && STREAMING.includes(sub!)) {
    return {
      attrs: { namespace: segs[3]!, apiGroup: '', resource: 'pods', subresource: sub!, name: segs[5]! },
      upgrade: true,
      resolve: () => podKubeletRequest(store, segs[3]!, segs[5]!, sub!, url.searchParams),
    };
  }
  return undefined;
}

/**
 * pods/log asked as a WebSocket (what e2e's websocket log case and client-go's wsstream readers
 * do): the log streamed over it, authorized as the GET it is, as a plain log request would be.
 */
function logUpgradeRequest(store: Store, segs: string[], url: URL) {
  if (segs[0] !== 'api' || segs[1] !== 'v1' || segs[2] !== 'namespaces' || segs[4] !== 'pods')
    return undefined;
  if (segs.length !== 7 || segs[6] !== 'log') return undefined;
  return {
    attrs: { namespace: segs[3]!, apiGroup: '', resource: 'pods', subresource: 'log', name: segs[5]! },
    upgrade: false,
    resolve: () => podKubeletRequest(store, segs[3]!, segs[5]!, 'log', url.searchParams),
  };
}

type ResourceAttrs = Pick<
  Extract<Attributes, { resourceRequest: true }>,
  'namespace' | 'apiGroup' | 'resource' | 'subresource' | 'name'
>;

function authorize(authz: Authorizer, a: Attributes): void {
  const d = authz.authorize(a);
  if (!d.allowed) throw forbiddenFor(a, d.reason);
}

/**
 * A request the kubelet answers, authorized by its method's verb and, for exec, attach and
 * port-forward, also as `create` whatever the method: a WebSocket upgrade is a GET (`get`), yet
 * it runs a command as surely as SPDY's POST does (kube-apiserver 1.35's compound check,
 * AuthorizePodWebsocketUpgradeCreatePermission).
 */
function authorizeKubeletRequest(
  authz: Authorizer,
  user: Attributes['user'],
  method: string | undefined,
  k: { attrs: ResourceAttrs; upgrade: boolean },
): void {
  const verb = verbForMethod(method);
  authorize(authz, { user, verb, resourceRequest: true, ...k.attrs });
  if (k.upgrade && verb !== 'create')
    authorize(authz, { user, verb: 'create', resourceRequest: true, ...k.attrs });
}

/**
 * The request target as a URL, without the dot-segment removal a URL parser does: `pods/%2e%2e`
 * must not become the namespace it sits in (a DELETE of it would delete the namespace). A '.' or
 * '..' segment, however encoded, is refused, and so is a malformed escape.
 */
function requestUrl(target = '/'): URL {
  if (!target.startsWith('/')) throw badRequest(`the request target ${target} is not a path`);
  const path = target.split('?')[0]!;
  for (const seg of path.split('/')) {
    let name: string;
    try {
      name = decodeURIComponent(seg);
    } catch {
      throw badRequest(`the path ${path} has a malformed escape`);
    }
    if (name === '.' || name === '..')
      throw badRequest(`the path ${path} may not contain '.' or '..' segments`);
  }
  return new URL(`http://localhost${target}`);
}

const pathSegments = (url: URL) =>
  url.pathname
    .split('/')
    .filter((s) => s !== '')
    .map((s) => decodeURIComponent(s));

/** The server's 'upgrade' listener: exec, attach, port-forward and nodes/proxy are proxied, pod logs streamed over WebSocket; the rest refused. */
export function createUpgradeRouter(opts: RouterOptions) {
  return (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', () => socket.destroy());
    try {
      const auth = opts.auth.authenticate(req);
      if ('error' in auth) throw unauthorized();
      const url = requestUrl(req.url);
      const segs = pathSegments(url);
      const k = kubeletRequest(opts.store, segs, url) ?? logUpgradeRequest(opts.store, segs, url);
      if (k === undefined) throw badRequest(`${url.pathname} cannot be upgraded`);
      authorizeKubeletRequest(opts.authz, auth.user, req.method, k);
      opts.kubelet.proxyUpgrade(req, socket, head, k.resolve());
    } catch (err) {
      writeSocketStatus(
        socket,
        err instanceof ApiError ? err : new ApiError(500, 'InternalError', String((err as Error)?.message)),
      );
    }
  };
}

export function createRouter(opts: RouterOptions) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    try {
      const url = requestUrl(req.url);
      const segs = url.pathname.split('/').filter((s) => s !== '');
      const head = segs[0] ?? '';
      // Probes stay reachable without credentials, like the apiserver's health endpoints for kubelets and load balancers.
      if (HEALTH.has(head)) return sendText(res, 200, 'ok');
      const auth = opts.auth.authenticate(req);
      if ('error' in auth) throw unauthorized();
      const method = req.method ?? 'GET';
      const k = kubeletRequest(opts.store, pathSegments(url), url);
      if (k !== undefined) {
        authorizeKubeletRequest(opts.authz, auth.user, method, k);
        if (k.upgrade) throw badRequest('Upgrade request required');
        return opts.kubelet.proxy(req, res, k.resolve());
      }
      const r = resourceRequest(segs, url.searchParams);
      if (r !== undefined) {
        const verb = verbOf(method, r);
        const fieldSelector = r.query.get('fieldSelector') ?? undefined;
        // A list or watch of one object by metadata.name= is authorized as a request for it.
        const listed =
          verb === 'list' || verb === 'watch' ? exactMatch(fieldSelector, 'metadata.name') : undefined;
        authorize(opts.authz, {
          user: auth.user,
          verb,
          resourceRequest: true,
          namespace: r.namespace,
          apiGroup: r.def.group,
          resource: r.def.resource,
          subresource: r.subresource ?? '',
          name: r.name ?? listed ?? '',
          fieldSelector,
        });
        r.user = auth.user;
        return await opts.api.handle(req, res, r);
      }
      authorize(opts.authz, {
        user: auth.user,
        verb: method.toLowerCase(),
        resourceRequest: false,
        path: url.pathname,
      });
      // Discovery, version and OpenAPI documents are only read.
      if (method !== 'GET' && method !== 'HEAD') {
        throw new ApiError(
          405,
          'MethodNotAllowed',
          'the server does not allow this method on the requested resource',
          {},
        );
      }
      const accept = req.headers.accept;
      if (head === 'version' && segs.length === 1) return sendJson(res, 200, versionInfo());
      if (head === 'openapi') {
        if (segs[1] === 'v2' && segs.length === 2) {
          // kubectl <= 1.29 only decodes the protobuf form; everyone else gets JSON.
          if (accept?.includes('application/com.github.proto-openapi.spec.v2')) {
            const body = openApiV2().proto;
            res.writeHead(200, {
              'Content-Type': 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf',
              'Content-Length': body.length,
            });
            res.end(body);
            return;
          }
          return sendText(res, 200, openApiV2().json, 'application/json');
        }
        if (segs[1] === 'v3' && segs.length === 2) return sendJson(res, 200, openApiV3Root());
        if (segs[1] === 'v3') {
          const doc = openApiV3(segs.slice(2).join('/'));
          if (doc !== undefined) return sendText(res, 200, doc.body, 'application/json');
        }
        throw resourceNotFound();
      }
      if (head === 'api' || head === 'apis') {
        const legacy = head === 'api';
        if (segs.length === 1) {
          const agg = aggregatedVersion(accept);
          if (agg !== undefined) {
            res.setHeader('Vary', 'Accept');
            return sendJson(
              res,
              200,
              aggregatedDiscovery(legacy, `apidiscovery.k8s.io/${agg}`),
              `application/json;g=apidiscovery.k8s.io;v=${agg};as=APIGroupDiscoveryList`,
            );
          }
          return sendJson(res, 200, legacy ? apiVersions(opts.serverAddress()) : apiGroupList());
        }
        const group = legacy ? '' : segs[1]!;
        const version = legacy ? segs[1]! : segs[2];
        if (!legacy && segs.length === 2) {
          const g = apiGroup(group);
          if (g === undefined) throw resourceNotFound();
          return sendJson(res, 200, g);
        }
        if (version === undefined) throw resourceNotFound();
        const rest = segs.slice(legacy ? 2 : 3);
        if (rest.length === 0) {
          const list = apiResourceList(group, version);
          if (list === undefined) throw resourceNotFound();
          return sendJson(res, 200, list);
        }
        // Resource paths were served above; this one names no resource.
        if (rest.length > 0) throw resourceNotFound();
      }
      throw resourceNotFound();
    } catch (err) {
      sendError(res, err);
    }
  };
}
