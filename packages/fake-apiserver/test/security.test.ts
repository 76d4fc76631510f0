// Attack tests: one per hole a security review found (issue 36), each an attacker's request and
// the answer kube-apiserver gives it. They speak HTTP only, so that each can be run against an
// older build to show it failed there.
import { chmodSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiServer, createApiServer, type UserInfo } from '../src/index.js';
import type { KObject } from '../src/meta/object.js';
import { ApiClient, eventually, nodeRbacServer, pod, type Reply } from './helpers.js';

const API_AUDIENCE = 'https://kubernetes.default.svc.cluster.local';
const USERS: Record<string, UserInfo> = {
  admin: { name: 'admin', uid: 'u-admin', groups: ['system:masters'] },
  admin2: { name: 'admin2', uid: 'u-admin2', groups: ['system:masters'] },
  binder: { name: 'binder', uid: 'u-binder', groups: [] },
  reader: { name: 'reader', uid: 'u-reader', groups: [] },
  getter: { name: 'getter', uid: 'u-getter', groups: [] },
  creator: { name: 'creator', uid: 'u-creator', groups: [] },
  both: { name: 'both', uid: 'u-both', groups: [] },
  bound: { name: 'bound', uid: 'u-bound', groups: [] },
  exempt: { name: 'exempt-user', uid: 'u-exempt', groups: ['system:masters'] },
  n1: { name: 'system:node:n1', uid: 'u-n1', groups: ['system:nodes'] },
};
const RBAC = '/apis/rbac.authorization.k8s.io/v1';

const start = (opts: Parameters<typeof createApiServer>[0] = {}) => nodeRbacServer(USERS, opts);

const as = (s: ApiServer, token: string) => new ApiClient(s.url, { token, ca: s.caPem });

const role = (name: string, rules: KObject[], namespace?: string) => ({
  metadata: { name, ...(namespace && { namespace }) },
  rules,
});
const binding = (name: string, kind: 'Role' | 'ClusterRole', roleName: string, subjects: KObject[]) => ({
  metadata: { name },
  roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind, name: roleName },
  subjects,
});
const user = (name: string) => ({ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name });

