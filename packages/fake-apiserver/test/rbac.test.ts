import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiServer, createApiServer, type UserInfo } from '../src/index.js';
import { ApiClient, KUBECTL, kubectl, pod } from './helpers.js';

const USERS: Record<string, UserInfo> = {
  'admin-token': { name: 'admin', uid: 'u-admin', groups: ['system:masters'] },
  'dev-token': { name: 'dev', uid: 'u-dev', groups: [] },
  'ops-token': { name: 'ops', uid: 'u-ops', groups: [] },
  'node-token': { name: 'system:node:n', uid: 'u-node', groups: ['system:nodes'] },
};

describe('authorization: RBAC mode, reviews and kubectl auth can-i', () => {
  let s: ApiServer;
  const dir = mkdtempSync(join(tmpdir(), 'kh-apiserver-rbac-'));
  const client = (token?: string) => new ApiClient(s.url, { token, ca: s.caPem });
  const config = (token: string) => {
    const path = join(dir, `${token}.kubeconfig`);
    writeFileSync(path, s.kubeconfig({ token }));
    return path;
  };

  beforeAll(async () => {
    s = await createApiServer({
      tls: true,
      tokens: new Map(Object.entries(USERS)),
      authorizationMode: 'RBAC',
      scheduler: false,
      nodeLifecycle: false,
    });
    await client('admin-token').post('/api/v1/namespaces/default/pods', pod('web'));
  });
  afterAll(async () => {
    await s?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers 401 without a token and 403 in kube-apiserver words without a rule', async () => {
    expect((await client().get('/api/v1/namespaces/default/pods')).status).toBe(401);
    const list = await kubectl(KUBECTL.newest, config('dev-token'), ['get', 'pods']);
    expect(list.stderr).toContain(
      'pods is forbidden: User "dev" cannot list resource "pods" in API group "" in the namespace "default"',
    );
    const exec = await client('dev-token').request(
      'POST',
      '/api/v1/namespaces/default/pods/web/exec?command=ls',
    );
    expect(exec.status).toBe(403);
    expect(exec.body).toMatchObject({
      kind: 'Status',
      reason: 'Forbidden',
      message:
        'pods "web" is forbidden: User "dev" cannot create resource "pods/exec" in API group "" in the namespace "default"',
      details: { name: 'web', kind: 'pods' },
    });
    const nodes = await client('dev-token').get('/api/v1/nodes/n/proxy/stats/summary');
    expect(nodes.body.message).toBe(
      'nodes "n" is forbidden: User "dev" cannot get resource "nodes/proxy" in API group "" at the cluster scope',
    );
    // Discovery is everyone's (system:discovery is bound to system:authenticated).
    expect((await client('dev-token').get('/version')).status).toBe(200);
  });

  it.each([
    ['1.27', KUBECTL.oldest],
    ['1.33', KUBECTL.newest],
  ])('kubectl %s creates roles and bindings that grant exactly their rules (auth can-i)', async (v, bin) => {
    const admin = config('admin-token');
    const dev = config('dev-token');
    const suffix = v.replace('.', '-');
    for (const args of [
      ['create', 'role', `exec-${suffix}`, '--verb=create', '--resource=pods/exec'],
      ['create', 'role', `read-web-${suffix}`, '--verb=get', '--resource=pods', '--resource-name=web'],
      ['create', 'rolebinding', `dev-exec-${suffix}`, `--role=exec-${suffix}`, '--user=dev'],
      ['create', 'rolebinding', `dev-read-${suffix}`, `--role=read-web-${suffix}`, '--user=dev'],
    ]) {
      const r = await kubectl(bin, admin, args);
      expect(r.stderr).toBe('');
    }
    const can = (...args: string[]) => kubectl(bin, dev, ['auth', 'can-i', ...args]);
    expect((await can('create', 'pods', '--subresource=exec')).stdout.trim()).toBe('yes');
    expect((await can('get', 'pods/web')).stdout.trim()).toBe('yes');
    expect((await can('get', 'pods/other')).stdout.trim()).toBe('no');
    expect((await can('delete', 'pods')).stdout.trim()).toBe('no');
    expect((await can('create', 'pods', '--subresource=exec', '-n', 'kube-system')).stdout.trim()).toBe('no');
    // Authorized, the exec reaches validation (no upgrade here).
    const exec = await client('dev-token').request(
      'POST',
      '/api/v1/namespaces/default/pods/web/exec?command=ls',
    );
    expect(exec.body.message).toBe('Upgrade request required');
  });

  it('binds system:kubelet-api-admin with a ClusterRoleBinding', async () => {
    const ops = config('ops-token');
    expect((await kubectl(KUBECTL.newest, ops, ['auth', 'can-i', 'get', 'nodes/proxy'])).stdout.trim()).toBe(
      'no',
    );
    const r = await kubectl(KUBECTL.newest, config('admin-token'), [
      ...[
        'create',
        'clusterrolebinding',
        'ops-kubelet',
        '--clusterrole=system:kubelet-api-admin',
        '--user=ops',
      ],
    ]);
    expect(r.stderr).toBe('');
    expect((await kubectl(KUBECTL.newest, ops, ['auth', 'can-i', 'get', 'nodes/proxy'])).stdout.trim()).toBe(
      'yes',
    );
    expect((await kubectl(KUBECTL.newest, ops, ['auth', 'can-i', 'get', 'nodes/stats'])).stdout.trim()).toBe(
      'yes',
    );
    expect((await kubectl(KUBECTL.newest, ops, ['auth', 'can-i', 'list', 'pods'])).stdout.trim()).toBe('no');
  });

  it('gives a node nothing by RBAC alone: the bootstrap system:node binding has no subject', async () => {
    const node = client('node-token');
    const created = await node.post('/api/v1/nodes', { metadata: { name: 'n' } });
    expect(created.status).toBe(403);
    const binding = await client('admin-token').get(
      '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/system:node',
    );
    expect(binding.body.subjects).toBeUndefined();
  });

  it('answers TokenReviews and SubjectAccessReviews (what a kubelet in webhook mode asks)', async () => {
    const reviewer = client('admin-token');
    // A kubelet in webhook mode: who is this token, and may they proxy to me?
    const review = await reviewer.post('/apis/authentication.k8s.io/v1/tokenreviews', {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenReview',
      spec: { token: 'dev-token' },
    });
    expect(review.status).toBe(201);
    // A token-file token names no audience: it is good for the API server's own.
    expect(review.body.status).toEqual({
      authenticated: true,
      user: { username: 'dev', uid: 'u-dev', groups: ['system:authenticated'] },
      audiences: ['https://kubernetes.default.svc.cluster.local'],
    });
    const bogus = await reviewer.post('/apis/authentication.k8s.io/v1/tokenreviews', {
      spec: { token: 'nope' },
    });
    expect(bogus.body.status.authenticated).toBe(false);
    const sar = (user: string, groups: string[], resourceAttributes: object) =>
      reviewer.post('/apis/authorization.k8s.io/v1/subjectaccessreviews', {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: { user, groups, resourceAttributes },
      });
    const admin = await sar('admin', ['system:masters'], {
      verb: 'get',
      resource: 'nodes',
      subresource: 'proxy',
      name: 'n',
    });
    expect(admin.body.status.allowed).toBe(true);
    const dev = await sar('dev', [], { verb: 'get', resource: 'nodes', subresource: 'stats', name: 'n' });
    expect(dev.body.status).toEqual({ allowed: false });
  });
});
