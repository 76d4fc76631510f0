import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient, eventually, type Harness, pod, readyNode, startHarness, TOKEN } from './helpers.js';

const PODS = '/api/v1/namespaces/default/pods';

describe('API semantics', () => {
  let h: Harness;
  let api: ApiClient;

  beforeAll(async () => {
    h = await startHarness({ scheduler: false, watchCacheSize: 50, bookmarkIntervalSeconds: 0.2 });
    api = h.api;
  });
  afterAll(async () => {
    await h?.stop();
  });

  describe('discovery and OpenAPI', () => {
    it('serves version, legacy and group discovery', async () => {
      expect((await api.get('/version')).body).toMatchObject({ major: '1', minor: '33' });
      expect((await api.get('/api')).body).toMatchObject({ kind: 'APIVersions', versions: ['v1'] });
      const v1 = (await api.get('/api/v1')).body;
      const names = v1.resources.map((r: { name: string }) => r.name);
      expect(names).toEqual(
        expect.arrayContaining([
          'pods',
          'pods/status',
          'pods/binding',
          'pods/eviction',
          'pods/log',
          'nodes',
          'nodes/status',
          'namespaces',
          'events',
          'configmaps',
          'secrets',
          'serviceaccounts',
        ]),
      );
      const groups = (await api.get('/apis')).body.groups.map((g: { name: string }) => g.name);
      expect(groups).toEqual([
        'coordination.k8s.io',
        'events.k8s.io',
        'authentication.k8s.io',
        'authorization.k8s.io',
        'rbac.authorization.k8s.io',
        'node.k8s.io',
        'scheduling.k8s.io',
      ]);
      expect((await api.get('/apis/coordination.k8s.io/v1')).body.resources[0]).toMatchObject({
        name: 'leases',
        namespaced: true,
        kind: 'Lease',
      });
    });

    it('answers aggregated discovery when asked for it', async () => {
      const res = await api.get('/apis', {
        Accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json',
      });
      expect(res.headers['content-type']).toBe(
        'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList',
      );
      expect(res.body.kind).toBe('APIGroupDiscoveryList');
      const lease = res.body.items.find(
        (i: { metadata: { name: string } }) => i.metadata.name === 'coordination.k8s.io',
      );
      expect(lease.versions[0].resources[0]).toMatchObject({
        resource: 'leases',
        scope: 'Namespaced',
        responseKind: { kind: 'Lease' },
      });
    });

    it('publishes OpenAPI v2 (JSON and protobuf) and v3 with the patch merge keys', async () => {
      const v2 = (await api.get('/openapi/v2')).body;
      const spec = v2.definitions['io.k8s.api.core.v1.PodSpec'];
      expect(spec.properties.containers).toMatchObject({
        'x-kubernetes-patch-merge-key': 'name',
        'x-kubernetes-patch-strategy': 'merge',
      });
      const proto = await api.get('/openapi/v2', {
        Accept: 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf',
      });
      expect(proto.headers['content-type']).toMatch(/protobuf/);
      expect(proto.text).toContain('io.k8s.api.core.v1.Pod');
      const root = (await api.get('/openapi/v3')).body;
      const url = root.paths['api/v1'].serverRelativeURL;
      const doc = (await api.get(url)).body;
      expect(
        doc.components.schemas['io.k8s.api.core.v1.NodeStatus'].properties.addresses[
          'x-kubernetes-patch-merge-key'
        ],
      ).toBe('type');
      const patchOp = doc.paths['/api/v1/namespaces/{namespace}/pods/{name}'].patch;
      expect(patchOp['x-kubernetes-group-version-kind']).toEqual({ group: '', version: 'v1', kind: 'Pod' });
      expect(patchOp.parameters.map((p: { name: string }) => p.name)).toContain('fieldValidation');
    });

    it('negotiates Table and PartialObjectMetadata representations', async () => {
      const table = await api.get('/api/v1/namespaces', {
        Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json',
      });
      expect(table.body).toMatchObject({ kind: 'Table', apiVersion: 'meta.k8s.io/v1' });
      expect(table.body.columnDefinitions.map((c: { name: string }) => c.name)).toEqual([
        'Name',
        'Status',
        'Age',
      ]);
      expect(table.body.rows[0].object.kind).toBe('PartialObjectMetadata');
      const meta = await api.get('/api/v1/namespaces', {
        Accept:
          'application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1',
      });
      expect(meta.body.kind).toBe('PartialObjectMetadataList');
      expect(meta.body.items[0]).toEqual({
        kind: 'PartialObjectMetadata',
        apiVersion: 'meta.k8s.io/v1',
        metadata: expect.objectContaining({ name: 'default' }),
      });
      const one = await api.get('/api/v1/namespaces/default', {
        Accept: 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1',
      });
      expect(one.body.kind).toBe('PartialObjectMetadata');
      expect(one.body.spec).toBeUndefined();
      const proto = await api.get('/api/v1/namespaces/default', {
        Accept: 'application/vnd.kubernetes.protobuf',
      });
      expect(proto.headers['content-type']).toBe('application/json');
      expect(proto.body.kind).toBe('Namespace');
    });

    it('answers health probes without credentials', async () => {
      const anon = new ApiClient(h.server.url, { ca: h.server.caPem });
      for (const p of ['/healthz', '/readyz', '/livez']) expect((await anon.get(p)).text).toBe('ok');
    });
  });

  describe('authentication', () => {
    it('refuses a missing or wrong token with 401 Status', async () => {
      const anon = new ApiClient(h.server.url, { ca: h.server.caPem });
      const res = await anon.get('/api/v1/namespaces');
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ kind: 'Status', reason: 'Unauthorized', code: 401 });
      const wrong = new ApiClient(h.server.url, { ca: h.server.caPem, token: 'nope' });
      expect((await wrong.get('/api/v1/namespaces')).status).toBe(401);
      expect((await api.get('/api/v1/namespaces')).status).toBe(200);
    });
  });

  describe('create, update and errors', () => {
    it('fills uid, creationTimestamp, generation and a generated name', async () => {
      const res = await api.post(PODS, { ...pod(''), metadata: { generateName: 'gen-' } });
      expect(res.status).toBe(201);
      expect(res.body.metadata.name).toMatch(/^gen-[a-z0-9]{5}$/);
      expect(res.body.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
      expect(res.body.metadata.creationTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      expect(res.body.metadata.generation).toBe(1);
      // Kinds without a generation-tracking strategy carry none.
      const cm = await api.post('/api/v1/namespaces/default/configmaps', {
        metadata: { name: 'nogen', generation: 7 },
      });
      expect(cm.body.metadata.generation).toBeUndefined();
      expect(res.body.status).toEqual({ phase: 'Pending', qosClass: 'BestEffort' });
    });

    it('applies pod defaults', async () => {
      const body = pod('defaults', {
        containers: [
          {
            name: 'c',
            image: 'busybox',
            resources: { limits: { cpu: '1', memory: '1Gi' } },
            readinessProbe: { httpGet: { port: 80 } },
            ports: [{ containerPort: 80 }],
          },
        ],
      });
      const p = (await api.post(PODS, body)).body;
      expect(p.spec).toMatchObject({
        restartPolicy: 'Always',
        terminationGracePeriodSeconds: 30,
        dnsPolicy: 'ClusterFirst',
        schedulerName: 'default-scheduler',
        serviceAccountName: 'default',
      });
      const c = p.spec.containers[0];
      expect(c.imagePullPolicy).toBe('Always');
      expect(c.resources.requests).toEqual({ cpu: '1', memory: '1Gi' });
      expect(c.readinessProbe).toEqual({
        httpGet: { port: 80, path: '/', scheme: 'HTTP' },
        timeoutSeconds: 1,
        periodSeconds: 10,
        successThreshold: 1,
        failureThreshold: 3,
      });
      expect(c.ports[0].protocol).toBe('TCP');
      expect(p.status.qosClass).toBe('Guaranteed');
    });

    it('answers 409 AlreadyExists and 409 Conflict on a stale resourceVersion', async () => {
      const created = (await api.post(PODS, pod('conflict'))).body;
      const dup = await api.post(PODS, pod('conflict'));
      expect(dup.status).toBe(409);
      expect(dup.body).toMatchObject({ reason: 'AlreadyExists', message: 'pods "conflict" already exists' });
      const first = await api.put(`${PODS}/conflict`, {
        ...created,
        metadata: { ...created.metadata, labels: { a: '1' } },
      });
      expect(first.status).toBe(200);
      const stale = await api.put(`${PODS}/conflict`, {
        ...created,
        metadata: { ...created.metadata, labels: { a: '2' } },
      });
      expect(stale.status).toBe(409);
      expect(stale.body).toMatchObject({
        reason: 'Conflict',
        message:
          'Operation cannot be fulfilled on pods "conflict": the object has been modified; please apply your changes to the latest version and try again',
      });
      // A no-op update keeps the resourceVersion.
      const same = await api.put(`${PODS}/conflict`, first.body);
      expect(same.body.metadata.resourceVersion).toBe(first.body.metadata.resourceVersion);
    });

    it('compares objects regardless of key order (a sorted-keys PUT of an unchanged pod is a no-op)', async () => {
      const p = (await api.post(PODS, pod('sorted'))).body;
      const sortKeys = (v: unknown): unknown =>
        Array.isArray(v)
          ? v.map(sortKeys)
          : v !== null && typeof v === 'object'
            ? Object.fromEntries(
                Object.keys(v)
                  .sort()
                  .map((k) => [k, sortKeys((v as Record<string, unknown>)[k])]),
              )
            : v;
      const same = await api.put(`${PODS}/sorted`, sortKeys(p));
      expect(same.status, same.text).toBe(200);
      expect(same.body.metadata.resourceVersion).toBe(p.metadata.resourceVersion);
      expect(same.body.metadata.generation).toBe(1);
      const relabelled = await api.put(
        `${PODS}/sorted`,
        sortKeys({ ...p, metadata: { ...p.metadata, labels: { a: 'b' } } }),
      );
      expect(relabelled.status, relabelled.text).toBe(200);
      expect(relabelled.body.metadata.generation).toBe(1);
    });

    it('keeps status and spec apart', async () => {
      const p = (await api.post(PODS, pod('split'))).body;
      const viaMain = await api.put(`${PODS}/split`, { ...p, status: { phase: 'Running' } });
      expect(viaMain.body.status.phase).toBe('Pending');
      const viaStatus = await api.put(`${PODS}/split/status`, {
        ...viaMain.body,
        spec: { ...viaMain.body.spec, activeDeadlineSeconds: 5 },
        status: { ...viaMain.body.status, phase: 'Running' },
      });
      expect(viaStatus.status).toBe(200);
      expect(viaStatus.body.status.phase).toBe('Running');
      expect(viaStatus.body.spec.activeDeadlineSeconds).toBeUndefined();
      expect(viaStatus.body.metadata.generation).toBe(1);
    });

    it('validates pods with 422 causes', async () => {
      const res = await api.post(PODS, {
        metadata: { name: 'Bad_Name' },
        spec: { restartPolicy: 'Sometimes', containers: [{ name: 'c' }] },
      });
      expect(res.status).toBe(422);
      expect(res.body.reason).toBe('Invalid');
      expect(res.body.details.kind).toBe('Pod');
      const fields = res.body.details.causes.map(
        (c: { field: string; reason: string }) => `${c.field}:${c.reason}`,
      );
      expect(fields).toEqual(
        expect.arrayContaining([
          'metadata.name:FieldValueInvalid',
          'spec.containers[0].image:FieldValueRequired',
          'spec.restartPolicy:FieldValueNotSupported',
        ]),
      );
      const noContainers = await api.post(PODS, { metadata: { name: 'empty' }, spec: { containers: [] } });
      expect(noContainers.body.message).toBe('Pod "empty" is invalid: spec.containers: Required value');
      const immutable = (await api.post(PODS, pod('immutable'))).body;
      const changed = await api.put(`${PODS}/immutable`, {
        ...immutable,
        spec: { ...immutable.spec, restartPolicy: 'Never' },
      });
      expect(changed.status).toBe(422);
      expect(changed.body.message).toMatch(/pod updates may not change fields other than/);
    });

    it('validates resource quantities in pods and node status', async () => {
      const container = (resources: object) => ({
        containers: [{ name: 'c', image: 'busybox:1.36', resources }],
      });
      const causes = (res: Awaited<ReturnType<typeof api.post>>) =>
        res.body.details.causes.map((c: { field: string; message: string }) => `${c.field}: ${c.message}`);
      const bad = await api.post(
        PODS,
        pod('bad-quantities', container({ requests: { cpu: '12Q', memory: '-1Mi' }, limits: { cpu: 1 } })),
      );
      expect(bad.status).toBe(422);
      expect(causes(bad)).toEqual(
        expect.arrayContaining([
          expect.stringMatching(
            /^spec\.containers\[0\]\.resources\.requests\[cpu\]: .*must be a valid quantity/,
          ),
          expect.stringMatching(
            /^spec\.containers\[0\]\.resources\.requests\[memory\]: .*must be greater than or equal to 0/,
          ),
        ]),
      );
      const overLimit = await api.post(
        PODS,
        pod('over-limit', container({ requests: { cpu: '1001m' }, limits: { cpu: '1' } })),
      );
      expect(overLimit.status).toBe(422);
      expect(causes(overLimit).join('\n')).toMatch(/must be less than or equal to cpu limit of 1/);
      // Exact arithmetic: 1000m equals 1, and JSON numbers are quantities too.
      const equal = await api.post(
        PODS,
        pod(
          'at-limit',
          container({ requests: { cpu: '1000m', memory: 1024 }, limits: { cpu: 1, memory: '1Ki' } }),
        ),
      );
      expect(equal.status, equal.text).toBe(201);
      // Extended resources: integers, never overcommitted, and names that follow the standard.
      const dummy = 'dummy.com/dummy';
      const extended = await api.post(
        PODS,
        pod(
          'bad-extended',
          container({
            requests: { [dummy]: '500m', 'example.com/gpu': '1', 'hugepages-2Mi': '2Mi', widgets: '1' },
            limits: { [dummy]: '1', 'example.com/gpu': '2', 'hugepages-2Mi': '4Mi', 'Bad.example/x': '1' },
          }),
        ),
      );
      expect(extended.status).toBe(422);
      expect(causes(extended)).toEqual(
        expect.arrayContaining([
          `spec.containers[0].resources.requests[${dummy}]: Invalid value: "500m": must be an integer`,
          'spec.containers[0].resources.requests: Invalid value: "1": must be equal to example.com/gpu limit of 2',
          'spec.containers[0].resources.requests: Invalid value: "2Mi": must be equal to hugepages-2Mi limit of 4Mi',
          'spec.containers[0].resources.requests[widgets]: Invalid value: "widgets": must be a standard resource for containers',
          expect.stringMatching(
            /^spec\.containers\[0\]\.resources\.limits\[Bad\.example\/x\]: .*prefix part/,
          ),
        ]),
      );
      const noLimit = await api.post(PODS, pod('no-limit', container({ requests: { [dummy]: '1' } })));
      expect(causes(noLimit)).toEqual([
        'spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources',
      ]);
      const fits = await api.post(PODS, pod('extended', container({ limits: { [dummy]: '1' } })));
      expect(fits.status, fits.text).toBe(201);
      expect(fits.body.spec.containers[0].resources.requests).toEqual({ [dummy]: '1' });
      const node = readyNode('bad-capacity');
      node.status.capacity.memory = '8GB';
      const badNode = await api.post('/api/v1/nodes', node);
      expect(badNode.status).toBe(422);
      expect(causes(badNode).join('\n')).toMatch(/status\.capacity\[memory\]: .*must be a valid quantity/);
    });

    it('answers 400 for malformed bodies, 404 for unknown resources, 413 and 415', async () => {
      const malformed = await api.post(PODS, '{"metadata": ', { 'Content-Type': 'application/json' });
      expect(malformed.status).toBe(400);
      expect(malformed.body.kind).toBe('Status');
      const wrongType = await api.post(PODS, { metadata: { name: 'x' }, spec: { containers: 'no' } });
      expect(wrongType.status).toBe(400);
      expect(wrongType.body.message).toMatch(/cannot unmarshal/);
      const wrongKind = await api.post(PODS, { apiVersion: 'apps/v1', kind: 'Pod', metadata: { name: 'x' } });
      expect(wrongKind.status).toBe(400);
      const unknown = await api.get('/api/v1/namespaces/default/widgets');
      expect(unknown.status).toBe(404);
      expect(unknown.body).toMatchObject({
        kind: 'Status',
        reason: 'NotFound',
        message: 'the server could not find the requested resource',
      });
      const missing = await api.get(`${PODS}/nope`);
      expect(missing.body).toMatchObject({ code: 404, details: { name: 'nope', kind: 'pods' } });
      const huge = await api.post('/api/v1/namespaces/default/configmaps', {
        metadata: { name: 'huge' },
        data: { blob: 'x'.repeat(4 * 1024 * 1024) },
      });
      expect(huge.status).toBe(413);
      expect(huge.body.reason).toBe('RequestEntityTooLarge');
      const apply = await api.request('PATCH', `${PODS}/defaults`, 'metadata: {}', {
        'Content-Type': 'application/apply-patch+yaml',
      });
      expect(apply.status).toBe(415);
      expect(apply.body.message).toMatch(/server-side apply is not supported/);
      const proto = await api.post(PODS, Buffer.from([0x6b, 0x38, 0x73, 0]), {
        'Content-Type': 'application/vnd.kubernetes.protobuf',
      });
      expect(proto.status).toBe(415);
    });

    it('honours fieldValidation Strict, Warn and Ignore', async () => {
      const body = (name: string) => ({ ...pod(name), spec: { ...pod(name).spec, bogus: 1 } });
      const strict = await api.post(`${PODS}?fieldValidation=Strict`, body('strict'));
      expect(strict.status).toBe(400);
      expect(strict.body.message).toBe(
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "spec.bogus"',
      );
      const warn = await api.post(`${PODS}?fieldValidation=Warn`, body('warn'));
      expect(warn.status).toBe(201);
      expect(warn.headers.warning).toBe('299 - "unknown field \\"spec.bogus\\""');
      expect(warn.body.spec.bogus).toBeUndefined();
      const ignore = await api.post(`${PODS}?fieldValidation=Ignore`, body('ignore'));
      expect(ignore.status).toBe(201);
      expect(ignore.headers.warning).toBeUndefined();
    });

    it('answers 405 for verbs a resource does not have', async () => {
      const list = await api.get('/apis/authentication.k8s.io/v1/selfsubjectreviews');
      expect(list.status).toBe(405);
      expect(list.body).toMatchObject({ kind: 'Status', reason: 'MethodNotAllowed' });
      expect((await api.delete('/api/v1/namespaces')).status).toBe(405);
      const review = await api.post('/apis/authentication.k8s.io/v1/selfsubjectreviews', {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'SelfSubjectReview',
      });
      expect(review.status).toBe(201);
      expect(review.body.status.userInfo).toEqual({
        username: 'admin',
        uid: 'admin',
        groups: ['system:authenticated'],
      });
    });

    it('supports dryRun', async () => {
      const res = await api.post(`${PODS}?dryRun=All`, pod('dry'));
      expect(res.status).toBe(201);
      expect((await api.get(`${PODS}/dry`)).status).toBe(404);
    });

    it('folds secret stringData into base64 data', async () => {
      const s = await api.post('/api/v1/namespaces/default/secrets', {
        metadata: { name: 's' },
        stringData: { user: 'admin' },
      });
      expect(s.body.data).toEqual({ user: Buffer.from('admin').toString('base64') });
      expect(s.body.type).toBe('Opaque');
      expect(s.body.stringData).toBeUndefined();
    });
  });

  describe('selectors and pagination', () => {
    beforeAll(async () => {
      await api.post('/api/v1/namespaces', { metadata: { name: 'sel' } });
      const mk = (name: string, labels: Record<string, string>, nodeName?: string) =>
        api.post('/api/v1/namespaces/sel/pods', {
          ...pod(name, nodeName ? { nodeName } : {}),
          metadata: { name, labels },
        });
      await mk('a', { tier: 'web', env: 'prod' }, 'n1');
      await mk('b', { tier: 'db', env: 'prod' }, 'n2');
      await mk('c', { tier: 'web' });
    });
    const names = async (q: string) => {
      const res = await api.get(`/api/v1/namespaces/sel/pods?${q}`);
      expect(res.status, res.text).toBe(200);
      return res.body.items.map((p: { metadata: { name: string } }) => p.metadata.name);
    };

    it('filters by label selector operators', async () => {
      expect(await names('labelSelector=tier%3Dweb')).toEqual(['a', 'c']);
      expect(await names('labelSelector=tier!%3Dweb')).toEqual(['b']);
      expect(await names(`labelSelector=${encodeURIComponent('tier in (db,cache)')}`)).toEqual(['b']);
      expect(await names(`labelSelector=${encodeURIComponent('tier notin (db)')}`)).toEqual(['a', 'c']);
      expect(await names('labelSelector=env')).toEqual(['a', 'b']);
      expect(await names('labelSelector=!env')).toEqual(['c']);
      expect(await names(`labelSelector=${encodeURIComponent('tier=web,env=prod')}`)).toEqual(['a']);
      expect((await api.get('/api/v1/namespaces/sel/pods?labelSelector=a%3D%3D%3D')).status).toBe(400);
    });

    it('filters by field selectors', async () => {
      expect(await names('fieldSelector=spec.nodeName%3Dn1')).toEqual(['a']);
      expect(await names('fieldSelector=spec.nodeName%3D')).toEqual(['c']);
      expect(await names('fieldSelector=status.phase%3DPending,metadata.name!%3Db')).toEqual(['a', 'c']);
      const all = await api.get('/api/v1/pods?fieldSelector=metadata.namespace%3Dsel');
      expect(all.body.items).toHaveLength(3);
      const bad = await api.get('/api/v1/namespaces/sel/pods?fieldSelector=spec.image%3Dx');
      expect(bad.status).toBe(400);
      expect(bad.body.message).toBe('field label not supported: spec.image');
    });

    it('pages with limit and continue', async () => {
      const p1 = (await api.get('/api/v1/namespaces/sel/pods?limit=2')).body;
      expect(p1.items.map((p: { metadata: { name: string } }) => p.metadata.name)).toEqual(['a', 'b']);
      expect(p1.metadata.remainingItemCount).toBe(1);
      const p2 = (await api.get(`/api/v1/namespaces/sel/pods?limit=2&continue=${p1.metadata.continue}`)).body;
      expect(p2.items.map((p: { metadata: { name: string } }) => p.metadata.name)).toEqual(['c']);
      expect(p2.metadata.continue).toBeUndefined();
      expect(p2.metadata.resourceVersion).toBe(p1.metadata.resourceVersion);
      expect((await api.get('/api/v1/namespaces/sel/pods?continue=garbage')).status).toBe(400);
    });

    it('pages across namespaces in list order (namespace "a" before "a-b")', async () => {
      for (const ns of ['pg', 'pg-b']) {
        await api.post('/api/v1/namespaces', { metadata: { name: ns } });
        for (const n of ['x', 'y'])
          await api.post(`/api/v1/namespaces/${ns}/configmaps`, {
            metadata: { name: n, labels: { page: 't' } },
          });
      }
      const seen: string[] = [];
      let cont = '';
      do {
        const page = (
          await api.get(`/api/v1/configmaps?labelSelector=page%3Dt&limit=1${cont ? `&continue=${cont}` : ''}`)
        ).body;
        seen.push(
          ...page.items.map(
            (c: { metadata: { namespace: string; name: string } }) =>
              `${c.metadata.namespace}/${c.metadata.name}`,
          ),
        );
        cont = page.metadata.continue ?? '';
      } while (cont);
      expect(seen).toEqual(['pg/x', 'pg/y', 'pg-b/x', 'pg-b/y']);
    });

    it('serves list resourceVersion semantics', async () => {
      const current = Number((await api.get('/api/v1/namespaces/sel/pods')).body.metadata.resourceVersion);
      expect(
        (
          await api.get(
            `/api/v1/namespaces/sel/pods?resourceVersion=${current}&resourceVersionMatch=NotOlderThan`,
          )
        ).status,
      ).toBe(200);
      const tooNew = await api.get(`/api/v1/namespaces/sel/pods?resourceVersion=${current + 1000}`);
      expect(tooNew.status).toBe(504);
      const exactOld = await api.get(
        '/api/v1/namespaces/sel/pods?resourceVersion=1&resourceVersionMatch=Exact',
      );
      expect(exactOld.status).toBe(410);
      expect(exactOld.body.reason).toBe('Expired');
    });
  });

  describe('patches', () => {
    it('strategic merge: containers by name, $patch delete, conditions by type', async () => {
      await api.post(
        PODS,
        pod('smp', {
          containers: [
            { name: 'a', image: 'busybox:1' },
            { name: 'b', image: 'busybox:1', env: [{ name: 'X', value: '1' }] },
          ],
        }),
      );
      const res = await api.patch(`${PODS}/smp`, 'strategic', {
        spec: {
          containers: [
            { name: 'b', image: 'busybox:2', env: [{ name: 'Y', value: '2' }] },
            { name: 'a', $patch: 'delete' },
          ],
        },
      });
      // Only images may change on a pod, so removing a container is refused by validation.
      expect(res.status).toBe(422);
      const ok = await api.patch(`${PODS}/smp`, 'strategic', {
        spec: { containers: [{ name: 'b', image: 'busybox:2' }] },
      });
      expect(ok.status, ok.text).toBe(200);
      expect(
        ok.body.spec.containers.map((c: { name: string; image: string }) => `${c.name}=${c.image}`),
      ).toEqual(['a=busybox:1', 'b=busybox:2']);
      expect(ok.body.spec.containers[1].env).toEqual([{ name: 'X', value: '1' }]);

      const t = '2026-01-01T00:00:00Z';
      await api.patch(`${PODS}/smp/status`, 'strategic', {
        status: {
          conditions: [
            { type: 'Ready', status: 'False', lastTransitionTime: t },
            { type: 'Initialized', status: 'True', lastTransitionTime: t },
          ],
        },
      });
      // What the kubelet's status manager sends: the changed condition plus the full order.
      const st = await api.patch(`${PODS}/smp/status`, 'strategic', {
        status: {
          '$setElementOrder/conditions': [{ type: 'Initialized' }, { type: 'Ready' }],
          conditions: [{ type: 'Ready', status: 'True' }],
        },
      });
      expect(st.body.status.conditions).toEqual([
        { type: 'Initialized', status: 'True', lastTransitionTime: t },
        { type: 'Ready', status: 'True', lastTransitionTime: t },
      ]);
    });

    it('strategic merge on node status addresses by type; merge patch null deletes; json patch test fails with 422', async () => {
      const node = readyNode('patch-node');
      node.status.addresses = [
        { type: 'InternalIP', address: '10.0.0.1' },
        { type: 'Hostname', address: 'patch-node' },
      ];
      await api.post('/api/v1/nodes', node);
      const res = await api.patch('/api/v1/nodes/patch-node/status', 'strategic', {
        status: { addresses: [{ type: 'InternalIP', address: '10.0.0.9' }] },
      });
      expect(res.body.status.addresses).toEqual([
        { type: 'InternalIP', address: '10.0.0.9' },
        { type: 'Hostname', address: 'patch-node' },
      ]);
      await api.patch('/api/v1/nodes/patch-node', 'merge', { metadata: { labels: { gone: 'soon' } } });
      const merged = await api.patch('/api/v1/nodes/patch-node', 'merge', {
        metadata: { labels: { gone: null } },
      });
      expect(merged.body.metadata.labels.gone).toBeUndefined();
      const failed = await api.patch('/api/v1/nodes/patch-node', 'json', [
        { op: 'test', path: '/metadata/name', value: 'other' },
      ]);
      expect(failed.status).toBe(422);
      const stale = await api.patch('/api/v1/nodes/patch-node', 'merge', {
        metadata: { resourceVersion: '1', labels: { a: 'b' } },
      });
      expect(stale.status).toBe(409);
    });
  });

  describe('deletion', () => {
    it('deletes an unbound pod at once and a bound pod gracefully', async () => {
      await api.post(PODS, pod('unbound'));
      const gone = await api.delete(`${PODS}/unbound`);
      expect(gone.status).toBe(200);
      expect((await api.get(`${PODS}/unbound`)).status).toBe(404);

      await api.post(PODS, pod('bound', { nodeName: 'n1', terminationGracePeriodSeconds: 10 }));
      const marked = (await api.delete(`${PODS}/bound`)).body;
      expect(marked.metadata.deletionGracePeriodSeconds).toBe(10);
      expect(marked.metadata.generation).toBe(2);
      expect(marked.metadata.deletionTimestamp).toBeDefined();
      expect((await api.get(`${PODS}/bound`)).status).toBe(200);
      // A longer grace period does not postpone the deletion; grace 0 (the kubelet) finishes it.
      expect(
        (await api.delete(`${PODS}/bound`, { gracePeriodSeconds: 60 })).body.metadata
          .deletionGracePeriodSeconds,
      ).toBe(10);
      expect((await api.delete(`${PODS}/bound?gracePeriodSeconds=0`)).status).toBe(200);
      expect((await api.get(`${PODS}/bound`)).status).toBe(404);
    });

    it('shows watchers a force-deleted pod with grace 0, so its kubelet stops it at once', async () => {
      const created = (
        await api.post(PODS, pod('forced', { nodeName: 'n1', terminationGracePeriodSeconds: 500 }))
      ).body;
      const events = api.watch(
        `${PODS}?watch=true&resourceVersion=${created.metadata.resourceVersion}&fieldSelector=metadata.name%3Dforced`,
        (evs) => evs.some((e) => e.type === 'DELETED'),
      );
      expect((await api.delete(`${PODS}/forced`, { gracePeriodSeconds: 0 })).status).toBe(200);
      const deleted = (await events).find((e) => e.type === 'DELETED');
      expect(deleted?.object.metadata).toMatchObject({
        deletionGracePeriodSeconds: 0,
        deletionTimestamp: expect.any(String),
      });
      expect((await api.get(`${PODS}/forced`)).status).toBe(404);
    });

    it('keeps an object with finalizers until they are removed', async () => {
      const cm = (
        await api.post('/api/v1/namespaces/default/configmaps', {
          metadata: { name: 'fin', finalizers: ['example.com/keep'] },
        })
      ).body;
      const del = await api.delete('/api/v1/namespaces/default/configmaps/fin', {
        propagationPolicy: 'Foreground',
      });
      expect(del.status).toBe(200);
      const marked = (await api.get('/api/v1/namespaces/default/configmaps/fin')).body;
      expect(marked.metadata.deletionTimestamp).toBeDefined();
      const addMore = await api.patch('/api/v1/namespaces/default/configmaps/fin', 'merge', {
        metadata: { finalizers: ['example.com/keep', 'x/y'] },
      });
      expect(addMore.status).toBe(422);
      await api.patch('/api/v1/namespaces/default/configmaps/fin', 'merge', {
        metadata: { finalizers: null },
      });
      expect((await api.get('/api/v1/namespaces/default/configmaps/fin')).status).toBe(404);
      expect(cm.metadata.finalizers).toEqual(['example.com/keep']);
      const badPolicy = await api.delete('/api/v1/namespaces/default/configmaps/whatever', {
        propagationPolicy: 'Sideways',
      });
      expect(badPolicy.status).toBe(422);
    });

    it('checks delete preconditions and deletes collections by selector', async () => {
      const cm = (
        await api.post('/api/v1/namespaces/default/configmaps', {
          metadata: { name: 'pre', labels: { batch: 'x' } },
        })
      ).body;
      await api.post('/api/v1/namespaces/default/configmaps', {
        metadata: { name: 'pre2', labels: { batch: 'x' } },
      });
      await api.post('/api/v1/namespaces/default/configmaps', { metadata: { name: 'keep' } });
      const wrong = await api.delete('/api/v1/namespaces/default/configmaps/pre', {
        preconditions: { uid: 'other' },
      });
      expect(wrong.status).toBe(409);
      expect(cm.metadata.uid).toBeDefined();
      const coll = await api.delete('/api/v1/namespaces/default/configmaps?labelSelector=batch%3Dx');
      expect(coll.body.items.map((c: { metadata: { name: string } }) => c.metadata.name)).toEqual([
        'pre',
        'pre2',
      ]);
      expect((await api.get('/api/v1/namespaces/default/configmaps/keep')).status).toBe(200);
    });

    it('removes a namespace with its content after Terminating', async () => {
      await api.post('/api/v1/namespaces', { metadata: { name: 'doomed' } });
      await eventually(async () =>
        expect((await api.get('/api/v1/namespaces/doomed/serviceaccounts/default')).status).toBe(200),
      );
      await api.post('/api/v1/namespaces/doomed/configmaps', { metadata: { name: 'c' } });
      await api.post('/api/v1/namespaces/doomed/pods', pod('p', { nodeName: 'n1' }));
      const del = (await api.delete('/api/v1/namespaces/doomed')).body;
      expect(del.status.phase).toBe('Terminating');
      const refused = await api.post('/api/v1/namespaces/doomed/configmaps', { metadata: { name: 'late' } });
      expect(refused.status).toBe(403);
      // Content removal starts a moment later: a client deleting the namespace's objects itself,
      // as `kubectl delete -f` does, still finds them.
      expect((await api.delete('/api/v1/namespaces/doomed/configmaps/c')).status).toBe(200);
      await eventually(async () =>
        expect(
          (await api.get('/api/v1/namespaces/doomed/pods/p')).body.metadata?.deletionTimestamp,
        ).toBeDefined(),
      );
      expect((await api.get('/api/v1/namespaces/doomed')).status).toBe(200);
      await api.delete('/api/v1/namespaces/doomed/pods/p?gracePeriodSeconds=0');
      await eventually(async () => expect((await api.get('/api/v1/namespaces/doomed')).status).toBe(404));
      const orphan = await api.post('/api/v1/namespaces/nowhere/configmaps', { metadata: { name: 'x' } });
      expect(orphan.status).toBe(404);
      expect(orphan.body.message).toBe('namespaces "nowhere" not found');
    });
  });

  describe('subresources', () => {
    it('binds, evicts, and explains why logs are unavailable', async () => {
      await api.post(PODS, pod('sub'));
      const bind = await api.post(`${PODS}/sub/binding`, {
        apiVersion: 'v1',
        kind: 'Binding',
        metadata: { name: 'sub' },
        target: { kind: 'Node', name: 'n1' },
      });
      expect(bind.status).toBe(201);
      const bound = (await api.get(`${PODS}/sub`)).body;
      expect(bound.spec.nodeName).toBe('n1');
      expect(bound.status.conditions).toEqual([
        expect.objectContaining({ type: 'PodScheduled', status: 'True' }),
      ]);
      const again = await api.post(`${PODS}/sub/binding`, { target: { kind: 'Node', name: 'n2' } });
      expect(again.status).toBe(409);
      const logs = await api.get(`${PODS}/sub/log`);
      expect(logs.status).toBe(503);
      expect(logs.body.message).toMatch(/node "n1" advertises no kubelet endpoint/);
      const evict = await api.post(`${PODS}/sub/eviction`, {
        apiVersion: 'policy/v1',
        kind: 'Eviction',
        metadata: { name: 'sub' },
      });
      expect(evict.status).toBe(201);
      expect((await api.get(`${PODS}/sub`)).body.metadata.deletionTimestamp).toBeDefined();
    });

    it('serves core events through events.k8s.io/v1 too', async () => {
      await api.post('/api/v1/namespaces/default/events', {
        metadata: { name: 'e1' },
        involvedObject: { kind: 'Pod', name: 'sub', namespace: 'default' },
        reason: 'Pulled',
        message: 'pulled it',
        type: 'Normal',
        source: { component: 'kubelet' },
      });
      const ev = (await api.get('/apis/events.k8s.io/v1/namespaces/default/events/e1')).body;
      expect(ev).toMatchObject({
        apiVersion: 'events.k8s.io/v1',
        kind: 'Event',
        regarding: { kind: 'Pod', name: 'sub' },
        note: 'pulled it',
        reason: 'Pulled',
        deprecatedSource: { component: 'kubelet' },
      });
      const created = await api.post('/apis/events.k8s.io/v1/namespaces/default/events', {
        metadata: { name: 'e2' },
        eventTime: '2026-01-01T00:00:00.000000Z',
        reportingController: 'kh/kubelet',
        reportingInstance: 'n1',
        action: 'Started',
        reason: 'Started',
        regarding: { kind: 'Pod', name: 'sub', namespace: 'default' },
        note: 'started',
        type: 'Normal',
      });
      expect(created.status, created.text).toBe(201);
      const core = (await api.get('/api/v1/namespaces/default/events/e2')).body;
      expect(core).toMatchObject({
        involvedObject: { name: 'sub' },
        message: 'started',
        reportingComponent: 'kh/kubelet',
      });
      // Events and leases may be created by PUT, through either events API.
      const put = await api.put('/apis/events.k8s.io/v1/namespaces/default/events/e3', {
        metadata: { name: 'e3' },
        eventTime: '2026-01-01T00:00:00.000000Z',
        reportingController: 'kh/kubelet',
        reportingInstance: 'n1',
        action: 'Killing',
        reason: 'Killing',
        regarding: { kind: 'Pod', name: 'other', namespace: 'default' },
        type: 'Normal',
      });
      expect(put.status, put.text).toBe(201);
      expect(put.body).toMatchObject({ apiVersion: 'events.k8s.io/v1', regarding: { name: 'other' } });
      const lease = await api.put('/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/put-node', {
        metadata: { name: 'put-node' },
        spec: { holderIdentity: 'put-node', leaseDurationSeconds: 40 },
      });
      expect(lease.status, lease.text).toBe(201);
      const filtered = await api.get(
        '/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dsub,reason%3DPulled',
      );
      expect(filtered.body.items.map((e: { metadata: { name: string } }) => e.metadata.name)).toEqual(['e1']);
    });
  });

  describe('watch', () => {
    it('streams from a resourceVersion, with selector transitions', async () => {
      const base = (
        await api.post('/api/v1/namespaces/default/configmaps', {
          metadata: { name: 'w', labels: { watch: 'me' } },
        })
      ).body;
      const rv = base.metadata.resourceVersion;
      const events = api.watch(
        `/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=${rv}&labelSelector=watch%3Dme`,
        (evs) => evs.length >= 3,
      );
      await api.patch('/api/v1/namespaces/default/configmaps/w', 'merge', { data: { a: '1' } });
      await api.patch('/api/v1/namespaces/default/configmaps/w', 'merge', {
        metadata: { labels: { watch: 'not' } },
      });
      await api.patch('/api/v1/namespaces/default/configmaps/w', 'merge', {
        metadata: { labels: { watch: 'me' } },
      });
      const got = await events;
      expect(got.map((e) => e.type)).toEqual(['MODIFIED', 'DELETED', 'ADDED']);
      expect(got[0]!.object.data).toEqual({ a: '1' });
      expect(Number(got[2]!.object.metadata.resourceVersion)).toBeGreaterThan(Number(rv));
    });

    it('starts with ADDED events for the current state when no resourceVersion is given', async () => {
      const got = await api.watch('/api/v1/namespaces?watch=1', (evs) => evs.length >= 4);
      expect(got.slice(0, 4).every((e) => e.type === 'ADDED')).toBe(true);
    });

    it('answers a too old resourceVersion with an ERROR event 410 Expired', async () => {
      // The cache holds 50 events; push the start out of it.
      for (let i = 0; i < 60; i++)
        await api.post('/api/v1/namespaces/default/configmaps', { metadata: { generateName: 'churn-' } });
      const got = await api.watch(
        '/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=2',
        () => false,
      );
      expect(got).toHaveLength(1);
      expect(got[0]).toMatchObject({
        type: 'ERROR',
        object: { kind: 'Status', code: 410, reason: 'Expired' },
      });
      expect(got[0]!.object.message).toMatch(/^too old resource version: 2 \(\d+\)$/);
    });

    it('sends bookmarks when allowed and ends at timeoutSeconds', async () => {
      const list = (await api.get('/api/v1/namespaces/default/secrets')).body;
      const started = performance.now();
      const got = await api.watch(
        `/api/v1/namespaces/default/secrets?watch=true&resourceVersion=${list.metadata.resourceVersion}&allowWatchBookmarks=true&timeoutSeconds=1`,
        () => false,
      );
      expect(performance.now() - started).toBeLessThan(10_000);
      expect(got.length).toBeGreaterThan(0);
      expect(
        got.every(
          (e) => e.type === 'BOOKMARK' && e.object.kind === 'Secret' && e.object.metadata.resourceVersion,
        ),
      ).toBe(true);
    });

    it('supports sendInitialEvents with an initial-events-end bookmark', async () => {
      const got = await api.watch(
        '/api/v1/namespaces?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true',
        (evs) => evs.some((e) => e.type === 'BOOKMARK'),
      );
      const bookmark = got.find((e) => e.type === 'BOOKMARK')!;
      expect(bookmark.object.metadata.annotations).toEqual({ 'k8s.io/initial-events-end': 'true' });
      expect(got.slice(0, -1).every((e) => e.type === 'ADDED')).toBe(true);
    });
  });

  it('uses the token from the kubeconfig it prints', () => {
    expect(h.server.kubeconfig()).toContain(`token: ${TOKEN}`);
    expect(h.server.kubeconfig()).toContain('certificate-authority-data:');
  });
});
