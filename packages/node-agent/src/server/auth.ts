// Authentication and authorization of kubelet API requests, as the kubelet does them: a
// client certificate signed by the client CA names the user (CN) and groups (O), a bearer
// token is checked by a TokenReview, the request is mapped to a nodes/<subresource> attribute
// and checked by a SubjectAccessReview. Anonymous requests are refused unless enabled.
import { createHmac, randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { PeerCertificate } from 'node:tls';
import { verbForMethod } from '@kh/apimachinery';
import { AuthenticationV1Api, AuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { toApiError } from '../api/node_api.js';

export interface UserInfo {
  username: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

export const ANONYMOUS: UserInfo = { username: 'system:anonymous', groups: ['system:unauthenticated'] };

export interface Authenticator {
  /** The user behind a bearer token, or undefined when the token is not valid. */
  authenticateToken(token: string): Promise<UserInfo | undefined>;
}

export interface RequestAttributes {
  user: UserInfo;
  verb: string;
  resource: 'nodes';
  subresource: string;
  name: string;
  path: string;
}

export interface Authorizer {
  /** Undefined when allowed, else the reason for refusing. */
  authorize(attrs: RequestAttributes): Promise<{ allowed: boolean; reason?: string }>;
}

export const alwaysAllow: Authorizer = { authorize: async () => ({ allowed: true }) };

/** A fixed token table; for harnesses whose API server has no TokenReview. */
export class StaticTokenAuthenticator implements Authenticator {
  constructor(private readonly tokens: Record<string, UserInfo>) {}

  async authenticateToken(token: string) {
    return this.tokens[token];
  }
}

/** Most verdicts one cache keeps (a TokenReview or SubjectAccessReview answer each). */
export const AUTH_CACHE_MAX_ENTRIES = 10_000;
/**
 * Verdicts kept for a TTL, as the kubelet's webhook authenticator and authorizer cache them:
 * bounded (past `maxEntries` the oldest go; expired entries are dropped as the cache turns over),
 * so that a client sending endless random credentials costs a fixed amount of memory.
 */
export class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; expires: number }>();

  constructor(
    private readonly now: () => number,
    private readonly maxEntries = AUTH_CACHE_MAX_ENTRIES,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  get(key: string): V | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.expires <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  set(key: string, value: V, ttlMs: number): void {
    if (ttlMs <= 0) return;
    const now = this.now();
    this.entries.delete(key);
    // The oldest entry is first: drop it once expired, so idle entries do not wait for a read.
    for (const [k, e] of this.entries) {
      if (e.expires > now) break;
      this.entries.delete(k);
    }
    if (this.entries.size >= this.maxEntries) {
      for (const [k, e] of this.entries) if (e.expires <= now) this.entries.delete(k);
      while (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    }
    this.entries.set(key, { value, expires: now + ttlMs });
  }
}

export interface TokenCacheOptions {
  maxEntries?: number;
}

export class TokenReviewAuthenticator implements Authenticator {
  private readonly api: AuthenticationV1Api;
  private readonly cache: TtlCache<UserInfo | null>;
  /** Lookups under way, so that a burst with one token costs one TokenReview. */
  private readonly inflight = new Map<string, Promise<UserInfo | undefined>>();
  /** Tokens are keyed by an HMAC under a key of this process: the cache holds no credential. */
  private readonly key = randomBytes(32);

  constructor(
    kc: KubeConfig,
    private readonly ttlMs: number,
    now: () => number = Date.now,
    opts: TokenCacheOptions = {},
  ) {
    this.api = kc.makeApiClient(AuthenticationV1Api);
    this.cache = new TtlCache(now, opts.maxEntries);
  }

  /** Verdicts held (for tests and metrics). */
  get cached(): number {
    return this.cache.size;
  }

  async authenticateToken(token: string): Promise<UserInfo | undefined> {
    const key = createHmac('sha256', this.key).update(token).digest('base64');
    const hit = this.cache.get(key);
    if (hit !== undefined) return hit ?? undefined;
    let pending = this.inflight.get(key);
    if (pending === undefined) {
      pending = this.review(token, key).finally(() => this.inflight.delete(key));
      this.inflight.set(key, pending);
    }
    return pending;
  }

  private async review(token: string, key: string): Promise<UserInfo | undefined> {
    let review: Awaited<ReturnType<AuthenticationV1Api['createTokenReview']>>;
    try {
      review = await this.api.createTokenReview({
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
      });
    } catch (e) {
      // A failed review is not an answer: nothing is cached.
      throw toApiError(e);
    }
    const u = review.status?.authenticated ? review.status.user : undefined;
    const user = u?.username
      ? { username: u.username, uid: u.uid, groups: u.groups ?? [], extra: u.extra }
      : undefined;
    // One TTL for both answers, as the kubelet's delegating authenticator builds its token cache
    // (authentication.webhook.cacheTTL); the bound, not a shorter TTL, keeps random tokens cheap.
    this.cache.set(key, user ?? null, this.ttlMs);
    return user;
  }
}

export class SubjectAccessReviewAuthorizer implements Authorizer {
  private readonly api: AuthorizationV1Api;
  private readonly cache: TtlCache<{ allowed: boolean; reason?: string }>;

  constructor(
    kc: KubeConfig,
    private readonly ttl: { authorizedMs: number; unauthorizedMs: number },
    now: () => number = Date.now,
  ) {
    this.api = kc.makeApiClient(AuthorizationV1Api);
    this.cache = new TtlCache(now);
  }

  async authorize(a: RequestAttributes) {
    const key = JSON.stringify([a.user.username, a.user.groups, a.verb, a.subresource, a.name]);
    const hit = this.cache.get(key);
    if (hit) return hit;
    let review: Awaited<ReturnType<AuthorizationV1Api['createSubjectAccessReview']>>;
    try {
      review = await this.api.createSubjectAccessReview({
        body: {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SubjectAccessReview',
          spec: {
            user: a.user.username,
            uid: a.user.uid,
            groups: a.user.groups,
            extra: a.user.extra,
            resourceAttributes: {
              verb: a.verb,
              resource: a.resource,
              subresource: a.subresource,
              name: a.name,
              version: 'v1',
            },
          },
        },
      });
    } catch (e) {
      throw toApiError(e);
    }
    const verdict = { allowed: review.status?.allowed === true, reason: review.status?.reason };
    this.cache.set(key, verdict, verdict.allowed ? this.ttl.authorizedMs : this.ttl.unauthorizedMs);
    return verdict;
  }
}

/** Maps a kubelet API path to the nodes subresource the kubelet authorizes it as. */
export function subresourceFor(path: string): string {
  const under = (p: string) => path === p || path.startsWith(`${p}/`);
  if (under('/stats')) return 'stats';
  if (under('/metrics')) return 'metrics';
  if (under('/logs')) return 'log';
  if (under('/configz')) return 'configz';
  if (under('/healthz')) return 'healthz';
  if (under('/pods')) return 'pods';
  if (under('/checkpoint')) return 'checkpoint';
  return 'proxy';
}

export function requestAttributes(req: IncomingMessage, user: UserInfo, nodeName: string): RequestAttributes {
  const path = new URL(req.url ?? '/', 'http://x').pathname;
  return {
    user,
    verb: verbForMethod(req.method),
    resource: 'nodes',
    subresource: subresourceFor(path),
    name: nodeName,
    path,
  };
}

/**
 * The user of a verified client certificate, as the x509 authenticator maps it: CN is the name,
 * each O a group; every authenticated user is also in system:authenticated.
 */
export function userFromClientCertificate(cert: PeerCertificate): UserInfo | undefined {
  const cn = cert.subject?.CN;
  const username = Array.isArray(cn) ? cn[0] : cn;
  if (!username) return undefined;
  const o = cert.subject.O;
  const orgs = o === undefined ? [] : Array.isArray(o) ? o : [o];
  return { username, groups: [...orgs, 'system:authenticated'] };
}

export function bearerToken(req: IncomingMessage): string | undefined {
  const h = req.headers.authorization;
  const m = h ? /^Bearer\s+(\S+)\s*$/i.exec(h) : null;
  return m?.[1];
}
