// The agent's KubeConfig reuses its TLS connections to the API server (client-node alone opens
// one per request), counted through undici's diagnostics channel against the fake apiserver.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ApiServer, createApiServer } from '@kh/fake-apiserver';
import { CoreV1Api, HttpMethod, KubeConfig, RequestContext, Watch } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadKubeConfig } from '../src/api/kubeconfig.js';
import { KubeNodeApi } from '../src/api/node_api.js';

let server: ApiServer;
let kubeconfig: string;

beforeAll(async () => {
  server = await createApiServer({ port: 0, tls: true, tokens: { t: 'admin' }, scheduler: false });
  kubeconfig = join(mkdtempSync(join(tmpdir(), 'kh-kubeconfig-')), 'kubeconfig');
  writeFileSync(kubeconfig, server.kubeconfig());
});
afterAll(() => server?.close());

/** New connections undici opened while `fn` ran. */
async function connectionsDuring(fn: () => Promise<void>): Promise<number> {
  let n = 0;
  const onConnect = () => n++;
  subscribe('undici:client:connected', onConnect);
  try {
    await fn();
  } finally {
    unsubscribe('undici:client:connected', onConnect);
  }
  return n;
}

const tenReads = (kc: KubeConfig) => async () => {
  const core = kc.makeApiClient(CoreV1Api);
  for (let i = 0; i < 10; i++) await core.readNamespace({ name: 'default' });
};

it('sends sequential API calls over the same few TLS connections', async () => {
  // client-node hands back a response a moment before undici frees its connection, so the
  // second call may open a second one; after that they are reused.
  expect(await connectionsDuring(tenReads(loadKubeConfig(kubeconfig)))).toBeLessThanOrEqual(2);
});

it('is needed: client-node alone opens a connection per call', async () => {
  const plain = new KubeConfig();
  plain.loadFromFile(kubeconfig);
  // If this starts failing, client-node pools by itself and PooledKubeConfig can go.
  expect(await connectionsDuring(tenReads(plain))).toBe(10);
});

// The agent deletes pods with DeleteOptions in the DELETE's body (grace 0, UID precondition);
// undici closes a connection after a body its method does not expect unless told otherwise.
const createGetDelete = (kc: KubeConfig, prefix: string) => async () => {
  const core = kc.makeApiClient(CoreV1Api);
  const api = new KubeNodeApi(kc);
  for (let i = 0; i < 5; i++) {
    const pod = await core.createNamespacedPod({
      namespace: 'default',
      body: { metadata: { name: `${prefix}-${i}` }, spec: { containers: [{ name: 'c', image: 'i' }] } },
    });
    await api.deletePod('default', `${prefix}-${i}`, pod.metadata?.uid ?? '');
    await core.readNamespace({ name: 'default' });
  }
};

it('keeps the connection after a DELETE with DeleteOptions in its body', async () => {
  const kc = loadKubeConfig(kubeconfig);
  expect(await connectionsDuring(createGetDelete(kc, 'keep'))).toBeLessThanOrEqual(2);
  const { items } = await kc.makeApiClient(CoreV1Api).listNamespacedPod({ namespace: 'default' });
  expect(items.filter((p) => p.metadata?.name?.startsWith('keep-'))).toEqual([]);
});

it('is needed: undici alone reconnects after every such DELETE', async () => {
  const plain = new KubeConfig();
  plain.loadFromFile(kubeconfig);
  expect(await connectionsDuring(createGetDelete(plain, 'plain'))).toBeGreaterThanOrEqual(5);
});

it('gives watches and calls the same pool, and a new one when the TLS settings change', async () => {
  const kc = loadKubeConfig(kubeconfig);
  const dispatcher = async () => {
    const ctx = new RequestContext(`${server.url}/api/v1/pods`, HttpMethod.GET);
    await kc.applySecurityAuthentication(ctx);
    return ctx.getDispatcher();
  };
  const first = await dispatcher();
  expect(first).toBeDefined();
  expect(await dispatcher()).toBe(first);

  // A watch runs on the pooled dispatcher too and still delivers events.
  let resolveSeen: (type: string) => void = () => {};
  const seen = new Promise<string>((resolve) => {
    resolveSeen = resolve;
  });
  const watch = await new Watch(kc).watch(
    '/api/v1/namespaces',
    {},
    (type, obj: { metadata?: { name?: string } }) => {
      if (obj.metadata?.name === 'default') resolveSeen(type);
    },
    () => {},
  );
  expect(await seen).toBe('ADDED');
  watch.abort();

  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('no current cluster');
  (cluster as { skipTLSVerify: boolean }).skipTLSVerify = !cluster.skipTLSVerify;
  expect(await dispatcher()).not.toBe(first);
});
