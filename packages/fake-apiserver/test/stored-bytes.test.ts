import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LIST_SLICE } from '../src/http/body.js';
import type { ApiServer } from '../src/index.js';
import { createApiServer } from '../src/index.js';
import type { KObject } from '../src/meta/object.js';
import { configmaps } from '../src/registry/configmaps.js';
import { ApiClient } from './helpers.js';

// Responses are copied from each stored object's bytes, made once when it was written. What a
// client reads must be what serialising the objects gives (what the server sent before it kept
// bytes): the same text, resourceVersion and managedFields included, and the same length.

let server: ApiServer | undefined;
let dir: string | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

async function start(opts: Parameters<typeof createApiServer>[0] = {}) {
  server = await createApiServer({ nodeLifecycle: false, scheduler: false, ...opts });
  return new ApiClient(server.url);
}

const managedFields = [
  {
    manager: 'kubectl-client-side-apply',
    operation: 'Update',
    apiVersion: 'v1',
    time: '2026-12-01T00:00:00Z',
    fieldsType: 'FieldsV1',
    fieldsV1: { 'f:data': { '.': {}, 'f:v': {} } },
  },
];

const list = (kind: string, metadata: KObject, items: KObject[]) =>
  JSON.stringify({ kind, apiVersion: 'v1', metadata, items });

