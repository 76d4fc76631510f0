import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { intersect, type TokenAuthentication } from '../auth/tokens.js';
import { type KObject, rfc3339 } from '../meta/object.js';
import { ApiError, badRequest, FieldErrors, notFound } from '../meta/status.js';
import { metadataFields } from '../selectors/field.js';
import { validateObjectMeta } from '../validation/meta.js';
import { serviceAccountColumns } from './printers.js';
import { ALL_VERBS, type ResourceDef } from './resource.js';
import type { RestStorage } from './rest.js';

export const serviceaccounts: ResourceDef = {
  group: '',
  version: 'v1',
  resource: 'serviceaccounts',
  singular: 'serviceaccount',
  kind: 'ServiceAccount',
  namespaced: true,
  shortNames: ['sa'],
  typeName: 'io.k8s.api.core.v1.ServiceAccount',
  storage: 'serviceaccounts',
  verbs: ALL_VERBS,
  subresources: ['token'],
  hasStatus: false,
  fields: metadataFields,
  columns: serviceAccountColumns,
  validate(sa, errs) {
    validateObjectMeta(sa, errs, true);
  },
};

/** The API server's own audience, the default of a TokenRequest that names none. */
export const API_AUDIENCE = 'https://kubernetes.default.svc.cluster.local';
/** kube-apiserver's --service-account-issuer; its --api-audiences default to it. */
export const ISSUER = API_AUDIENCE;
const MIN_EXPIRATION_SECONDS = 600;
const MAX_EXPIRATION_SECONDS = 2 ** 32;
/** Clock skew a token's times and its bound objects' deletion get (the JWT library's default leeway). */
const LEEWAY_SECONDS = 60;
const BINDABLE = ['Pod', 'Secret', 'Node'];

interface Ref {
  name: string;
  uid: string;
}

interface Claims {
  iss: string;
  sub: string;
  aud: string[];
  exp: number;
  iat: number;
  nbf: number;
  jti: string;
  'kubernetes.io': {
    namespace: string;
    serviceaccount: Ref;
    pod?: Ref;
    secret?: Ref;
    node?: Ref;
  };
}

const b64 = (v: object | Buffer) =>
  (Buffer.isBuffer(v) ? v : Buffer.from(JSON.stringify(v))).toString('base64url');
const HEADER = b64({ alg: 'HS256', typ: 'JWT' });
const isRef = (r: unknown): r is Ref =>
  typeof r === 'object' &&
  r !== null &&
  typeof (r as Ref).name === 'string' &&
  typeof (r as Ref).uid === 'string';

/**
 * serviceaccounts/token (TokenRequest): short-lived JWTs for a service account, optionally bound
 * to a pod, a secret or a node, as the kubelet asks for projected token volumes. They are
 * HS256-signed with a key that lives as long as the server, and authenticate, on API requests and
 * in TokenReview, as `system:serviceaccount:<ns>:<name>` only for the audiences they were issued
 * for, before they expire, and while the service account and what they are bound to still exist
 * with the same UIDs (upstream's claims validator).
 */
export class ServiceAccountTokens {
  private readonly key = randomBytes(32);

  constructor(private readonly rest: RestStorage) {}

  private sign(data: string): Buffer {
    return createHmac('sha256', this.key).update(data).digest();
  }

  /** The object a token is bound to, as TokenRequest validates the reference. */
  private boundObject(namespace: string, sa: string, bound: KObject): { kind: string; obj: KObject } {
    const { store } = this.rest;
    const kind: string = bound.kind;
    const name: string = bound.name ?? '';
    const obj =
      kind === 'Pod'
        ? store.get('pods', namespace, name)
        : kind === 'Secret'
          ? store.get('secrets', namespace, name)
          : store.get('nodes', '', name);
    if (obj === undefined) throw notFound({ group: '', resource: `${kind.toLowerCase()}s` }, name);
    if (kind === 'Pod' && (obj.spec?.serviceAccountName ?? 'default') !== sa)
      throw badRequest(
        `cannot bind token for serviceaccount "${sa}" to pod running with different serviceaccount name.`,
      );
    if (bound.uid && bound.uid !== obj.metadata.uid) {
      throw new ApiError(
        409,
        'Conflict',
        `Operation cannot be fulfilled on ${kind} "${name}": the UID in the bound object reference (${bound.uid}) does not match the UID in record. The object might have been deleted and then recreated`,
      );
    }
    return { kind, obj };
  }