/** A raw request with upgrade headers: the status the server answers the handshake with. */
function upgrade(s: ApiServer, token: string, method: string, path: string, headers: Record<string, string>) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = httpsRequest(new URL(path, s.url), {
      method,
      ca: s.caPem,
      headers: { Authorization: `Bearer ${token}`, Connection: 'Upgrade', ...headers },
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (c: Buffer) => {
        body += c.toString();
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, body: '' });
    });
    req.on('error', reject);
    req.end();
  });
}
const WEBSOCKET = {
  Upgrade: 'websocket',
  'Sec-WebSocket-Version': '13',
  'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==',
  'Sec-WebSocket-Protocol': 'v5.channel.k8s.io',
};
const SPDY = { Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': 'v4.channel.k8s.io' };

let s: ApiServer;
const audits: KObject[] = [];
const dataDir = mkdtempSync(join(tmpdir(), 'kh-apiserver-security-'));
beforeAll(async () => {
  s = await start({
    podSecurity: {
      exemptions: { usernames: ['exempt-user'], namespaces: ['psa-exempt'], runtimeClasses: ['sandboxed'] },
    },
    onPodSecurityAudit: (r) => audits.push(r as unknown as KObject),
  });
  const admin = as(s, 'admin');
  for (const ns of ['team', 'psa-exempt'])
    expect((await admin.post('/api/v1/namespaces', { metadata: { name: ns } })).status).toBe(201);
});
afterAll(async () => {
  await s.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('RBAC: no escalation without bind or escalate', () => {
  it('a user allowed only to create rolebindings cannot bind cluster-admin to himself', async () => {
    const admin = as(s, 'admin');
    await admin.post(
      `${RBAC}/namespaces/team/roles`,
      role('binder', [
        { verbs: ['create'], apiGroups: ['rbac.authorization.k8s.io'], resources: ['rolebindings'] },
      ]),
    );
    await admin.post(
      `${RBAC}/namespaces/team/rolebindings`,
      binding('binder', 'Role', 'binder', [user('binder')]),
    );
    const binder = as(s, 'binder');
    const r = await binder.post(
      `${RBAC}/namespaces/team/rolebindings`,
      binding('pwn', 'ClusterRole', 'cluster-admin', [user('binder')]),
    );
    expect(r.status).toBe(403);
    expect(r.body.message).toContain(
      'rolebindings.rbac.authorization.k8s.io "pwn" is forbidden: user "binder" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:',
    );
    expect(r.body.message).toContain('{APIGroups:["*"], Resources:["*"], Verbs:["*"]}');
    expect((await binder.get('/api/v1/namespaces/team/secrets')).status).toBe(403);
  });

  it('nor write a role with rules it does not hold; with escalate or bind it may', async () => {
    const admin = as(s, 'admin');
    const binder = as(s, 'binder');
    await admin.post(
      `${RBAC}/namespaces/team/roles`,
      role('role-writer', [
        { verbs: ['create', 'get'], apiGroups: ['rbac.authorization.k8s.io'], resources: ['roles'] },
      ]),
    );
    await admin.post(
      `${RBAC}/namespaces/team/rolebindings`,
      binding('role-writer', 'Role', 'role-writer', [user('binder')]),
    );
    const secrets = [{ verbs: ['list'], apiGroups: [''], resources: ['secrets'] }];
    const denied = await binder.post(`${RBAC}/namespaces/team/roles`, role('secrets', secrets));
    expect(denied.status).toBe(403);
    expect(denied.body.message).toContain('{APIGroups:[""], Resources:["secrets"], Verbs:["list"]}');
    // Rules it holds itself it may pass on.
    const held = await binder.post(
      `${RBAC}/namespaces/team/roles`,
      role('copy', [{ verbs: ['get'], apiGroups: ['rbac.authorization.k8s.io'], resources: ['roles'] }]),
    );
    expect(held.status).toBe(201);
    // escalate on roles lets it write any role; bind on one ClusterRole lets it bind that one.
    await admin.post(
      `${RBAC}/namespaces/team/roles`,
      role('escalator', [
        { verbs: ['escalate'], apiGroups: ['rbac.authorization.k8s.io'], resources: ['roles'] },
        {
          verbs: ['bind'],
          apiGroups: ['rbac.authorization.k8s.io'],
          resources: ['clusterroles'],
          resourceNames: ['view-secrets'],
        },
      ]),
    );
    await admin.post(
      `${RBAC}/namespaces/team/rolebindings`,
      binding('escalator', 'Role', 'escalator', [user('binder')]),
    );
    expect((await binder.post(`${RBAC}/namespaces/team/roles`, role('secrets', secrets))).status).toBe(201);
    await admin.post(`${RBAC}/clusterroles`, role('view-secrets', secrets));
    expect(
      (
        await binder.post(
          `${RBAC}/namespaces/team/rolebindings`,
          binding('vs', 'ClusterRole', 'view-secrets', [user('reader')]),
        )
      ).status,
    ).toBe(201);
    expect(
      (
        await binder.post(
          `${RBAC}/namespaces/team/rolebindings`,
          binding('ca', 'ClusterRole', 'cluster-admin', [user('reader')]),
        )
      ).status,
    ).toBe(403);
  });
});

describe('pods/exec, attach and portforward need create over every protocol', () => {
  beforeAll(async () => {
    const admin = as(s, 'admin');
    // A node without a kubelet endpoint: whoever gets past authorization gets 503.
    await admin.post('/api/v1/nodes', { metadata: { name: 'nokubelet' } });
    expect(
      (await admin.post('/api/v1/namespaces/team/pods', pod('web', { nodeName: 'nokubelet' }))).status,
    ).toBe(201);
    const grant = async (who: string, verbs: string[]) => {
      await admin.post(
        `${RBAC}/namespaces/team/roles`,
        role(`exec-${who}`, [
          { verbs, apiGroups: [''], resources: ['pods/exec', 'pods/attach', 'pods/portforward'] },
        ]),
      );
      await admin.post(
        `${RBAC}/namespaces/team/rolebindings`,
        binding(`exec-${who}`, 'Role', `exec-${who}`, [user(who)]),
      );
    };
    await grant('getter', ['get']);
    await grant('creator', ['create']);
    await grant('both', ['get', 'create']);
  });
  const exec = '/api/v1/namespaces/team/pods/web/exec?command=id&stdout=1';

  it('refuses a WebSocket upgrade (a GET) to a user who may only get pods/exec', async () => {
    for (const sub of [
      exec,
      '/api/v1/namespaces/team/pods/web/attach?stdout=1',
      '/api/v1/namespaces/team/pods/web/portforward?ports=80',
    ]) {
      const r = await upgrade(s, 'getter', 'GET', sub, WEBSOCKET);
      expect(r.status, sub).toBe(403);
      expect(JSON.parse(r.body).message).toMatch(
        /User "getter" cannot create resource "pods\/(exec|attach|portforward)"/,
      );
    }
    // A SPDY upgrade sent as a GET is held to the same.
    expect((await upgrade(s, 'getter', 'GET', exec, SPDY)).status).toBe(403);
  });

  it('lets create through over SPDY (POST) and get+create over WebSocket', async () => {
    expect((await upgrade(s, 'creator', 'POST', exec, SPDY)).status).toBe(503);
    expect((await upgrade(s, 'creator', 'GET', exec, WEBSOCKET)).status).toBe(403);
    expect((await upgrade(s, 'both', 'GET', exec, WEBSOCKET)).status).toBe(503);
  });
});

describe('subPath stays inside its volume', () => {
  const withMount = (name: string, mount: KObject, volume: KObject = { name: 'v', emptyDir: {} }) =>
    pod(name, {
      volumes: [volume],
      containers: [
        { name: 'c', image: 'busybox', volumeMounts: [{ name: 'v', mountPath: '/data', ...mount }] },
      ],
    });

  it('refuses .. and absolute subPaths with 422, as ValidateVolumeMounts does', async () => {
    const admin = as(s, 'admin');
    const up = await admin.post(
      '/api/v1/namespaces/team/pods',
      withMount('up', { subPath: '../../../../../../../../..' }),
    );
    expect(up.status).toBe(422);
    expect(up.body.message).toContain(
      `spec.containers[0].volumeMounts[0].subPath: Invalid value: "../../../../../../../../..": must not contain '..'`,
    );
    const abs = await admin.post('/api/v1/namespaces/team/pods', withMount('abs', { subPath: '/etc' }));
    expect(abs.status).toBe(422);
    expect(abs.body.message).toContain('subPath: Invalid value: "/etc": must be a relative path');
    const expr = await admin.post(
      '/api/v1/namespaces/team/pods',
      withMount('expr', { subPathExpr: '$(POD)/../..' }),
    );
    expect(expr.status).toBe(422);
    const item = await admin.post(
      '/api/v1/namespaces/team/pods',
      withMount(
        'item',
        {},
        { name: 'v', configMap: { name: 'x', items: [{ key: 'k', path: '../../etc/passwd' }] } },
      ),
    );
    expect(item.status).toBe(422);
    expect(
      (await admin.post('/api/v1/namespaces/team/pods', withMount('fine', { subPath: 'a/b..c/d' }))).status,
    ).toBe(201);
  });
});

describe('TokenReview checks audiences; service account tokens work on API requests', () => {
  const tokenFor = async (sa: string, spec: KObject = {}) =>
    (
      await as(s, 'admin').post(`/api/v1/namespaces/team/serviceaccounts/${sa}/token`, {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec,
      })
    ).body.status.token as string;
  const review = async (token: string, audiences?: string[]) =>
    (
      await as(s, 'admin').post('/apis/authentication.k8s.io/v1/tokenreviews', {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenReview',
        spec: { token, audiences },
      })
    ).body.status;

  beforeAll(async () => {
    const admin = as(s, 'admin');
    await admin.post('/api/v1/namespaces/team/serviceaccounts', { metadata: { name: 'app' } });
    await admin.post(
      `${RBAC}/namespaces/team/roles`,
      role('pod-reader', [{ verbs: ['list'], apiGroups: [''], resources: ['pods'] }]),
    );
    await admin.post(
      `${RBAC}/namespaces/team/rolebindings`,
      binding('app', 'Role', 'pod-reader', [{ kind: 'ServiceAccount', name: 'app', namespace: 'team' }]),
    );
  });

  it('a token minted for another audience is not authenticated for the apiserver', async () => {
    const vault = await tokenFor('app', { audiences: ['vault'] });
    expect(await review(vault, [API_AUDIENCE])).toEqual({ authenticated: false, user: {} });
    expect((await review(vault)).authenticated).toBe(false);
    const ok = await review(vault, ['vault', 'other']);
    expect(ok.authenticated).toBe(true);
    expect(ok.audiences).toEqual(['vault']);
    // A token-file token is the apiserver's alone.
    expect((await review('reader', ['vault'])).authenticated).toBe(false);
    expect((await review('reader')).audiences).toEqual([API_AUDIENCE]);
  });

  it("authenticates a service account's token on API requests, for the API audience only", async () => {
    const token = await tokenFor('app');
    const sa = new ApiClient(s.url, { token, ca: s.caPem });
    expect((await sa.get('/api/v1/namespaces/team/pods')).status).toBe(200);
    expect((await sa.get('/api/v1/namespaces/default/pods')).status).toBe(403);
    const whoami = await sa.post('/apis/authentication.k8s.io/v1/selfsubjectreviews', {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'SelfSubjectReview',
    });
    expect(whoami.body.status.userInfo.username).toBe('system:serviceaccount:team:app');
    const vault = new ApiClient(s.url, {
      token: await tokenFor('app', { audiences: ['vault'] }),
      ca: s.caPem,
    });
    expect((await vault.get('/api/v1/namespaces/team/pods')).status).toBe(401);
  });

  it('refuses a pod-bound token once its pod is gone, and every token once its service account is', async () => {
    const admin = as(s, 'admin');
    const p = (await admin.post('/api/v1/namespaces/team/pods', pod('holder', { serviceAccountName: 'app' })))
      .body;
    const bound = await tokenFor('app', {
      boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'holder', uid: p.metadata.uid },
    });
    const client = new ApiClient(s.url, { token: bound, ca: s.caPem });
    expect((await client.get('/api/v1/namespaces/team/pods')).status).toBe(200);
    await admin.delete('/api/v1/namespaces/team/pods/holder?gracePeriodSeconds=0');
    expect((await client.get('/api/v1/namespaces/team/pods')).status).toBe(401);
    const plain = new ApiClient(s.url, { token: await tokenFor('app'), ca: s.caPem });
    await admin.delete('/api/v1/namespaces/team/serviceaccounts/app');
    expect((await plain.get('/api/v1/namespaces/team/pods')).status).toBe(401);
  });

  it('refuses an expired token', async () => {
    let now = Date.now();
    const t = await start({ clock: { now: () => now } });
    try {
      const admin = as(t, 'admin');
      await admin.post(
        `${RBAC}/clusterrolebindings`,
        binding('sa-admin', 'ClusterRole', 'cluster-admin', [
          { kind: 'ServiceAccount', name: 'default', namespace: 'default' },
        ]),
      );
      const token = (
        await admin.post('/api/v1/namespaces/default/serviceaccounts/default/token', {
          spec: { expirationSeconds: 600 },
        })
      ).body.status.token;
      const sa = new ApiClient(t.url, { token, ca: t.caPem });
      expect((await sa.get('/api/v1/namespaces')).status).toBe(200);
      now += 700_000;
      expect((await sa.get('/api/v1/namespaces')).status).toBe(401);
    } finally {
      await t.close();
    }
  });
});

describe('field selectors read only the fields a resource has', () => {
  it('answers 400 for __proto__, constructor and friends, also as a node', async () => {
    const admin = as(s, 'admin');
    for (const sel of ['__proto__=x', 'constructor=x', 'toString=x', 'hasOwnProperty!=x']) {
      const r = await admin.get(`/api/v1/namespaces/team/pods?fieldSelector=${encodeURIComponent(sel)}`);
      expect(r.status, sel).toBe(400);
      expect(r.body.message).toContain('field label not supported');
      expect((await admin.get(`/api/v1/pods?watch=1&fieldSelector=${encodeURIComponent(sel)}`)).status).toBe(
        400,
      );
    }
    const node = await as(s, 'n1').get(
      `/api/v1/pods?fieldSelector=${encodeURIComponent('spec.nodeName=n1,__proto__=x')}`,
    );
    expect(node.status).toBe(400);
  });
});

describe('node addresses and the kubelet port are validated, and only real kubelets are dialled', () => {
  const status = (addresses: KObject[], port = 10250) => ({
    status: { addresses, daemonEndpoints: { kubeletEndpoint: { Port: port } } },
  });

  it('refuses an InternalIP that is not an IP, a port out of range, a bad host name', async () => {
    const n1 = as(s, 'n1');
    expect((await n1.post('/api/v1/nodes', { metadata: { name: 'n1' } })).status).toBe(201);
    const evil = await n1.patch(
      '/api/v1/nodes/n1/status',
      'merge',
      status([{ type: 'InternalIP', address: '127.0.0.1/evil?x=' }]),
    );
    expect(evil.status).toBe(422);
    expect(evil.body.message).toContain('status.addresses[0].address: Invalid value: "127.0.0.1/evil?x="');
    expect(
      (
        await n1.patch(
          '/api/v1/nodes/n1/status',
          'merge',
          status([{ type: 'InternalIP', address: '10.0.0.1' }], 70000),
        )
      ).status,
    ).toBe(422);
    expect(
      (await n1.patch('/api/v1/nodes/n1/status', 'merge', status([{ type: 'Hostname', address: 'a/b' }])))
        .status,
    ).toBe(422);
    expect(
      (
        await n1.patch(
          '/api/v1/nodes/n1/status',
          'merge',
          status([
            { type: 'Hostname', address: 'N1.example' },
            { type: 'InternalIP', address: 'fd00::1' },
          ]),
        )
      ).status,
    ).toBe(200);
  });

  it('never dials an unspecified, link-local or multicast kubelet address', async () => {
    const admin = as(s, 'admin');
    await admin.post('/api/v1/nodes', {
      metadata: { name: 'zero' },
      ...status([{ type: 'InternalIP', address: '0.0.0.0' }], 9),
    });
    const r = await admin.get('/api/v1/nodes/zero/proxy/healthz');
    expect(r.status).toBe(400);
    expect(r.body.message).toContain('address not allowed');
  });

  it('does not dial loopback kubelets when told not to (a server that listens beyond loopback)', async () => {
    const t = await start({ kubeletClient: { allowLoopback: false } });
    try {
      const admin = as(t, 'admin');
      await admin.post('/api/v1/nodes', {
        metadata: { name: 'local' },
        ...status([{ type: 'InternalIP', address: '127.0.0.1' }], 9),
      });
      const r = await admin.get('/api/v1/nodes/local/proxy/healthz');
      expect(r.status).toBe(400);
    } finally {
      await t.close();
    }
  });
});

describe('watches: bounded timeouts, a cap per user, slow readers cut off', () => {
  it('keeps a watch with a huge timeoutSeconds open (no timer overflow)', async () => {
    const admin = as(s, 'admin');
    const seen = admin.watch(
      '/api/v1/namespaces/team/configmaps?watch=1&timeoutSeconds=99999999999',
      (evs) => evs.some((e) => e.object?.metadata?.name === 'after'),
      20_000,
    );
    // The watch is open once it can see writes: make one after it started.
    await new Promise((r) => setTimeout(r, 300));
    await admin.post('/api/v1/namespaces/team/configmaps', { metadata: { name: 'after' } });
    const events = await seen;
    expect(events.map((e) => e.object.metadata.name)).toContain('after');
  });

  it('answers one user past its cap with 429 while another user still gets watches', async () => {
    const t = await start({ maxWatchesPerUser: 2 });
    const open: (() => void)[] = [];
    const hold = (token: string) =>
      new Promise<number>((resolve, reject) => {
        const req = httpsRequest(
          new URL('/api/v1/namespaces?watch=1', t.url),
          { ca: t.caPem, headers: { Authorization: `Bearer ${token}` } },
          (res) => {
            open.push(() => req.destroy());
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', (e) => (req.destroyed ? undefined : reject(e)));
        req.end();
      });
    try {
      expect(await hold('admin')).toBe(200);
      expect(await hold('admin')).toBe(200);
      expect(await hold('admin')).toBe(429);
      expect(await hold('admin2')).toBe(200);
    } finally {
      for (const close of open) close();
      await t.close();
    }
  });

  it('destroys the connection of a watcher that stops reading, freeing its slot at once', async () => {
    const t = await start({ maxWatches: 1 });
    const admin = as(t, 'admin');
    let stalled: ReturnType<typeof httpsRequest> | undefined;
    try {
      await admin.post('/api/v1/namespaces', { metadata: { name: 'flood' } });
      // A watcher that never reads: the server's buffer for it grows past the cut-off.
      await new Promise<void>((resolve) => {
        stalled = httpsRequest(
          new URL('/api/v1/namespaces/flood/configmaps?watch=1', t.url),
          { ca: t.caPem, headers: { Authorization: 'Bearer admin' } },
          (res) => {
            res.pause();
            resolve();
          },
        );
        stalled.on('error', () => {});
        stalled.end();
      });
      const big = 'x'.repeat(1024 * 1024);
      for (let i = 0; i < 48; i++) {
        await admin.post('/api/v1/namespaces/flood/configmaps', {
          metadata: { name: `big-${i}` },
          data: { v: big },
        });
      }
      // Its slot comes back only once the server let go of it.
      await eventually(async () => {
        const r: Reply = await admin.get('/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1');
        expect(r.status).toBe(200);
      }, 20_000);
    } finally {
      stalled?.destroy();
      await t.close();
    }
  });
});

describe("system:node is upstream's", () => {
  it('grants no node deletion and no lease list, even when bound through RBAC', async () => {
    const admin = as(s, 'admin');
    const rules: KObject[] = (await admin.get(`${RBAC}/clusterroles/system:node`)).body.rules;
    const verbsOn = (group: string, resource: string) =>
      rules
        .filter((r) => r.apiGroups?.includes(group) && r.resources?.includes(resource))
        .flatMap((r) => r.verbs);
    expect(verbsOn('', 'nodes').sort()).toEqual(['create', 'get', 'list', 'patch', 'update', 'watch']);
    expect(verbsOn('coordination.k8s.io', 'leases').sort()).toEqual([
      'create',
      'delete',
      'get',
      'patch',
      'update',
    ]);
    expect(verbsOn('', 'namespaces')).toEqual([]);
    await admin.post(
      `${RBAC}/clusterrolebindings`,
      binding('bound-node', 'ClusterRole', 'system:node', [user('bound')]),
    );
    await admin.post('/api/v1/nodes', { metadata: { name: 'victim' } });
    expect((await as(s, 'bound').delete('/api/v1/nodes/victim')).status).toBe(403);
    expect((await as(s, 'bound').get('/apis/coordination.k8s.io/v1/leases')).status).toBe(403);
  });
});

describe('Pod Security admission', () => {
  const ns = async (name: string, labels: Record<string, string>) =>
    as(s, 'admin').post('/api/v1/namespaces', { metadata: { name, labels } });
  const privileged = (name: string) =>
    pod(name, { containers: [{ name: 'c', image: 'busybox', securityContext: { privileged: true } }] });
  const hostPath = (name: string) =>
    pod(name, {
      volumes: [{ name: 'root', hostPath: { path: '/' } }],
      containers: [{ name: 'c', image: 'busybox' }],
    });
  const restrictedOk = (name: string) =>
    pod(name, {
      securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          name: 'c',
          image: 'busybox',
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
        },
      ],
    });

  it('enforces baseline from the namespace label: privileged and hostPath pods are 403', async () => {
    expect((await ns('psa-baseline', { 'pod-security.kubernetes.io/enforce': 'baseline' })).status).toBe(201);
    const admin = as(s, 'admin');
    const p = await admin.post('/api/v1/namespaces/psa-baseline/pods', privileged('priv'));
    expect(p.status).toBe(403);
    expect(p.body.message).toBe(
      'pods "priv" is forbidden: violates PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)',
    );
    const h = await admin.post('/api/v1/namespaces/psa-baseline/pods', hostPath('host'));
    expect(h.status).toBe(403);
    expect(h.body.message).toContain('hostPath volumes (volume "root")');
    expect((await admin.post('/api/v1/namespaces/psa-baseline/pods', pod('plain'))).status).toBe(201);
  });

  it('enforces restricted, warns and audits at their own levels, and keeps unlabelled namespaces privileged', async () => {
    const admin = as(s, 'admin');
    await ns('psa-restricted', {
      'pod-security.kubernetes.io/enforce': 'restricted',
      'pod-security.kubernetes.io/enforce-version': 'v1.30',
    });
    const plain = await admin.post('/api/v1/namespaces/psa-restricted/pods', pod('plain'));
    expect(plain.status).toBe(403);
    expect(plain.body.message).toContain(
      'violates PodSecurity "restricted:v1.30": allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false)',
    );
    expect(plain.body.message).toContain(
      'runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true)',
    );
    expect((await admin.post('/api/v1/namespaces/psa-restricted/pods', restrictedOk('ok'))).status).toBe(201);
    await ns('psa-warn', {
      'pod-security.kubernetes.io/warn': 'restricted',
      'pod-security.kubernetes.io/audit': 'baseline',
    });
    const warned = await admin.post('/api/v1/namespaces/psa-warn/pods', privileged('warned'));
    expect(warned.status).toBe(201);
    expect(String(warned.headers.warning)).toContain(
      'would violate PodSecurity \\"restricted:latest\\": privileged',
    );
    expect(audits).toContainEqual(
      expect.objectContaining({ namespace: 'psa-warn', name: 'warned', policy: 'baseline:latest' }),
    );
    expect((await admin.post('/api/v1/namespaces/team/pods', privileged('anything-goes'))).status).toBe(201);
  });

  it('refuses invalid labels and warns about existing pods when a namespace gets stricter', async () => {
    const bad = await ns('psa-bad', { 'pod-security.kubernetes.io/enforce': 'strict' });
    expect(bad.status).toBe(422);
    expect(bad.body.message).toContain(
      'metadata.labels[pod-security.kubernetes.io/enforce]: Unsupported value: "strict"',
    );
    const tightened = await as(s, 'admin').patch('/api/v1/namespaces/team', 'merge', {
      metadata: { labels: { 'pod-security.kubernetes.io/enforce': 'baseline' } },
    });
    expect(tightened.status).toBe(200);
    expect(String(tightened.headers.warning)).toContain(
      'existing pods in namespace \\"team\\" violate the new PodSecurity enforce level \\"baseline:latest\\"',
    );
    expect(String(tightened.headers.warning)).toContain('anything-goes: privileged');
    await as(s, 'admin').patch('/api/v1/namespaces/team', 'merge', {
      metadata: { labels: { 'pod-security.kubernetes.io/enforce': null } },
    });
  });

  it('judges by the version label: a sysctl safe since v1.29 is refused at v1.28', async () => {
    const sysctl = (name: string) =>
      pod(name, { securityContext: { sysctls: [{ name: 'net.ipv4.tcp_keepalive_time', value: '60' }] } });
    await ns('psa-v128', {
      'pod-security.kubernetes.io/enforce': 'baseline',
      'pod-security.kubernetes.io/enforce-version': 'v1.28',
    });
    const old = await as(s, 'admin').post('/api/v1/namespaces/psa-v128/pods', sysctl('old'));
    expect(old.status).toBe(403);
    expect(old.body.message).toContain(
      'violates PodSecurity "baseline:v1.28": forbidden sysctls (net.ipv4.tcp_keepalive_time)',
    );
    await ns('psa-latest', { 'pod-security.kubernetes.io/enforce': 'baseline' });
    expect((await as(s, 'admin').post('/api/v1/namespaces/psa-latest/pods', sysctl('new'))).status).toBe(201);
  });

  it('exempts the configured users, runtime classes and namespaces', async () => {
    await ns('psa-user', { 'pod-security.kubernetes.io/enforce': 'restricted' });
    expect((await as(s, 'admin2').post('/api/v1/namespaces/psa-user/pods', privileged('nope'))).status).toBe(
      403,
    );
    expect(
      (await as(s, 'exempt').post('/api/v1/namespaces/psa-user/pods', privileged('exempt'))).status,
    ).toBe(201);
    await as(s, 'admin').post('/apis/node.k8s.io/v1/runtimeclasses', {
      metadata: { name: 'sandboxed' },
      handler: 'kata',
    });
    const sandboxed = privileged('sandboxed');
    sandboxed.spec.runtimeClassName = 'sandboxed';
    expect((await as(s, 'admin2').post('/api/v1/namespaces/psa-user/pods', sandboxed)).status).toBe(201);
    await as(s, 'admin').patch('/api/v1/namespaces/psa-exempt', 'merge', {
      metadata: { labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } },
    });
    expect((await as(s, 'admin').post('/api/v1/namespaces/psa-exempt/pods', hostPath('exempt'))).status).toBe(
      201,
    );
  });
});

describe('files that hold Secrets are owner-only', () => {
  it('creates the log and snapshot 0600, and narrows files an older version left wider', async () => {
    const t = await start({ dataDir });
    await as(t, 'admin').post('/api/v1/namespaces/default/secrets', {
      metadata: { name: 'k' },
      stringData: { password: 'hunter2' },
    });
    await t.close();
    const mode = (f: string) => statSync(join(dataDir, f)).mode & 0o777;
    expect(mode('wal.jsonl')).toBe(0o600);
    expect(mode('snapshot.jsonl')).toBe(0o600);
    chmodSync(join(dataDir, 'wal.jsonl'), 0o644);
    chmodSync(join(dataDir, 'snapshot.jsonl'), 0o644);
    const again = await start({ dataDir });
    expect(mode('wal.jsonl')).toBe(0o600);
    expect(mode('snapshot.jsonl')).toBe(0o600);
    await again.close();
  });
});

describe('a bare server on a non-loopback address', () => {
  it('refuses to start without authentication unless explicitly allowed', async () => {
    await expect(createApiServer({ host: '0.0.0.0', port: 0 })).rejects.toThrow(
      /--insecure-allow-unauthenticated-remote/,
    );
    await expect(
      createApiServer({ host: '0.0.0.0', port: 0, tokens: { t: 'u' }, anonymous: true }),
    ).rejects.toThrow(/without authentication/);
    const allowed = await createApiServer({ host: '0.0.0.0', port: 0, allowUnauthenticatedRemote: true });
    await allowed.close();
  });
});
