// The agent's PodObjectSource over the fake apiserver: config maps, secrets and the node read in the
// pod's namespace, services from the service informer, and pod-bound service account tokens that
// TokenReview accepts, cached until 80% of their lifetime.
import { FakeClock, realClock } from '@kh/apimachinery';
import { AuthenticationV1Api, CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadKubeConfig } from '../../src/api/node_api.js';
import { ServiceLister } from '../../src/api/service_lister.js';
import { KubePodObjectsApi } from '../../src/volumemanager/objects_client.js';
import { ApiPodObjectSource, SERVICES_NOT_SYNCED } from '../../src/volumemanager/pod_objects.js';
import { startTestApiServer, type TestApiServer } from '../helpers/apiserver.js';

let apiserver: TestApiServer;
let objects: ApiPodObjectSource;
let services: ServiceLister;
let core: CoreV1Api;
let authn: AuthenticationV1Api;
const clock = new FakeClock(Date.now());

beforeAll(async () => {
  apiserver = await startTestApiServer();
  const kc = loadKubeConfig(apiserver.kubeconfig);
  core = kc.makeApiClient(CoreV1Api);
  authn = kc.makeApiClient(AuthenticationV1Api);
  services = new ServiceLister({ kubeConfig: kc, clock: realClock, retryMs: 10 });
  objects = new ApiPodObjectSource({ api: new KubePodObjectsApi(kc), services, nodeName: 'node-a', clock });
});
afterAll(() => apiserver?.stop());

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 300 && !check(); i++) await new Promise((r) => setTimeout(r, 20));
  expect(check()).toBe(true);
}

async function untilNames(names: () => Promise<string[]>, want: string[]): Promise<void> {
  for (let i = 0; i < 300 && JSON.stringify(await names()) !== JSON.stringify(want); i++)
    await new Promise((r) => setTimeout(r, 20));
  expect(await names()).toEqual(want);
}

/** Who a token is for these audiences, as the apiserver's TokenReview says (a token is good for its own only). */
const review = async (token: string, audiences: string[]) =>
  (await authn.createTokenReview({ body: { spec: { token, audiences } } })).status?.user?.username;