describe('responses from stored bytes', () => {
  it('answers writes, GET and LIST (whole, paged, filtered, as events.k8s.io) as the objects serialised', async () => {
    const api = await start();
    await api.post('/api/v1/namespaces', { metadata: { name: 'b' } });
    const created = await api.post('/api/v1/namespaces/b/configmaps', {
      metadata: { name: 'multi-byte', labels: { tier: 'db' }, managedFields },
      data: { v: 'é ü 日本 😀 "quoted" \\ \n \u2028' },
    });
    const stored = () => server!.store.get('configmaps', 'b', 'multi-byte')!;
    expect(created.text).toBe(JSON.stringify(stored()));
    expect(created.headers['content-length']).toBe(String(Buffer.byteLength(created.text)));
    expect(stored().metadata.managedFields).toEqual(managedFields);
    for (let i = 0; i < 4; i++)
      await api.post('/api/v1/namespaces/b/configmaps', {
        metadata: { name: `c${i}`, labels: { tier: i % 2 ? 'db' : 'web' } },
      });
    const patched = await api.patch('/api/v1/namespaces/b/configmaps/multi-byte', 'merge', {
      data: { k: 'ß' },
    });
    expect(patched.text).toBe(JSON.stringify(stored()));

    const got = await api.get('/api/v1/namespaces/b/configmaps/multi-byte');
    expect(got.text).toBe(JSON.stringify(stored()));
    expect(got.headers['content-length']).toBe(String(Buffer.byteLength(got.text)));

    const all = server!.store.list('configmaps', 'b');
    const rv = String(server!.store.resourceVersion);
    const whole = await api.get('/api/v1/namespaces/b/configmaps');
    expect(whole.text).toBe(list('ConfigMapList', { resourceVersion: rv }, all));
    expect(whole.headers['content-length']).toBe(String(Buffer.byteLength(whole.text)));

    const page = await api.get('/api/v1/namespaces/b/configmaps?limit=2');
    expect(page.body.metadata.continue).toBeDefined();
    expect(page.text).toBe(
      list(
        'ConfigMapList',
        { resourceVersion: rv, continue: page.body.metadata.continue, remainingItemCount: all.length - 2 },
        all.slice(0, 2),
      ),
    );
    const next = await api.get(
      `/api/v1/namespaces/b/configmaps?limit=2&continue=${page.body.metadata.continue}`,
    );
    expect(next.body.items.map((o: KObject) => o.metadata.name)).toEqual(
      all.slice(2, 4).map((o) => o.metadata.name),
    );
    expect(next.text).toBe(list('ConfigMapList', next.body.metadata, all.slice(2, 4)));

    const db = await api.get('/api/v1/configmaps?labelSelector=tier%3Ddb');
    expect(db.text).toBe(
      list(
        'ConfigMapList',
        { resourceVersion: rv },
        server!.store.list('configmaps').filter((o) => o.metadata.labels?.tier === 'db'),
      ),
    );
    const one = await api.get('/api/v1/namespaces/b/configmaps?fieldSelector=metadata.name%3Dc1');
    expect(one.text).toBe(
      list('ConfigMapList', { resourceVersion: rv }, [server!.store.get('configmaps', 'b', 'c1')!]),
    );
    const none = await api.get('/api/v1/namespaces/b/configmaps?fieldSelector=metadata.name%3Dnone');
    expect(none.text).toBe(list('ConfigMapList', { resourceVersion: rv }, []));

    // A view (core events as events.k8s.io/v1) is its own object, not the stored one's bytes.
    await api.post('/api/v1/namespaces/b/events', {
      metadata: { name: 'e1' },
      involvedObject: { kind: 'Pod', name: 'p', namespace: 'b' },
      reason: 'Ünïcode',
      message: 'ok',
    });
    const ev = await api.get('/apis/events.k8s.io/v1/namespaces/b/events/e1');
    expect(ev.body).toMatchObject({ apiVersion: 'events.k8s.io/v1', reason: 'Ünïcode' });
    expect(ev.text).toBe(JSON.stringify(ev.body));
    const evs = await api.get('/apis/events.k8s.io/v1/namespaces/b/events');
    expect(evs.text).toBe(
      JSON.stringify({
        kind: 'EventList',
        apiVersion: 'events.k8s.io/v1',
        metadata: { resourceVersion: String(server!.store.resourceVersion) },
        items: [ev.body],
      }),
    );
  });

  it('sends watch events as each event serialised: shared, initial, filtered and from events.k8s.io', async () => {
    const api = await start();
    for (const name of ['w', 'quiet']) await api.post('/api/v1/namespaces', { metadata: { name } });
    server!.rest.create(configmaps, 'w', { metadata: { name: 'before', managedFields }, data: { v: 'é' } });
    const still = server!.rest.create(configmaps, 'quiet', {
      metadata: { name: 'still' },
      data: { v: '日本' },
    });
    const rv0 = String(server!.store.resourceVersion);
    const raw = (path: string, lines: number) =>
      new Promise<string>((resolve, reject) => {
        const req = request(new URL(path, server!.url), (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => {
            text += c;
            if (text.split('\n').length > lines) {
              req.destroy();
              resolve(text);
            }
          });
        });
        req.on('error', (e) => {
          if (!req.destroyed) reject(e);
        });
        req.end();
      });
    const fromRv = raw(`/api/v1/namespaces/w/configmaps?watch=true&resourceVersion=${rv0}`, 3);
    // The initial state of a namespace nothing changes in: one ADDED, whenever the watch starts.
    const initial = raw('/api/v1/namespaces/quiet/configmaps?watch=true', 1);
    const labeled = raw(
      `/api/v1/namespaces/w/configmaps?watch=true&resourceVersion=${rv0}&labelSelector=a`,
      2,
    );
    const a = server!.rest.create(configmaps, 'w', { metadata: { name: 'a', labels: { a: '1' } } });
    // Out of the labeled watcher's set: its DELETED is its own line, not the shared MODIFIED one.
    const a2 = server!.rest.patch(configmaps, 'w', 'a', 'merge', { metadata: { labels: null } });
    const gone = server!.store.delete('configmaps', 'w', 'before')!;
    const line = (type: string, o: KObject) => `${JSON.stringify({ type, object: o })}\n`;
    expect(await initial).toBe(line('ADDED', still));
    expect(await fromRv).toBe(line('ADDED', a) + line('MODIFIED', a2) + line('DELETED', gone));
    expect(await labeled).toBe(line('ADDED', a) + line('DELETED', a2));
  });
});

