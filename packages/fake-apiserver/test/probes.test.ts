// The security review's probe list (issue 36), asked by the real kubectl 1.33 as a node identity,
// as an unprivileged user and as an admin: each gets the answer kube-apiserver gives (Node,RBAC,
// the bootstrap policy, NodeRestriction and Pod Security admission).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiServer, UserInfo } from '../src/index.js';
import { ApiClient, KUBECTL, kubectl, nodeRbacServer, pod } from './helpers.js';

const USERS: Record<string, UserInfo> = {
  admin: { name: 'admin', uid: 'u-admin', groups: ['system:masters'] },
  // Unprivileged but for one right: create rolebindings in namespace team.
  dev: { name: 'dev', uid: 'u-dev', groups: [] },
  n1: { name: 'system:node:n1', uid: 'u-n1', groups: ['system:nodes'] },
};
type Who = keyof typeof USERS;
/**
 * What kubectl must say: it succeeded, an error from the server with this reason/text, or nothing
 * yet: the server still serves the request (a watch) when kubectl is stopped after `openMs`.
 */
type Answer = { ok: RegExp } | { error: RegExp } | { open: true };
const OPEN = { open: true } as const;
const openMs = 3_000;
const FORBIDDEN = { error: /\(Forbidden\)|is forbidden/ };

let s: ApiServer;
let vaultToken = '';
const dir = mkdtempSync(join(tmpdir(), 'kh-apiserver-probes-'));
const files: Record<string, string> = {};
const manifest = (name: string, obj: object) => {
  const path = join(dir, `${name}.json`);
  writeFileSync(path, JSON.stringify(obj));
  return path;
};

beforeAll(async () => {
  s = await nodeRbacServer(USERS);
  for (const who of Object.keys(USERS)) {
    files[who] = join(dir, `${who}.kubeconfig`);
    writeFileSync(files[who]!, s.kubeconfig({ token: who }));
  }
  const admin = new ApiClient(s.url, { token: 'admin', ca: s.caPem });
  await admin.post('/api/v1/namespaces', { metadata: { name: 'team' } });
  await admin.post('/api/v1/namespaces', {
    metadata: { name: 'locked', labels: { 'pod-security.kubernetes.io/enforce': 'baseline' } },
  });
  await admin.post('/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles', {
    metadata: { name: 'binder' },
    rules: [{ verbs: ['create'], apiGroups: ['rbac.authorization.k8s.io'], resources: ['rolebindings'] }],
  });
  await admin.post('/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings', {
    metadata: { name: 'binder' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'binder' },
    subjects: [{ kind: 'User', name: 'dev' }],
  });
  await new ApiClient(s.url, { token: 'n1', ca: s.caPem }).post('/api/v1/nodes', {
    metadata: { name: 'n1' },
  });
  await admin.post('/api/v1/nodes', { metadata: { name: 'n2' } });
  await admin.post('/api/v1/namespaces/team/pods', pod('web', { nodeName: 'n2' }));
  await admin.post('/api/v1/namespaces/team/secrets', { metadata: { name: 'db' } });
  // dev may also get pods and pods/exec: all a WebSocket exec (a GET) used to need.
  await admin.post('/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles', {
    metadata: { name: 'exec-getter' },
    rules: [{ verbs: ['get'], apiGroups: [''], resources: ['pods', 'pods/exec'] }],
  });
  await admin.post('/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings', {
    metadata: { name: 'exec-getter' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'exec-getter' },
    subjects: [{ kind: 'User', name: 'dev' }],
  });
  // A service account token minted for vault, not for the apiserver.
  await admin.post('/api/v1/namespaces/team/serviceaccounts', { metadata: { name: 'app' } });
  vaultToken = (
    await admin.post('/api/v1/namespaces/team/serviceaccounts/app/token', {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { audiences: ['vault'] },
    })
  ).body.status.token;
});
afterAll(async () => {
  await s.close();
  rmSync(dir, { recursive: true, force: true });
});

