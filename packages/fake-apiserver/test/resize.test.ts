import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KObject } from '../src/meta/object.js';
import { type Harness, KUBECTL, kubectl, startHarness, TOKEN } from './helpers.js';

const NS = '/api/v1/namespaces/default/pods';

/** A pod whose containers get the given resources. */
function sized(name: string, ...resources: KObject[]): KObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: {
      nodeName: 'node-a',
      containers: resources.map((r, i) => ({
        name: `c${i + 1}`,
        image: 'busybox:1.36',
        command: ['sleep', '3600'],
        resources: r,
      })),
    },
  };
}

const guaranteed = { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '100m', memory: '64Mi' } };
const burstable = { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '200m', memory: '128Mi' } };
const setResources = (r: KObject) => ({ spec: { containers: [{ name: 'c1', resources: r }] } });

describe('pods/resize (InPlacePodVerticalScaling, 1.33)', () => {
  let h: Harness;
  const create = async (p: KObject) => {
    const res = await h.api.post(NS, p);
    expect(res.status).toBe(201);
    return res.body;
  };
  const resize = (name: string, patch: unknown, type: 'json' | 'merge' | 'strategic' = 'strategic') =>
    h.api.patch(`${NS}/${name}/resize`, type, patch);

  beforeAll(async () => {
    h = await startHarness({ scheduler: false, nodeLifecycle: false });
  });
  afterAll(async () => {
    await h?.stop();
  });

  it('is listed in discovery with get, patch and update', async () => {
    const list = (await h.api.get('/api/v1')).body;
    const sub = list.resources.find((r: KObject) => r.name === 'pods/resize');
    expect(sub).toMatchObject({ kind: 'Pod', namespaced: true, verbs: ['get', 'patch', 'update'] });
  });

  it('kubectl 1.33 patch --subresource resize changes cpu and memory and bumps the generation', async () => {
    const before = await create(sized('kubectl-rz', guaranteed));
    const kubeconfig = join(h.dir, 'kubeconfig');
    const patch = JSON.stringify(
      setResources({ requests: { cpu: '200m', memory: '128Mi' }, limits: { cpu: '200m', memory: '128Mi' } }),
    );
    const out = await kubectl(KUBECTL.newest, kubeconfig, [
      'patch',
      'pod',
      'kubectl-rz',
      '--subresource',
      'resize',
      '--patch',
      patch,
    ]);
    expect(out.stderr).toBe('');
    expect(out.stdout.trim()).toBe('pod/kubectl-rz patched');
    const after = (await h.api.get(`${NS}/kubectl-rz`)).body;
    expect(after.spec.containers[0].resources).toEqual({
      requests: { cpu: '200m', memory: '128Mi' },
      limits: { cpu: '200m', memory: '128Mi' },
    });
    expect(after.metadata.generation).toBe(before.metadata.generation + 1);
    expect(after.status.qosClass).toBe('Guaranteed');
    // GET on the subresource is the pod, as kubectl reads it before patching.
    const got = await h.api.get(`${NS}/kubectl-rz/resize`);
    expect(got.status).toBe(200);
    expect(got.body.metadata.resourceVersion).toBe(after.metadata.resourceVersion);
  });

  it('takes merge and JSON patches and a PUT, and drops everything but resources and resizePolicy', async () => {
    await create(sized('forms', burstable));
    const merged = await resize('forms', { metadata: { labels: { x: 'y' } }, ...setResources({}) }, 'merge');
    // A merge patch replaces the container list: the container loses everything but its name and
    // resources, which the resize strategy drops, keeping the image; the labels are dropped too.
    expect(merged.status).toBe(422);
    expect(merged.body.message).toContain('resource requests cannot be removed');
    const json = await resize(
      'forms',
      [{ op: 'replace', path: '/spec/containers/0/resources/limits/cpu', value: '300m' }],
      'json',
    );
    expect(json.status).toBe(200);
    expect(json.body.spec.containers[0].resources.limits.cpu).toBe('300m');
    const put = structuredClone(json.body);
    put.spec.containers[0].resources.requests.memory = '100Mi';
    put.spec.containers[0].image = 'busybox:9.9';
    put.spec.containers[0].resizePolicy = [{ resourceName: 'memory', restartPolicy: 'RestartContainer' }];
    put.metadata.labels = { dropped: 'yes' };
    const replaced = await h.api.put(`${NS}/forms/resize`, put);
    expect(replaced.status).toBe(200);
    const c = replaced.body.spec.containers[0];
    expect(c.resources.requests.memory).toBe('100Mi');
    expect(c.resizePolicy).toEqual([{ resourceName: 'memory', restartPolicy: 'RestartContainer' }]);
    expect(c.image).toBe('busybox:1.36');
    expect(replaced.body.metadata.labels).toBeUndefined();
    // A stale resourceVersion in a PUT is a conflict, as on every update.
    const stale = await h.api.put(`${NS}/forms/resize`, put);
    expect(stale.status).toBe(409);
  });

  it.each([
    [
      'a QoS change (Guaranteed to Burstable)',
      guaranteed,
      setResources({ requests: { cpu: '50m' } }),
      'spec: Invalid value: "Guaranteed": Pod QOS Class may not change as a result of resizing',
    ],
    [
      'a QoS change (BestEffort to Burstable)',
      {},
      setResources({ requests: { memory: '400Mi' } }),
      'Pod QOS Class may not change as a result of resizing',
    ],
    [
      'a resource other than cpu and memory',
      burstable,
      setResources({ limits: { 'ephemeral-storage': '1Gi' } }),
      'spec: Forbidden: only cpu and memory resources are mutable',
    ],
    [
      'a request above its limit',
      burstable,
      setResources({ requests: { cpu: '500m' } }),
      'spec.containers[0].resources.requests: Invalid value: "500m": must be less than or equal to cpu limit of 200m',
    ],
    [
      'a removed request',
      // Without a limit: a limit would default the request back.
      { requests: { cpu: '100m', memory: '64Mi' } },
      setResources({ requests: { memory: null } }),
      'spec.containers[0].resources.requests: Forbidden: resource requests cannot be removed',
    ],
    [
      'a removed limit',
      burstable,
      setResources({ limits: { cpu: null } }),
      'spec.containers[0].resources.limits: Forbidden: resource limits cannot be removed',
    ],
    [
      'an unknown resize policy',
      burstable,
      {
        spec: {
          containers: [{ name: 'c1', resizePolicy: [{ resourceName: 'cpu', restartPolicy: 'Sometimes' }] }],
        },
      },
      'spec.containers[0].resizePolicy[0].restartPolicy: Unsupported value: "Sometimes"',
    ],
  ])('refuses %s with 422 Invalid in upstream words', async (_what, resources, patch, message) => {
    const name = `bad-${Math.random().toString(36).slice(2, 8)}`;
    const before = await create(sized(name, resources));
    const res = await resize(name, patch);
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ kind: 'Status', reason: 'Invalid', code: 422 });
    expect(res.body.message).toContain(`Pod "${name}" is invalid: `);
    expect(res.body.message).toContain(message);
    const after = (await h.api.get(`${NS}/${name}`)).body;
    expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
  });

  it('refuses reordered containers, static pods and a node that reports no container resources', async () => {
    await create(sized('two', burstable, burstable));
    const swapped = await resize(
      'two',
      [
        { op: 'move', from: '/spec/containers/1', path: '/spec/containers/0' },
        { op: 'replace', path: '/spec/containers/0/resources/limits/cpu', value: '300m' },
      ],
      'json',
    );
    expect(swapped.status).toBe(422);
    expect(swapped.body.message).toContain(
      'spec.containers[0].name: Forbidden: containers may not be renamed or reordered on resize',
    );

    const mirror = sized('static', burstable);
    mirror.metadata.annotations = { 'kubernetes.io/config.mirror': 'hash' };
    await create(mirror);
    const s = await resize('static', setResources({ limits: { cpu: '300m' } }));
    expect(s.status).toBe(422);
    expect(s.body.message).toBe(
      // field.NewPath("") as upstream: an empty field before the colon.
      'Pod "static" is invalid: : Forbidden: static pods cannot be resized',
    );

    const old = await create(sized('old-node', burstable));
    old.status.containerStatuses = [
      {
        name: 'c1',
        image: 'busybox:1.36',
        imageID: '',
        ready: true,
        restartCount: 0,
        state: { running: {} },
      },
    ];
    expect((await h.api.put(`${NS}/old-node/status`, old)).status).toBe(200);
    const skew = await resize('old-node', setResources({ limits: { cpu: '300m' } }));
    expect(skew.status).toBe(422);
    expect(skew.body.message).toContain('spec: Forbidden: Pod running on node without support for resize');
    // Once the node reports what the runtime applied, the same resize goes through.
    old.status.containerStatuses[0].resources = burstable;
    const cur = (await h.api.get(`${NS}/old-node`)).body;
    old.metadata.resourceVersion = cur.metadata.resourceVersion;
    expect((await h.api.put(`${NS}/old-node/status`, old)).status).toBe(200);
    expect((await resize('old-node', setResources({ limits: { cpu: '300m' } }))).status).toBe(200);
  });

  describe('init containers', () => {
    /** c1 with a sidecar c1-init and a regular init container, all Burstable. */
    const withInits = (name: string) => {
      const p = sized(name, burstable);
      const init = (n: string, restartPolicy?: string) => ({
        name: n,
        image: 'busybox:1.36',
        command: ['true'],
        resources: burstable,
        ...(restartPolicy ? { restartPolicy } : {}),
      });
      p.spec.initContainers = [init('c1-init', 'Always'), init('setup')];
      return p;
    };
    const initPatch = (name: string, r: KObject, extra: KObject = {}) => ({
      spec: { initContainers: [{ name, resources: r, ...extra }] },
    });

    it('kubectl 1.33 resizes a restartable init container (sidecar) and its resizePolicy', async () => {
      const before = await create(withInits('sidecar'));
      const kubeconfig = join(h.dir, 'kubeconfig');
      const up = { requests: { cpu: '150m', memory: '96Mi' }, limits: { cpu: '250m', memory: '160Mi' } };
      const out = await kubectl(KUBECTL.newest, kubeconfig, [
        'patch',
        'pod',
        'sidecar',
        '--subresource',
        'resize',
        '--patch',
        JSON.stringify(initPatch('c1-init', up)),
      ]);
      expect(out.stderr).toBe('');
      const after = (await h.api.get(`${NS}/sidecar`)).body;
      expect(after.spec.initContainers[0].resources).toEqual(up);
      expect(after.spec.initContainers[1].resources).toEqual(burstable);
      expect(after.spec.containers[0].resources).toEqual(burstable);
      expect(after.metadata.generation).toBe(before.metadata.generation + 1);
      const policy = [{ resourceName: 'cpu', restartPolicy: 'RestartContainer' }];
      const res = await resize('sidecar', initPatch('c1-init', up, { resizePolicy: policy }));
      expect(res.status).toBe(200);
      expect(res.body.spec.initContainers[0].resizePolicy).toEqual(policy);
    });

    it.each([
      [
        'a regular init container',
        initPatch('setup', { requests: { cpu: '150m' } }),
        'spec: Forbidden: resources for non-sidecar init containers are immutable',
      ],
      [
        "a sidecar's removed limit",
        initPatch('c1-init', { limits: { cpu: null } }),
        'spec.initContainers[0].resources.limits: Forbidden: resource limits cannot be removed',
      ],
      [
        'a sidecar resource other than cpu and memory',
        initPatch('c1-init', { limits: { 'ephemeral-storage': '1Gi' } }),
        'spec: Forbidden: only cpu and memory resources are mutable',
      ],
      [
        'reordered init containers',
        [{ op: 'move', from: '/spec/initContainers/1', path: '/spec/initContainers/0' }],
        'spec.initContainers[0].name: Forbidden: initContainers may not be renamed or reordered on resize',
      ],
      [
        'a removed init container',
        [{ op: 'remove', path: '/spec/initContainers/1' }],
        'spec.initContainers: Forbidden: initContainers may not be added or removed on resize',
      ],
    ])('refuses %s with 422 in upstream words', async (_what, patch, message) => {
      const name = `init-${Math.random().toString(36).slice(2, 8)}`;
      const before = await create(withInits(name));
      const res = await resize(name, patch, Array.isArray(patch) ? 'json' : 'strategic');
      expect(res.status).toBe(422);
      expect(res.body.message).toContain(message);
      const after = (await h.api.get(`${NS}/${name}`)).body;
      expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
    });
  });

  it('keeps resources immutable through the pods resource itself', async () => {
    await create(sized('plain', burstable));
    const res = await h.api.patch(`${NS}/plain`, 'strategic', setResources({ limits: { cpu: '300m' } }));
    expect(res.status).toBe(422);
    expect(res.body.message).toContain('spec: Forbidden: pod updates may not change fields other than');
  });

  it('reports 404 for a missing pod', async () => {
    const res = await resize('nope', setResources({ limits: { cpu: '300m' } }));
    expect(res.status).toBe(404);
    expect(res.body.message).toBe('pods "nope" not found');
  });

  it('is authorized as the patch verb on pods/resize', async () => {
    const rbac = await startHarness({
      authorizationMode: 'RBAC',
      scheduler: false,
      nodeLifecycle: false,
      tokens: new Map([[TOKEN, { name: 'admin', uid: 'u-admin', groups: ['system:masters'] }]]),
    });
    try {
      expect((await rbac.api.post(NS, sized('guarded', burstable))).status).toBe(201);
      const role = {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'pod-patcher' },
        rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'patch'] }],
      };
      const rb = '/apis/rbac.authorization.k8s.io/v1/namespaces/default';
      expect((await rbac.api.post(`${rb}/roles`, role)).status).toBe(201);
      const review = (verb: string, subresource: string) =>
        rbac.api.post('/apis/authorization.k8s.io/v1/subjectaccessreviews', {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SubjectAccessReview',
          spec: {
            user: 'dev',
            resourceAttributes: {
              namespace: 'default',
              verb,
              resource: 'pods',
              subresource,
              name: 'guarded',
            },
          },
        });
      await rbac.api.post(`${rb}/rolebindings`, {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'dev' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'pod-patcher' },
        subjects: [{ kind: 'User', name: 'dev', apiGroup: 'rbac.authorization.k8s.io' }],
      });
      expect((await review('patch', '')).body.status.allowed).toBe(true);
      expect((await review('patch', 'resize')).body.status.allowed).toBe(false);
      role.rules.push({ apiGroups: [''], resources: ['pods/resize'], verbs: ['patch'] });
      expect((await rbac.api.put(`${rb}/roles/pod-patcher`, role)).status).toBe(200);
      expect((await review('patch', 'resize')).body.status.allowed).toBe(true);
    } finally {
      await rbac.stop();
    }
  });
});
