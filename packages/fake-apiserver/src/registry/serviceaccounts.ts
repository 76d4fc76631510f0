import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { UserInfo } from '../auth/tokens.js';
import { type KObject, rfc3339 } from '../meta/object.js';
import { ApiError, FieldErrors, notFound } from '../meta/status.js';
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
const ISSUER = API_AUDIENCE;
const MIN_EXPIRATION_SECONDS = 600;
const MAX_EXPIRATION_SECONDS = 2 ** 32;

interface Claims {
  iss: string;
  sub: string;
  aud: string[];
  exp: number;
  iat: number;
  nbf: number;
  'kubernetes.io': {
    namespace: string;
    serviceaccount: { name: string; uid: string };
    pod?: { name: string; uid: string };
  };
}

const b64 = (v: object | Buffer) =>
  (Buffer.isBuffer(v) ? v : Buffer.from(JSON.stringify(v))).toString('base64url');

/**
 * serviceaccounts/token (TokenRequest): short-lived JWTs for a service account, optionally bound
 * to a pod, as the kubelet asks for projected token volumes. They are HS256-signed with a key
 * that lives as long as the server, and authenticate (TokenReview) as
 * `system:serviceaccount:<ns>:<name>` only while the service account, and the pod they are
 * bound to, still exist with the same UIDs.
 */
export class ServiceAccountTokens {
  private readonly key = randomBytes(32);

  constructor(private readonly rest: RestStorage) {}

  private sign(data: string): Buffer {
    return createHmac('sha256', this.key).update(data).digest();
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
    if (bound && bound.kind !== 'Pod') errs.notSupported('spec.boundObjectRef.kind', bound.kind, ['Pod']);
    errs.throwIfAny('TokenRequest', name, 'authentication.k8s.io');

    const kio: Claims['kubernetes.io'] = {
      namespace,
      serviceaccount: { name, uid: sa.metadata.uid },
    };
    if (bound) {
      const pod = store.get('pods', namespace, bound.name ?? '');
      if (pod === undefined) throw notFound({ group: '', resource: 'pods' }, bound.name ?? '');
      if (bound.uid && bound.uid !== pod.metadata.uid) {
        throw new ApiError(
          409,
          'Conflict',
          `the UID in the bound object reference (${bound.uid}) does not match the UID in record. The object might have been deleted and then recreated`,
        );
      }
      kio.pod = { name: pod.metadata.name, uid: pod.metadata.uid };
    }
    const now = Math.floor(clock.now() / 1000);
    const claims: Claims = {
      iss: ISSUER,
      sub: `system:serviceaccount:${namespace}:${name}`,
      aud: spec.audiences,
      exp: now + spec.expirationSeconds,
      iat: now,
      nbf: now,
      'kubernetes.io': kio,
    };
    const unsigned = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(claims)}`;
    const token = `${unsigned}.${b64(this.sign(unsigned))}`;
    return {
      kind: 'TokenRequest',
      apiVersion: 'authentication.k8s.io/v1',
      metadata: { name, namespace, creationTimestamp: rfc3339(now * 1000) },
      spec,
      status: { token, expirationTimestamp: rfc3339(claims.exp * 1000) },
    };
  }

  /** The user a token issued here stands for, while it is valid; undefined otherwise. */
  authenticate(token: string): UserInfo | undefined {
    const parts = token.split('.');
    if (parts.length !== 3) return undefined;
    const sig = Buffer.from(parts[2]!, 'base64url');
    const want = this.sign(`${parts[0]}.${parts[1]}`);
    if (sig.length !== want.length || !timingSafeEqual(sig, want)) return undefined;
    const claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as Claims;
    if (claims.exp * 1000 <= this.rest.clock.now()) return undefined;
    const { namespace, serviceaccount, pod } = claims['kubernetes.io'];
    const { store } = this.rest;
    if (store.get('serviceaccounts', namespace, serviceaccount.name)?.metadata.uid !== serviceaccount.uid)
      return undefined;
    if (pod && store.get('pods', namespace, pod.name)?.metadata.uid !== pod.uid) return undefined;
    return {
      name: claims.sub,
      uid: serviceaccount.uid,
      groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
    };
  }
}
