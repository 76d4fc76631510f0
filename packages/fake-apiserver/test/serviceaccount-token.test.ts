// serviceaccounts/token (TokenRequest): tokens bound to a pod that TokenReview accepts while the
// service account and the pod exist, and the validation of the request.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from './helpers.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
  await h.api.post('/api/v1/namespaces/default/serviceaccounts', { metadata: { name: 'app' } });
  await h.api.post('/api/v1/namespaces/default/pods', {
    metadata: { name: 'web' },
    spec: { serviceAccountName: 'app', containers: [{ name: 'c', image: 'busybox' }] },
  });
});
afterAll(() => h.stop());

const requestToken = (sa: string, spec: object) =>
  h.api.post(`/api/v1/namespaces/default/serviceaccounts/${sa}/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec,
  });

const review = async (token: string, audiences?: string[]) =>
  (
    await h.api.post('/apis/authentication.k8s.io/v1/tokenreviews', {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenReview',
      spec: { token, audiences },
    })
  ).body.status;

describe('TokenRequest', () => {
  it('issues a pod-bound token that TokenReview accepts until the pod is gone', async () => {
    const pod = (await h.api.get('/api/v1/namespaces/default/pods/web')).body;
    const sa = (await h.api.get('/api/v1/namespaces/default/serviceaccounts/app')).body;
    const r = await requestToken('app', {
      audiences: ['vault'],
      expirationSeconds: 1200,
      boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web', uid: pod.metadata.uid },
    });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({
      kind: 'TokenRequest',
      metadata: { name: 'app', namespace: 'default' },
      spec: { audiences: ['vault'], expirationSeconds: 1200 },
    });
    const { token, expirationTimestamp } = r.body.status;
    const ttl = Date.parse(expirationTimestamp) - Date.now();
    expect(ttl).toBeGreaterThan(1190_000);
    expect(ttl).toBeLessThanOrEqual(1200_000);
    const claims = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8'));
    expect(claims).toMatchObject({
      sub: 'system:serviceaccount:default:app',
      aud: ['vault'],
      'kubernetes.io': { namespace: 'default', pod: { name: 'web', uid: pod.metadata.uid } },
    });
    expect(await review(token, ['vault'])).toEqual({
      authenticated: true,
      user: {
        username: 'system:serviceaccount:default:app',
        uid: sa.metadata.uid,
        groups: ['system:serviceaccounts', 'system:serviceaccounts:default', 'system:authenticated'],
        extra: {
          'authentication.kubernetes.io/pod-name': ['web'],
          'authentication.kubernetes.io/pod-uid': [pod.metadata.uid],
          'authentication.kubernetes.io/credential-id': [`JTI=${claims.jti}`],
        },
      },
      audiences: ['vault'],
    });
    // Not for the API server (the audience TokenReview checks when none is asked for).
    expect((await review(token)).authenticated).toBe(false);
    // A tampered token is refused.
    expect((await review(`${token.slice(0, -2)}xx`, ['vault'])).authenticated).toBe(false);

    expect((await h.api.delete('/api/v1/namespaces/default/pods/web?gracePeriodSeconds=0')).status).toBe(200);
    expect((await review(token, ['vault'])).authenticated).toBe(false);
  });

  it('defaults to one hour for the API server audience, and is discoverable', async () => {
    const r = await requestToken('default', {});
    expect(r.status).toBe(201);
    expect(r.body.spec).toEqual({
      audiences: ['https://kubernetes.default.svc.cluster.local'],
      expirationSeconds: 3600,
    });
    expect((await review(r.body.status.token)).user.username).toBe('system:serviceaccount:default:default');
    const core = (await h.api.get('/api/v1')).body.resources.find(
      (x: { name: string }) => x.name === 'serviceaccounts/token',
    );
    expect(core).toMatchObject({ kind: 'TokenRequest', group: 'authentication.k8s.io', verbs: ['create'] });
  });

  it('refuses unknown service accounts and pods, stale pod UIDs and short lifetimes', async () => {
    const missing = await requestToken('nobody', {});
    expect(missing.status).toBe(404);
    expect(missing.body.message).toBe('serviceaccounts "nobody" not found');
    const noPod = await requestToken('app', { boundObjectRef: { kind: 'Pod', name: 'gone' } });
    expect(noPod.body.message).toBe('pods "gone" not found');
    await h.api.post('/api/v1/namespaces/default/pods', {
      metadata: { name: 'db' },
      spec: { serviceAccountName: 'app', containers: [{ name: 'c', image: 'busybox' }] },
    });
    const stale = await requestToken('app', { boundObjectRef: { kind: 'Pod', name: 'db', uid: 'old' } });
    expect(stale.status).toBe(409);
    const short = await requestToken('app', { expirationSeconds: 60 });
    expect(short.status).toBe(422);
    expect(short.body.message).toBe(
      'TokenRequest.authentication.k8s.io "app" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes',
    );
  });
});