const subPathPod = pod('escape', {
  volumes: [{ name: 'v', emptyDir: {} }],
  containers: [
    { name: 'c', image: 'busybox', volumeMounts: [{ name: 'v', mountPath: '/d', subPath: '../../..' }] },
  ],
});
const absoluteSubPathPod = pod('etc', {
  volumes: [{ name: 'v', emptyDir: {} }],
  containers: [
    { name: 'c', image: 'busybox', volumeMounts: [{ name: 'v', mountPath: '/d', subPath: '/etc' }] },
  ],
});
const privilegedPod = pod('priv', {
  containers: [{ name: 'c', image: 'busybox', securityContext: { privileged: true } }],
});
const tokenReview = (token: string, audiences?: string[]) => ({
  apiVersion: 'authentication.k8s.io/v1',
  kind: 'TokenReview',
  spec: { token, audiences },
});

/** Each probe: kubectl's arguments and the answer per identity, as kube-apiserver answers. */
const PROBES: { name: string; args: (who: Who) => string[]; answers: Record<Who, Answer> }[] = [
  {
    name: 'bind cluster-admin to oneself',
    args: (who) => [
      'create',
      'rolebinding',
      `pwn-${who}`,
      '-n',
      'team',
      '--clusterrole=cluster-admin',
      `--user=${USERS[who]!.name}`,
    ],
    answers: {
      admin: { ok: /rolebinding.rbac.authorization.k8s.io\/pwn-admin created/ },
      dev: { error: /is attempting to grant RBAC permissions not currently held/ },
      n1: FORBIDDEN,
    },
  },
  {
    name: 'list secrets',
    args: () => ['get', 'secrets', '-n', 'team', '-o', 'name'],
    answers: { admin: { ok: /secret\/db/ }, dev: FORBIDDEN, n1: FORBIDDEN },
  },
  {
    name: 'exec into a pod (WebSocket first, then SPDY) with get but not create on pods/exec',
    args: () => ['exec', '-n', 'team', 'web', '--', 'id'],
    answers: {
      // Past authorization: the node has no kubelet endpoint.
      admin: { error: /advertises no kubelet endpoint/ },
      dev: {
        error: /User "dev" cannot create resource "pods\/exec" in API group "" in the namespace "team"/,
      },
      n1: FORBIDDEN,
    },
  },
  {
    name: 'a pod with subPath ../../..',
    args: () => ['create', '-n', 'team', '-f', manifest('escape', subPathPod)],
    answers: {
      admin: { error: /subPath: Invalid value: "..\/..\/..": must not contain '..'/ },
      dev: FORBIDDEN,
      n1: FORBIDDEN,
    },
  },
  {
    name: 'a pod with subPath /etc',
    args: () => ['create', '-n', 'team', '-f', manifest('etc', absoluteSubPathPod)],
    answers: {
      admin: { error: /subPath: Invalid value: "\/etc": must be a relative path/ },
      dev: FORBIDDEN,
      n1: FORBIDDEN,
    },
  },
  {
    name: 'a privileged pod where baseline is enforced',
    args: () => ['create', '-n', 'locked', '-f', manifest('priv', privilegedPod)],
    answers: {
      admin: { error: /violates PodSecurity "baseline:latest": privileged/ },
      dev: FORBIDDEN,
      n1: FORBIDDEN,
    },
  },
  {
    name: 'TokenReview of an apiserver token for audience vault',
    args: () => [
      'create',
      '--validate=false',
      '-o',
      'jsonpath={.status.authenticated}',
      '-f',
      manifest('review', tokenReview('admin', ['vault'])),
    ],
    answers: { admin: { ok: /^false$/ }, dev: FORBIDDEN, n1: { ok: /^false$/ } },
  },
  {
    name: "TokenReview of a token minted for vault, for the apiserver's audience",
    args: () => [
      'create',
      '--validate=false',
      '-o',
      'jsonpath={.status.authenticated}',
      '-f',
      manifest('vault-review', tokenReview(vaultToken, ['https://kubernetes.default.svc.cluster.local'])),
    ],
    answers: { admin: { ok: /^false$/ }, dev: FORBIDDEN, n1: { ok: /^false$/ } },
  },
  {
    name: 'fieldSelector=__proto__=x',
    args: () => ['get', 'pods', '-A', '--field-selector=spec.nodeName=n1,__proto__=x'],
    answers: {
      admin: { error: /\(BadRequest\).*field label not supported: __proto__/ },
      dev: FORBIDDEN,
      n1: { error: /\(BadRequest\).*field label not supported: __proto__/ },
    },
  },
  {
    name: 'a node address that is not an IP',
    args: () => [
      'patch',
      'node',
      'n1',
      '--subresource=status',
      '--type=merge',
      '-p',
      '{"status":{"addresses":[{"type":"InternalIP","address":"127.0.0.1/evil?x="}],"daemonEndpoints":{"kubeletEndpoint":{"Port":10250}}}}',
    ],
    answers: {
      admin: { error: /is invalid: status.addresses\[0\].address: Invalid value: "127.0.0.1\/evil\?x="/ },
      dev: FORBIDDEN,
      // kubectl reads nodes/status first, which upstream's node rules do not grant (its PATCH is
      // refused with 422 as well: security.test.ts).
      n1: FORBIDDEN,
    },
  },
  {
    name: "the apiserver's proxy to a node's kubelet",
    args: () => ['get', '--raw', '/api/v1/nodes/n1/proxy/healthz'],
    answers: {
      // Past authorization: n1 has no address to dial.
      admin: { error: /advertises no kubelet endpoint/ },
      dev: FORBIDDEN,
      n1: FORBIDDEN,
    },
  },
  {
    name: 'a watch with timeoutSeconds=99999999999',
    args: () => [
      'get',
      '--raw',
      '/api/v1/pods?watch=1&fieldSelector=spec.nodeName%3Dn1&timeoutSeconds=99999999999',
    ],
    answers: { admin: OPEN, dev: FORBIDDEN, n1: OPEN },
  },
  {
    name: "patch another node's pod status",
    args: () => [
      'patch',
      'pod',
      'web',
      '-n',
      'team',
      '--subresource=status',
      '--type=merge',
      '-p',
      '{"status":{"message":"x"}}',
    ],
    answers: { admin: { ok: /pod\/web patched/ }, dev: FORBIDDEN, n1: FORBIDDEN },
  },
  {
    name: 'delete another node',
    args: () => ['delete', 'node', 'n2', '--dry-run=server'],
    answers: { admin: { ok: /node "n2" deleted \(server dry run\)/ }, dev: FORBIDDEN, n1: FORBIDDEN },
  },
  {
    name: 'set a restricted label on its own node',
    args: () => ['label', 'node', 'n1', 'node-restriction.kubernetes.io/pool=gold', '--dry-run=server'],
    answers: { admin: { ok: /node\/n1 labeled/ }, dev: FORBIDDEN, n1: FORBIDDEN },
  },
];

describe("kubectl 1.33 gets kube-apiserver's answers to the security probes", () => {
  for (const probe of PROBES) {
    for (const who of Object.keys(USERS) as Who[]) {
      it(`${probe.name}, as ${USERS[who]!.name}`, async () => {
        const want = probe.answers[who]!;
        const started = performance.now();
        const r = await kubectl(
          KUBECTL.newest,
          files[who]!,
          probe.args(who),
          'open' in want ? openMs : undefined,
        );
        if ('open' in want) {
          expect(r.stderr).toBe('');
          expect(performance.now() - started).toBeGreaterThanOrEqual(openMs);
        } else if ('ok' in want) {
          expect(r.code, r.stderr).toBe(0);
          expect(r.stdout.trim()).toMatch(want.ok);
        } else {
          expect(r.code, r.stdout).not.toBe(0);
          expect(r.stderr).toMatch(want.error);
        }
      });
    }
  }
});
