import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiServer, UserInfo } from '../src/index.js';
import type { KObject } from '../src/meta/object.js';
import { ApiClient, KUBECTL, kubectl, nodeRbacServer, pod } from './helpers.js';

const USERS: Record<string, UserInfo> = {
  'admin-token': { name: 'admin', uid: 'u-admin', groups: ['system:masters'] },
  'n1-token': { name: 'system:node:n1', uid: 'u-n1', groups: ['system:nodes'] },
  'n2-token': { name: 'system:node:n2', uid: 'u-n2', groups: ['system:nodes'] },
  'nameless-token': { name: 'system:node:', uid: 'u-x', groups: ['system:nodes'] },
};

const LEASES = '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases';
const lease = (name: string) => ({
  metadata: { name },
  spec: { holderIdentity: name, leaseDurationSeconds: 40 },
});
const mirror = (name: string, node: string, spec: KObject = {}) =>
  pod(name, { nodeName: node, ...spec }, { annotations: { 'kubernetes.io/config.mirror': 'hash' } });

describe('authorization: the Node authorizer and NodeRestriction (--authorization-mode Node,RBAC)', () => {
  let s: ApiServer;
  const dir = mkdtempSync(join(tmpdir(), 'kh-apiserver-node-authz-'));
  const client = (token: string) => new ApiClient(s.url, { token, ca: s.caPem });
  const n1 = () => client('n1-token');
  const config = (token: string) => {
    const path = join(dir, `${token}.kubeconfig`);
    writeFileSync(path, s.kubeconfig({ token }));
    return path;
  };

  beforeAll(async () => {
    s = await nodeRbacServer(USERS);
    const admin = client('admin-token');
    for (const [kind, name] of [
      ['secrets', 's1'],
      ['secrets', 's2'],
      ['secrets', 'pull1'],
      ['configmaps', 'cm1'],
    ] as const) {
      expect((await admin.post(`/api/v1/namespaces/default/${kind}`, { metadata: { name } })).status).toBe(
        201,
      );
    }
    // p1 on n1 relates s1 (volume), cm1 (env) and pull1 (image pull secret); p2 on n2 relates s2.
    const p1 = pod('p1', {
      nodeName: 'n1',
      imagePullSecrets: [{ name: 'pull1' }],
      volumes: [{ name: 'v', secret: { secretName: 's1' } }],
      containers: [
        {
          name: 'c',
          image: 'busybox:1.36',
          env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'cm1', key: 'x' } } }],
        },
      ],
    });
    const p2 = pod('p2', { nodeName: 'n2', volumes: [{ name: 'v', secret: { secretName: 's2' } }] });
    for (const p of [p1, p2, pod('unbound')])
      expect((await admin.post('/api/v1/namespaces/default/pods', p)).status).toBe(201);
    // Each node registers itself and takes its lease, as a kubelet does.
    for (const n of ['n1', 'n2']) {
      const node = client(`${n}-token`);
      const labels = { 'kubernetes.io/hostname': n, 'node.kubernetes.io/instance-type': 'fake' };
      expect((await node.post('/api/v1/nodes', { metadata: { name: n, labels } })).status).toBe(201);
      expect((await node.post(LEASES, lease(n))).status).toBe(201);
    }
  });
  afterAll(async () => {
    await s?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('kubectl 1.33: a node cannot delete another node, read a secret of a pod elsewhere or patch another lease (403)', async () => {
    const n1conf = config('n1-token');
    const run = (...args: string[]) => kubectl(KUBECTL.newest, n1conf, args);

    const del = await run('delete', 'node', 'n2');
    expect(del.code).not.toBe(0);
    expect(del.stderr).toContain(
      'Error from server (Forbidden): nodes "n2" is forbidden: User "system:node:n1" cannot delete resource "nodes" in API group "" at the cluster scope',
    );
    const secret = await run('get', 'secret', 's2', '-n', 'default');
    expect(secret.stderr).toContain(
      `secrets "s2" is forbidden: User "system:node:n1" cannot get resource "secrets" in API group "" in the namespace "default": no relationship found between node 'n1' and this object`,
    );
    const patch = ['--type=merge', '-p', '{"spec":{"holderIdentity":"n1"}}'];
    // kubectl patch reads the object first: that read is refused already.
    const otherLease = await run('patch', 'lease', 'n2', '-n', 'kube-node-lease', ...patch);
    expect(otherLease.stderr).toContain(
      'Error from server (Forbidden): leases.coordination.k8s.io "n2" is forbidden: User "system:node:n1" cannot get resource "leases" in API group "coordination.k8s.io" in the namespace "kube-node-lease": can only access node lease with the same name as the requesting node',
    );
    const rawPatch = await n1().patch(`${LEASES}/n2`, 'merge', { spec: { holderIdentity: 'n1' } });
    expect(rawPatch.status).toBe(403);
    expect(rawPatch.body.message).toContain('cannot patch resource "leases"');
    // What it may do, it does.
    expect((await run('get', 'secret', 's1', '-o', 'name')).stdout.trim()).toBe('secret/s1');
    expect((await run('get', 'configmap', 'cm1', '-o', 'name')).stdout.trim()).toBe('configmap/cm1');
    expect((await run('patch', 'lease', 'n1', '-n', 'kube-node-lease', ...patch)).stderr).toBe('');
    expect((await client('admin-token').get('/api/v1/nodes/n2')).status).toBe(200);
    expect((await client('admin-token').get(`${LEASES}/n2`)).body.spec.holderIdentity).toBe('n2');
  });

  it('kubectl 1.33 auth can-i answers for a node as its requests are answered', async () => {
    const n1conf = config('n1-token');
    // kubectl prints a refusal's reason after the answer: "no - <reason>".
    const answer = async (...args: string[]) =>
      (await kubectl(KUBECTL.newest, n1conf, ['auth', 'can-i', ...args])).stdout.trim();
    const can = async (...args: string[]) => (await answer(...args)).split(' - ')[0];
    expect(await can('get', 'secret/s1')).toBe('yes');
    expect(await can('get', 'secret/pull1')).toBe('yes');
    expect(await can('get', 'configmap/cm1')).toBe('yes');
    expect(await answer('get', 'secret/s2')).toBe(
      "no - no relationship found between node 'n1' and this object",
    );
    expect(await answer('list', 'secrets')).toBe('no - No Object name found');
    expect(await can('delete', 'node/n2')).toBe('no');
    expect(await can('get', 'node/n1')).toBe('yes');
    expect(await answer('get', 'node/n2')).toBe("no - node 'n1' cannot read 'n2', only its own Node object");
    expect(await can('patch', 'lease/n1', '-n', 'kube-node-lease')).toBe('yes');
    expect(await can('patch', 'lease/n2', '-n', 'kube-node-lease')).toBe('no');
    expect(await can('get', 'pod/p1')).toBe('yes');
    expect(await can('get', 'pod/p2')).toBe('no');
    expect(await can('patch', 'pods', '--subresource=status')).toBe('yes');
    expect(await can('create', 'events')).toBe('yes');
    expect(await can('create', 'namespaces')).toBe('no');
    // Not a node: the Node authorizer has no opinion, RBAC decides (admin is system:masters).
    expect(
      (
        await kubectl(KUBECTL.newest, config('admin-token'), ['auth', 'can-i', 'get', 'secret/s2'])
      ).stdout.trim(),
    ).toBe('yes');
  });

  it('reads: secrets and configmaps by relationship, watches of one by name, pods by spec.nodeName', async () => {
    const node = n1();
    expect(
      (await node.get('/api/v1/namespaces/default/secrets?fieldSelector=metadata.name%3Ds1')).status,
    ).toBe(200);
    const list = await node.get('/api/v1/namespaces/default/secrets');
    expect(list.status).toBe(403);
    expect(list.body.message).toContain(': No Object name found');
    const events = await node.watch(
      '/api/v1/namespaces/default/configmaps?watch=1&fieldSelector=metadata.name%3Dcm1',
      (e) => e.length > 0,
    );
    expect(events[0]).toMatchObject({ type: 'ADDED', object: { metadata: { name: 'cm1' } } });
    expect(
      (await node.get('/api/v1/pods?fieldSelector=spec.nodeName%3Dn1')).body.items.map(
        (p: KObject) => p.metadata.name,
      ),
    ).toEqual(['p1']);
    const others = await node.get('/api/v1/pods?fieldSelector=spec.nodeName%3Dn2');
    expect(others.status).toBe(403);
    expect(others.body.message).toContain('can only list/watch pods with spec.nodeName field selector');
    expect((await node.get('/api/v1/nodes')).body.message).toContain(
      "node 'n1' cannot read all nodes, only its own Node object",
    );
    expect((await node.get('/api/v1/namespaces/default/pods/p2')).status).toBe(403);
    // A pod that does not exist is a 404, which a node's status manager reads as deleted.
    expect((await node.get('/api/v1/namespaces/default/pods/gone')).status).toBe(404);
    // A relationship ends with the pod: once p1 is gone, so is n1's access to s1.
    await client('admin-token').post(
      '/api/v1/namespaces/default/pods',
      pod('p3', { nodeName: 'n1', volumes: [{ name: 'v', secret: { secretName: 's2' } }] }),
    );
    expect((await node.get('/api/v1/namespaces/default/secrets/s2')).status).toBe(200);
    await client('admin-token').delete('/api/v1/namespaces/default/pods/p3', { gracePeriodSeconds: 0 });
    expect((await node.get('/api/v1/namespaces/default/secrets/s2')).status).toBe(403);
    // A user named system:node: with no node name is no node at all.
    expect((await client('nameless-token').get('/api/v1/nodes/n1')).body.message).toContain(
      'unknown node for user "system:node:"',
    );
  });

  it("services: a node lists and watches every namespace's, without headless ones, as the kubelet's informer", async () => {
    const admin = client('admin-token');
    expect((await admin.post('/api/v1/namespaces', { metadata: { name: 'svc-a' } })).status).toBe(201);
    const svc = (name: string, clusterIP?: string) => ({
      metadata: { name },
      spec: { ports: [{ port: 80 }], ...(clusterIP ? { clusterIP } : {}) },
    });
    expect((await admin.post('/api/v1/namespaces/svc-a/services', svc('web'))).status).toBe(201);
    expect((await admin.post('/api/v1/namespaces/svc-a/services', svc('db', 'None'))).status).toBe(201);
    const selector = `fieldSelector=${encodeURIComponent('spec.clusterIP!=None')}`;
    const list = await n1().get(`/api/v1/services?${selector}`);
    expect(list.status).toBe(200);
    const names = list.body.items.map((s: KObject) => `${s.metadata.namespace}/${s.metadata.name}`);
    expect(names).toContain('svc-a/web');
    expect(names).not.toContain('svc-a/db');
    const watching = n1().watch(
      `/api/v1/services?watch=1&allowWatchBookmarks=true&${selector}&resourceVersion=${list.body.metadata.resourceVersion}`,
      (e) => e.some((ev) => ev.type === 'ADDED'),
    );
    await admin.post('/api/v1/namespaces/default/services', svc('late'));
    expect((await watching).find((ev) => ev.type === 'ADDED')).toMatchObject({
      object: { metadata: { name: 'late' } },
    });
  });

  it('NodeRestriction: a node writes only its own Node, without restricted labels or taint changes', async () => {
    const node = n1();
    const label = (key: string) => ({ metadata: { labels: { [key]: 'x' } } });
    const own = await node.patch('/api/v1/nodes/n1', 'merge', label('team'));
    expect(own.status).toBe(200);
    for (const key of [
      'node-restriction.kubernetes.io/dedicated',
      'example.k8s.io/role',
      'kubernetes.io/role',
    ]) {
      const r = await node.patch('/api/v1/nodes/n1', 'merge', label(key));
      expect(r.status).toBe(403);
      expect(r.body.message).toBe(`nodes "n1" is forbidden: is not allowed to modify labels: ${key}`);
    }
    expect(
      (
        await node.patch(
          '/api/v1/nodes/n1',
          'merge',
          label('node.kubernetes.io/exclude-from-external-load-balancers'),
        )
      ).status,
    ).toBe(200);
    const taint = await node.patch('/api/v1/nodes/n1', 'merge', {
      spec: { taints: [{ key: 'k', effect: 'NoSchedule' }] },
    });
    expect(taint.body.message).toBe('nodes "n1" is forbidden: node "n1" is not allowed to modify taints');
    const other = await node.patch('/api/v1/nodes/n2/status', 'strategic', { status: { phase: 'Running' } });
    expect(other.status).toBe(403);
    expect(other.body.message).toBe('nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"');
    const create = await client('n2-token').post('/api/v1/nodes', {
      metadata: { name: 'n2b', labels: { 'node-restriction.kubernetes.io/pool': 'a' } },
    });
    expect(create.body.message).toBe(
      'nodes "n2b" is forbidden: node "n2" is not allowed to set the following labels: node-restriction.kubernetes.io/pool',
    );
    expect((await client('n2-token').post('/api/v1/nodes', { metadata: { name: 'n3' } })).body.message).toBe(
      'nodes "n3" is forbidden: node "n2" is not allowed to modify node "n3"',
    );
    expect(
      (await node.patch('/api/v1/nodes/n1/status', 'strategic', { status: { phase: 'Running' } })).status,
    ).toBe(200);
  });

  it('NodeRestriction: pods: only own mirror pods, and the status and eviction of pods bound to it', async () => {
    const node = n1();
    const pods = '/api/v1/namespaces/default/pods';
    expect((await node.post(pods, pod('plain', { nodeName: 'n1' }))).body.message).toBe(
      'pods "plain" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror pods',
    );
    expect((await node.post(pods, mirror('m2', 'n2'))).body.message).toBe(
      'pods "m2" is forbidden: node "n1" can only create pods with spec.nodeName set to itself',
    );
    const withSecret = mirror('ms', 'n1', { volumes: [{ name: 'v', secret: { secretName: 's1' } }] });
    expect((await node.post(pods, withSecret)).body.message).toBe(
      'pods "ms" is forbidden: node "n1" can not create pods that reference secrets',
    );
    const withSa = mirror('msa', 'n1', { serviceAccountName: 'default' });
    expect((await node.post(pods, withSa)).body.message).toContain(
      'can not create pods that reference a service account',
    );
    const m1 = await node.post(pods, mirror('m1', 'n1'));
    expect(m1.status).toBe(201);
    expect(m1.body.spec.serviceAccountName).toBeUndefined();
    expect((await node.delete(`${pods}/p2`)).body.message).toBe(
      'pods "p2" is forbidden: node "n1" can only delete pods with spec.nodeName set to itself',
    );
    expect((await node.delete(`${pods}/m1`, { gracePeriodSeconds: 0 })).status).toBe(200);

    const running = { status: { phase: 'Running' } };
    expect((await node.patch(`${pods}/p1/status`, 'strategic', running)).status).toBe(200);
    expect((await node.patch(`${pods}/p2/status`, 'strategic', running)).body.message).toBe(
      'pods "p2" is forbidden: node "n1" can only update pod status for pods with spec.nodeName set to itself',
    );
    const relabel = await node.patch(`${pods}/p1/status`, 'merge', { metadata: { labels: { a: 'b' } } });
    expect(relabel.body.message).toBe(
      'pods "p1" is forbidden: node "n1" cannot update labels through pod status',
    );
    // The main resource is not a node's to change; RBAC refuses before admission is asked.
    expect((await node.patch(`${pods}/p1`, 'merge', { metadata: { labels: { a: 'b' } } })).status).toBe(403);
    const evict = (name: string) =>
      node.post(`${pods}/${name}/eviction`, {
        apiVersion: 'policy/v1',
        kind: 'Eviction',
        metadata: { name },
      });
    expect((await evict('p2')).body.message).toBe(
      'pods "p2" is forbidden: node n1 can only evict pods with spec.nodeName set to itself',
    );
    expect((await client('admin-token').get(`${pods}/p2`)).status).toBe(200);
  });

  it('NodeRestriction: leases only in kube-node-lease, under its own name', async () => {
    const node = n1();
    expect((await node.post(LEASES, lease('n9'))).body.message).toBe(
      'leases.coordination.k8s.io "n9" is forbidden: can only access node lease with the same name as the requesting node',
    );
    const elsewhere = await node.post('/apis/coordination.k8s.io/v1/namespaces/default/leases', lease('n1'));
    expect(elsewhere.body.message).toContain(
      'can only access leases in the "kube-node-lease" system namespace',
    );
    expect((await node.put(`${LEASES}/n1`, lease('n1'))).status).toBe(200);
  });

  it('NodeRestriction: service account tokens only bound to a pod of its own, by uid', async () => {
    const admin = client('admin-token');
    const p1 = (await admin.get('/api/v1/namespaces/default/pods/p1')).body;
    const p2 = (await admin.get('/api/v1/namespaces/default/pods/p2')).body;
    const request = (token: string, boundObjectRef?: KObject) =>
      client(token).post('/api/v1/namespaces/default/serviceaccounts/default/token', {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: { audiences: ['api'], expirationSeconds: 3600, ...(boundObjectRef && { boundObjectRef }) },
      });
    const ref = (pod: KObject) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      name: pod.metadata.name,
      uid: pod.metadata.uid,
    });
    expect((await request('n1-token', ref(p1))).status).toBe(201);
    expect((await request('n1-token')).body.message).toBe(
      'serviceaccounts "default" is forbidden: node requested token not bound to a pod',
    );
    expect((await request('n1-token', { ...ref(p1), uid: 'stale' })).body.message).toContain(
      'the UID in the bound object reference (stale) does not match the UID in record',
    );
    // n2's pod p2 uses the same service account, so the authorizer lets n2 in; p1 is not n2's.
    expect((await request('n2-token', ref(p1))).body.message).toBe(
      'serviceaccounts "default" is forbidden: node requested token bound to a pod scheduled on a different node',
    );
    expect((await request('n2-token', ref(p2))).status).toBe(201);
  });

  it('answers SubjectAccessReviews about nodes with the Node authorizer and its reasons', async () => {
    // The reviews a kubelet in webhook mode asks are the node's to create.
    const review = await n1().post('/apis/authentication.k8s.io/v1/tokenreviews', {
      spec: { token: 'n2-token' },
    });
    expect(review.body.status.user.username).toBe('system:node:n2');
    const sar = (name: string) =>
      n1().post('/apis/authorization.k8s.io/v1/subjectaccessreviews', {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: {
          user: 'system:node:n2',
          groups: ['system:nodes'],
          resourceAttributes: { verb: 'get', resource: 'secrets', namespace: 'default', name },
        },
      });
    expect((await sar('s2')).body.status).toEqual({ allowed: true });
    expect((await sar('s1')).body.status).toEqual({
      allowed: false,
      reason: "no relationship found between node 'n2' and this object",
    });
  });
});