describe('a LIST written in slices', () => {
  it('lets a --data-dir write complete while the LIST is unfinished, and still sends the list as of its resourceVersion', async () => {
    dir = mkdtempSync(join(tmpdir(), 'kh-bytes-'));
    const api = await start({ dataDir: dir });
    await api.post('/api/v1/namespaces', { metadata: { name: 'big' } });
    // More than the list may queue (8 MiB) plus what loopback sockets buffer.
    const value = 'x'.repeat(16 * 1024);
    const count = Math.max(LIST_SLICE * 4, 2_000);
    for (let i = 0; i < count; i++)
      server!.rest.create(configmaps, 'big', {
        metadata: { name: `c${String(i).padStart(5, '0')}` },
        data: { v: value },
      });
    await server!.store.sync();
    const items = server!.store.list('configmaps', 'big');
    const rvBefore = server!.store.resourceVersion;

    // The LIST's client reads its first bytes, then stops reading until the write is answered.
    const order: string[] = [];
    let resume!: () => void;
    const listed = new Promise<string>((resolve, reject) => {
      const req = request(new URL('/api/v1/namespaces/big/configmaps', server!.url), (res) => {
        const chunks: Buffer[] = [];
        res.once('data', () => {
          res.pause();
          order.push('list started');
          resume = () => res.resume();
          started();
        });
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          order.push('list ended');
          resolve(Buffer.concat(chunks).toString('utf8'));
        });
      });
      req.on('error', reject);
      req.end();
    });
    let started!: () => void;
    await new Promise<void>((r) => {
      started = r;
    });
    const written = await api.patch('/api/v1/namespaces/big/configmaps/c00001', 'merge', {
      data: { v: 'new' },
    });
    expect(written.status).toBe(200);
    order.push('write answered');
    resume();
    const text = await listed;
    expect(order).toEqual(['list started', 'write answered', 'list ended']);
    // Complete, and as of the LIST's resourceVersion (the namespace's default service account
    // may come after `items` were taken): without the write made meanwhile.
    const rv = JSON.parse(text).metadata.resourceVersion;
    expect(Number(rv)).toBeLessThan(Number(written.body.metadata.resourceVersion));
    expect(Number(rv)).toBeGreaterThanOrEqual(rvBefore);
    expect(text).toBe(list('ConfigMapList', { resourceVersion: rv }, items));
  });

  it('sends two large LISTs at once, read slowly, each exactly its own list (slice buffers are reused)', async () => {
    const api = await start();
    const value = (ns: string, i: number) => `${ns}${i}`.repeat(2_000);
    for (const ns of ['x', 'y']) {
      await api.post('/api/v1/namespaces', { metadata: { name: ns } });
      for (let i = 0; i < LIST_SLICE * 2; i++)
        server!.rest.create(configmaps, ns, {
          metadata: { name: `c${String(i).padStart(4, '0')}` },
          data: { v: value(ns, i) },
        });
    }
    // As of each LIST's resourceVersion (the default service accounts may still be coming).
    const expected = (ns: string, text: string) =>
      list(
        'ConfigMapList',
        { resourceVersion: JSON.parse(text).metadata.resourceVersion },
        server!.store.list('configmaps', ns),
      );

    // Both start, both stop reading after their first bytes (so their slices queue), then each is
    // read to the end in turn.
    const open = (ns: string) =>
      new Promise<{ resume: () => Promise<string> }>((started, reject) => {
        const req = request(new URL(`/api/v1/namespaces/${ns}/configmaps`, server!.url), (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.once('data', () => {
            res.pause();
            const ended = new Promise<string>((r) =>
              res.on('end', () => r(Buffer.concat(chunks).toString())),
            );
            started({
              resume: () => {
                res.resume();
                return ended;
              },
            });
          });
        });
        req.on('error', reject);
        req.end();
      });
    const [x, y] = await Promise.all([open('x'), open('y')]);
    const [tx, ty] = [await x.resume(), await y.resume()];
    expect(tx).toBe(expected('x', tx));
    expect(ty).toBe(expected('y', ty));
  });
});
