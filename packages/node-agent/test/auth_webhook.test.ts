// TokenReview and SubjectAccessReview clients against a minimal HTTP endpoint that answers
// those two APIs the way kube-apiserver does (the fake apiserver does not serve them).
import { createServer, type Server } from 'node:http';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SubjectAccessReviewAuthorizer, TokenReviewAuthenticator } from '../src/server/auth.js';

let server: Server;
let kc: KubeConfig;
interface ReviewBody {
  kind?: string;
  spec: { token?: string; user?: string; groups?: string[]; resourceAttributes?: Record<string, string> };
}
const received: { path: string; body: ReviewBody }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => {
      raw += c;
    });
    req.on('end', () => {
      const body = JSON.parse(raw) as ReviewBody;
      received.push({ path: req.url ?? '', body });
      res.setHeader('Content-Type', 'application/json');
      if (req.url?.startsWith('/apis/authentication.k8s.io/v1/tokenreviews')) {
        const ok = body.spec.token === 'good';
        res.end(
          JSON.stringify({
            ...body,
            status: ok
              ? { authenticated: true, user: { username: 'alice', uid: '1', groups: ['devs'] } }
              : { authenticated: false },
          }),
        );
      } else if (req.url?.startsWith('/apis/authorization.k8s.io/v1/subjectaccessreviews')) {
        const allowed = body.spec.user === 'alice' && body.spec.resourceAttributes?.subresource === 'metrics';
        res.end(JSON.stringify({ ...body, status: { allowed, reason: allowed ? '' : 'RBAC: denied' } }));
      } else {
        res.statusCode = 404;
        res.end(JSON.stringify({ kind: 'Status', code: 404, message: 'not found', reason: 'NotFound' }));
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: 'u', token: 'agent' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('webhook authentication and authorization', () => {
  it('authenticates bearer tokens with a TokenReview and caches the verdict for the TTL', async () => {
    let now = 0;
    const authn = new TokenReviewAuthenticator(kc, 120_000, () => now);
    received.length = 0;
    expect(await authn.authenticateToken('good')).toEqual({
      username: 'alice',
      uid: '1',
      groups: ['devs'],
      extra: undefined,
    });
    expect(await authn.authenticateToken('bad')).toBeUndefined();
    expect(await authn.authenticateToken('good')).toMatchObject({ username: 'alice' });
    expect(received).toHaveLength(2);
    expect(received[0]?.body).toMatchObject({ kind: 'TokenReview', spec: { token: 'good' } });
    now = 120_001;
    await authn.authenticateToken('good');
    expect(received).toHaveLength(3);
  });

  it('authorizes as nodes/<subresource> with a SubjectAccessReview', async () => {
    const authz = new SubjectAccessReviewAuthorizer(kc, { authorizedMs: 300_000, unauthorizedMs: 30_000 });
    const user = { username: 'alice', groups: ['devs'] };
    received.length = 0;
    expect(
      await authz.authorize({
        user,
        verb: 'get',
        resource: 'nodes',
        subresource: 'metrics',
        name: 'node-a',
        path: '/metrics',
      }),
    ).toMatchObject({ allowed: true });
    expect(
      await authz.authorize({
        user,
        verb: 'get',
        resource: 'nodes',
        subresource: 'proxy',
        name: 'node-a',
        path: '/pods',
      }),
    ).toEqual({
      allowed: false,
      reason: 'RBAC: denied',
    });
    expect(received[0]?.body.spec).toMatchObject({
      user: 'alice',
      groups: ['devs'],
      resourceAttributes: {
        verb: 'get',
        resource: 'nodes',
        subresource: 'metrics',
        name: 'node-a',
        version: 'v1',
      },
    });
  });

  // Issue 36: random bearer tokens must neither grow the agent's memory nor multiply the
  // apiserver's load. The kubelet keeps both answers for authentication.webhook.cacheTTL.
  it('keeps approvals and refusals for cacheTTL, as the kubelet caches TokenReview answers', async () => {
    let now = 0;
    const authn = new TokenReviewAuthenticator(kc, 120_000, () => now);
    received.length = 0;
    await authn.authenticateToken('good');
    await authn.authenticateToken('bad');
    now = 119_000;
    await authn.authenticateToken('good');
    await authn.authenticateToken('bad');
    expect(received).toHaveLength(2);
    now = 121_000;
    await authn.authenticateToken('bad');
    await authn.authenticateToken('good');
    // Both were asked again once the TTL had passed.
    expect(received.map((r) => r.body.spec.token)).toEqual(['good', 'bad', 'bad', 'good']);
  });

  it('holds a bounded number of verdicts however many random tokens arrive, and drops expired ones', async () => {
    let now = 0;
    const authn = new TokenReviewAuthenticator(kc, 120_000, () => now, { maxEntries: 40 });
    for (let i = 0; i < 120; i++) await authn.authenticateToken(`random-${i}`);
    expect(authn.cached).toBeLessThanOrEqual(40);
    // Expired refusals go as new entries arrive, without being read again.
    now = 121_000;
    await authn.authenticateToken('random-new');
    expect(authn.cached).toBe(1);
  }, 30_000);

  it('asks once for a burst of requests with one token', async () => {
    const authn = new TokenReviewAuthenticator(kc, 120_000);
    received.length = 0;
    const users = await Promise.all(Array.from({ length: 50 }, () => authn.authenticateToken('good')));
    expect(users.every((u) => u?.username === 'alice')).toBe(true);
    expect(received).toHaveLength(1);
  });
});