  /** POST .../serviceaccounts/<name>/token: the TokenRequest with status.token filled in. */
  request(namespace: string, name: string, body: KObject): KObject {
    const { store, clock } = this.rest;
    const sa = store.get('serviceaccounts', namespace, name);
    if (sa === undefined) throw notFound({ group: '', resource: 'serviceaccounts' }, name);
    const spec = { ...(body.spec ?? {}) };
    spec.expirationSeconds ??= 3600;
    if (!spec.audiences?.length) spec.audiences = [API_AUDIENCE];
    const errs = new FieldErrors();
    if (spec.expirationSeconds < MIN_EXPIRATION_SECONDS)
      errs.invalid(
        'spec.expirationSeconds',
        spec.expirationSeconds,
        'may not specify a duration less than 10 minutes',
      );
    if (spec.expirationSeconds > MAX_EXPIRATION_SECONDS)
      errs.invalid(
        'spec.expirationSeconds',
        spec.expirationSeconds,
        'may not specify a duration larger than 2^32 seconds',
      );
    const bound = spec.boundObjectRef;
    if (bound && !BINDABLE.includes(bound.kind))
      errs.notSupported('spec.boundObjectRef.kind', bound.kind, BINDABLE);
    errs.throwIfAny('TokenRequest', name, 'authentication.k8s.io');

    const kio: Claims['kubernetes.io'] = {
      namespace,
      serviceaccount: { name, uid: sa.metadata.uid },
    };
    if (bound) {
      const { kind, obj } = this.boundObject(namespace, name, bound);
      const ref = { name: obj.metadata.name, uid: obj.metadata.uid };
      if (kind === 'Pod') {
        kio.pod = ref;
        // The node the pod runs on rides along (upstream's pod node info), not checked later.
        const node = obj.spec?.nodeName ? store.get('nodes', '', obj.spec.nodeName) : undefined;
        if (node !== undefined) kio.node = { name: node.metadata.name, uid: node.metadata.uid };
      } else if (kind === 'Secret') kio.secret = ref;
      else kio.node = ref;
    }
    const now = Math.floor(clock.now() / 1000);
    const claims: Claims = {
      iss: ISSUER,
      sub: `system:serviceaccount:${namespace}:${name}`,
      aud: spec.audiences,
      exp: now + spec.expirationSeconds,
      iat: now,
      nbf: now,
      jti: randomUUID(),
      'kubernetes.io': kio,
    };
    const unsigned = `${HEADER}.${b64(claims)}`;
    const token = `${unsigned}.${b64(this.sign(unsigned))}`;
    return {
      kind: 'TokenRequest',
      apiVersion: 'authentication.k8s.io/v1',
      metadata: { name, namespace, creationTimestamp: rfc3339(now * 1000) },
      spec,
      status: { token, expirationTimestamp: rfc3339(claims.exp * 1000) },
    };
  }

  /** The claims of a token this server signed, or undefined. */
  private verified(token: string): Claims | undefined {
    const parts = token.split('.');
    if (parts.length !== 3 || parts[0] !== HEADER) return undefined;
    const sig = Buffer.from(parts[2]!, 'base64url');
    const want = this.sign(`${parts[0]}.${parts[1]}`);
    if (sig.length !== want.length || !timingSafeEqual(sig, want)) return undefined;
    try {
      return JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as Claims;
    } catch {
      return undefined;
    }
  }

  /**
   * The service account a token stands for, for those of `audiences` it was issued for; undefined
   * when it was not issued here, is for none of them, is outside its lifetime, or what it names
   * or is bound to is gone, was recreated, or was deleted more than a minute ago.
   */
  authenticate(token: string, audiences: string[]): TokenAuthentication | undefined {
    const claims = this.verified(token);
    if (claims === undefined || claims.iss !== ISSUER) return undefined;
    const valid = intersect(audiences, Array.isArray(claims.aud) ? claims.aud : [claims.aud]);
    if (valid.length === 0) return undefined;
    const now = this.rest.clock.now() / 1000;
    if (!(claims.exp + LEEWAY_SECONDS > now) || !(claims.nbf - LEEWAY_SECONDS <= now)) return undefined;
    const kio = claims['kubernetes.io'];
    if (typeof kio?.namespace !== 'string' || !isRef(kio.serviceaccount)) return undefined;
    const { store } = this.rest;
    const deletedBefore = (now - LEEWAY_SECONDS) * 1000;
    const live = (obj: KObject | undefined, ref: Ref) =>
      obj !== undefined &&
      obj.metadata.uid === ref.uid &&
      !(obj.metadata.deletionTimestamp && Date.parse(obj.metadata.deletionTimestamp) < deletedBefore);
    const { namespace, serviceaccount, pod, secret, node } = kio;
    if (!live(store.get('serviceaccounts', namespace, serviceaccount.name), serviceaccount)) return undefined;
    if (pod && !live(store.get('pods', namespace, pod.name), pod)) return undefined;
    if (secret && !live(store.get('secrets', namespace, secret.name), secret)) return undefined;
    // A pod-bound token carries its node for information; a node-bound one depends on it.
    if (node && !pod && !live(store.get('nodes', '', node.name), node)) return undefined;
    const extra: Record<string, string[]> = {};
    if (pod) {
      extra['authentication.kubernetes.io/pod-name'] = [pod.name];
      extra['authentication.kubernetes.io/pod-uid'] = [pod.uid];
    }
    if (node) {
      extra['authentication.kubernetes.io/node-name'] = [node.name];
      extra['authentication.kubernetes.io/node-uid'] = [node.uid];
    }
    if (typeof claims.jti === 'string') {
      extra['authentication.kubernetes.io/credential-id'] = [`JTI=${claims.jti}`];
    }
    return {
      user: {
        name: `system:serviceaccount:${namespace}:${serviceaccount.name}`,
        uid: serviceaccount.uid,
        groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
        extra,
      },
      audiences: valid,
    };
  }
}