describe('ApiPodObjectSource', () => {
  it('reads config maps, secrets and the node in the pod context; missing ones are undefined', async () => {
    const namespace = 'default';
    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: 'cfg' }, data: { a: '1' } },
    });
    await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: 's' }, stringData: { p: 'pw' } },
    });
    await core.createNode({ body: { metadata: { name: 'node-a' } } });
    const pod: V1Pod = { metadata: { name: 'web', namespace, uid: 'u' }, spec: { containers: [] } };
    expect((await objects.getConfigMap(pod, 'cfg'))?.data).toEqual({ a: '1' });
    expect((await objects.getSecret(pod, 's'))?.data).toEqual({ p: Buffer.from('pw').toString('base64') });
    expect(await objects.getConfigMap(pod, 'nope')).toBeUndefined();
    const elsewhere: V1Pod = { ...pod, metadata: { ...pod.metadata, namespace: 'kube-system' } };
    expect(await objects.getSecret(elsewhere, 's')).toBeUndefined();
    expect((await objects.getNode(pod))?.metadata?.name).toBe('node-a');
  });

  it("gives the pod's namespace's services and the master service from the informer, not an API call per start", async () => {
    const body = (name: string, clusterIP?: string) => ({
      metadata: { name },
      spec: { ports: [{ port: 443 }], ...(clusterIP ? { clusterIP } : {}) },
    });
    const pod: V1Pod = {
      metadata: { name: 'web', namespace: 'svc-ns', uid: 'u2' },
      spec: { containers: [] },
    };
    const staticPod: V1Pod = {
      ...pod,
      metadata: { ...pod.metadata, annotations: { 'kubernetes.io/config.source': 'file' } },
    };
    // Before the informer's first list: the kubelet's error, but a static pod goes on without.
    await expect(objects.listServices(pod)).rejects.toThrow(SERVICES_NOT_SYNCED);
    expect(await objects.listServices(staticPod)).toEqual([]);

    await core.createNamespace({ body: { metadata: { name: 'svc-ns' } } });
    await core.createNamespacedService({ namespace: 'svc-ns', body: body('fooservice') });
    await core.createNamespacedService({ namespace: 'svc-ns', body: body('headless', 'None') });
    await core.createNamespacedService({ namespace: 'default', body: body('kubernetes') });
    await core.createNamespacedService({ namespace: 'default', body: body('other') });
    const abort = new AbortController();
    const running = services.run(abort.signal);
    const names = async () =>
      (await objects.listServices(pod)).map((s) => `${s.metadata?.namespace}/${s.metadata?.name}`).sort();
    await until(() => services.hasSynced());
    expect(await names()).toEqual(['default/kubernetes', 'svc-ns/fooservice']);

    // Created and deleted later: the watch brings both.
    await core.createNamespacedService({ namespace: 'svc-ns', body: body('late') });
    await untilNames(names, ['default/kubernetes', 'svc-ns/fooservice', 'svc-ns/late']);
    await core.deleteNamespacedService({ namespace: 'svc-ns', name: 'fooservice' });
    await untilNames(names, ['default/kubernetes', 'svc-ns/late']);

    // With the informer stopped, a new service is not seen: a start reads memory, not the API.
    abort.abort();
    await running;
    await core.createNamespacedService({ namespace: 'svc-ns', body: body('unseen') });
    expect(await names()).toEqual(['default/kubernetes', 'svc-ns/late']);
  });

  it('requests pod-bound tokens, reuses them until 80% of their life, then asks again', async () => {
    const namespace = 'default';
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: 'app' } } });
    const created = await core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: 'tok' },
        spec: { serviceAccountName: 'app', containers: [{ name: 'c', image: 'busybox' }] },
      },
    });
    const first = await objects.getServiceAccountToken(created, 'vault', 3600);
    expect(await review(first, ['vault'])).toBe('system:serviceaccount:default:app');
    expect(await review(first, [])).toBeUndefined();
    const claims = JSON.parse(Buffer.from(first.split('.')[1]!, 'base64url').toString('utf8'));
    expect(claims).toMatchObject({
      aud: ['vault'],
      'kubernetes.io': { pod: { name: 'tok', uid: created.metadata!.uid } },
    });
    // Another audience is another token; the same one comes from the cache.
    const apiToken = await objects.getServiceAccountToken(created, undefined, 3600);
    expect(apiToken).not.toBe(first);
    // A projected token without an audience is the apiserver's: the pod calls the API with it as
    // its service account; the vault token gets 401 there.
    const asPod = (token: string) => {
      const kc = loadKubeConfig(apiserver.kubeconfig);
      kc.loadFromOptions({
        clusters: kc.clusters,
        users: [{ name: 'pod', token }],
        contexts: [{ name: 'pod', cluster: kc.getCurrentCluster()!.name, user: 'pod' }],
        currentContext: 'pod',
      });
      return kc.makeApiClient(AuthenticationV1Api);
    };
    const self = await asPod(apiToken).createSelfSubjectReview({ body: {} });
    expect(self.status?.userInfo?.username).toBe('system:serviceaccount:default:app');
    await expect(asPod(first).createSelfSubjectReview({ body: {} })).rejects.toMatchObject({ code: 401 });
    clock.step(0.79 * 3600_000);
    expect(await objects.getServiceAccountToken(created, 'vault', 3600)).toBe(first);
    clock.step(0.02 * 3600_000);
    // The apiserver's clock is real: wait a second so the new token's iat differs.
    await new Promise((r) => setTimeout(r, 1100));
    const second = await objects.getServiceAccountToken(created, 'vault', 3600);
    expect(second).not.toBe(first);
    expect(await review(second, ['vault'])).toBe('system:serviceaccount:default:app');
  });
});
