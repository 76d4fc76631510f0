// The service informer against a scripted API server: it lists every namespace's services with a
// cluster IP, follows the watch from the list's resourceVersion, and lists again when the watch
// ends or reports 410 Gone; until its first list it has not synced.
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { realClock } from '@kh/apimachinery';
import { KubeConfig, type V1Service } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceLister } from '../../src/api/service_lister.js';

const svc = (namespace: string, name: string): V1Service => ({
  metadata: { namespace, name },
  spec: { clusterIP: '10.96.0.10', ports: [{ port: 80 }] },
});

/** What the server lists, its resourceVersion, the requests it saw and the open watch. */
const api = {
  items: [] as V1Service[],
  rv: 1,
  failLists: 0,
  requests: [] as URL[],
  watch: undefined as ServerResponse | undefined,
};
const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://x');
  api.requests.push(url);
  if (url.searchParams.get('watch') === 'true') {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.flushHeaders();
    api.watch = res;
    return;
  }
  if (api.failLists > 0) {
    api.failLists--;
    res.writeHead(500).end('{}');
    return;
  }
  res.writeHead(200, { 'Content-Type': 'application/json' });
  res.end(
    JSON.stringify({ kind: 'ServiceList', metadata: { resourceVersion: String(api.rv) }, items: api.items }),
  );
});
const send = (type: string, object: object) => api.watch?.write(`${JSON.stringify({ type, object })}\n`);

let kubeConfig: KubeConfig;
beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [
      {
        name: 'c',
        server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        skipTLSVerify: true,
      },
    ],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 300 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(check()).toBe(true);
}
const names = (lister: ServiceLister) =>
  lister
    .list()
    .map((s) => `${s.metadata?.namespace}/${s.metadata?.name}`)
    .sort();
const lists = () => api.requests.filter((u) => u.searchParams.get('watch') !== 'true');

describe('ServiceLister', () => {
  it('syncs on its first list, follows the watch, and lists again after the watch ends or gets 410 Gone', async () => {
    api.items = [svc('default', 'kubernetes'), svc('a', 'web')];
    api.rv = 7;
    api.failLists = 1;
    const lister = new ServiceLister({ kubeConfig, clock: realClock, retryMs: 10 });
    expect(lister.hasSynced()).toBe(false);
    const abort = new AbortController();
    const running = lister.run(abort.signal);
    await until(() => lister.hasSynced());
    expect(names(lister)).toEqual(['a/web', 'default/kubernetes']);
    // Cluster-wide, headless services left out, the watch resumed at the list's version.
    expect(lists().at(-1)?.pathname).toBe('/api/v1/services');
    expect(lists().at(-1)?.searchParams.get('fieldSelector')).toBe('spec.clusterIP!=None');
    await until(() => api.watch !== undefined);
    const watch = api.requests.at(-1)!;
    expect(Object.fromEntries(watch.searchParams)).toMatchObject({
      resourceVersion: '7',
      allowWatchBookmarks: 'true',
      fieldSelector: 'spec.clusterIP!=None',
    });

    send('ADDED', svc('b', 'late'));
    send('DELETED', svc('a', 'web'));
    send('BOOKMARK', { metadata: { resourceVersion: '9' } });
    await until(() => names(lister).join() === 'b/late,default/kubernetes');

    // The watch ends: what changed meanwhile comes with the next list.
    const listed = lists().length;
    api.items = [svc('default', 'kubernetes'), svc('c', 'after-end')];
    const first = api.watch!;
    api.watch = undefined;
    first.end();
    await until(() => names(lister).join() === 'c/after-end,default/kubernetes');
    expect(lists().length).toBe(listed + 1);

    // 410 Gone on the watch: listed again as well.
    await until(() => api.watch !== undefined);
    api.items = [svc('default', 'kubernetes')];
    send('ERROR', { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' });
    await until(() => names(lister).join() === 'default/kubernetes');
    expect(lists().length).toBe(listed + 2);

    abort.abort();
    await running;
    expect(lister.hasSynced()).toBe(true);
  });
});
