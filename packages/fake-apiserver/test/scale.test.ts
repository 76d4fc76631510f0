import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, get, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LIST_SLICE, writeNow } from '../src/http/body.js';
import { encodePending, MAX_JOINED_LINES } from '../src/http/watch.js';
import type { ApiServer } from '../src/index.js';
import { createApiServer } from '../src/index.js';
import type { KObject } from '../src/meta/object.js';
import { configmaps } from '../src/registry/configmaps.js';
import { Store } from '../src/storage/store.js';
import { ApiClient, eventually, pod, readyNode } from './helpers.js';

// What the benchmark at 5 000 nodes changed: the behaviour each fast path must keep.

let server: ApiServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(opts: Parameters<typeof createApiServer>[0] = {}) {
  server = await createApiServer({ nodeLifecycle: false, ...opts });
  return new ApiClient(server.url);
}

const cm = (name: string, ns = 'ns') => ({ metadata: { name, namespace: ns }, data: { v: name } });
const names = (objs: KObject[]) => objs.map((o) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`);

describe('store', () => {
  it('keeps lists sorted by namespace and name as keys come and go', () => {
    const s = new Store();
    for (const [ns, n] of [
      ['b', 'y'],
      ['a', 'z'],
      ['b', 'x'],
    ])
      s.write('configmaps', 'ADDED', cm(n!, ns));
    expect(names(s.list('configmaps'))).toEqual(['a/z', 'b/x', 'b/y']);
    // A new key in a namespace, a new namespace, a removal, a replacement: each must show.
    s.write('configmaps', 'ADDED', cm('a', 'b'));
    s.write('configmaps', 'ADDED', cm('m', 'aa'));
    s.delete('configmaps', 'a', 'z');
    s.write('configmaps', 'MODIFIED', { ...cm('x', 'b'), data: { v: 'new' } });
    expect(names(s.list('configmaps'))).toEqual(['aa/m', 'b/a', 'b/x', 'b/y']);
    expect(names(s.list('configmaps', 'b'))).toEqual(['b/a', 'b/x', 'b/y']);
    expect(s.list('configmaps', 'b')[1]!.data.v).toBe('new');
  });

  it('changes generations on every write and removal, per resource and per node', () => {
    const s = new Store();
    const g0 = s.generation('pods');
    s.write('pods', 'ADDED', { metadata: { name: 'p', namespace: 'ns' }, spec: { nodeName: 'n1' } });
    const g1 = s.generation('pods');
    const n1 = s.podsOnNodeGeneration('n1');
    expect(g1).not.toBe(g0);
    // A status change of a bound pod (it may have finished) changes its node's generation.
    s.write('pods', 'MODIFIED', {
      metadata: { name: 'p', namespace: 'ns' },
      spec: { nodeName: 'n1' },
      status: { phase: 'Succeeded' },
    });
    expect(s.podsOnNodeGeneration('n1')).not.toBe(n1);
    // Moving to another node changes both.
    const before = [s.podsOnNodeGeneration('n1'), s.podsOnNodeGeneration('n2')];
    s.write('pods', 'MODIFIED', { metadata: { name: 'p', namespace: 'ns' }, spec: { nodeName: 'n2' } });
    expect([s.podsOnNodeGeneration('n1'), s.podsOnNodeGeneration('n2')]).not.toContain(before[0]);
    expect(s.podsOnNodeGeneration('n2')).not.toBe(before[1]);
    const g2 = s.generation('pods');
    const n2 = s.podsOnNodeGeneration('n2');
    s.delete('pods', 'ns', 'p');
    expect(s.generation('pods')).not.toBe(g2);
    expect(s.podsOnNodeGeneration('n2')).not.toBe(n2);
    expect(s.generation('configmaps')).toBe(0);
  });

  it('logs objects that replay exactly, with the JSON made at write time', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kh-scale-'));
    try {
      const s1 = new Store({ dataDir: dir });
      const written = s1.write('configmaps', 'ADDED', {
        ...cm('c'),
        data: { quote: '"\\\n', unicode: 'é' },
      });
      await s1.sync();
      const line = readFileSync(join(dir, 'wal.jsonl'), 'utf8').trim();
      expect(JSON.parse(line)).toEqual({
        rv: Number(written.metadata.resourceVersion),
        op: 'put',
        r: 'configmaps',
        ns: 'ns',
        name: 'c',
        o: written,
      });
      s1.close();
      const s2 = new Store({ dataDir: dir });
      expect(s2.get('configmaps', 'ns', 'c')).toEqual(written);
      s2.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('LIST of many objects', () => {
  it('streams a list longer than a slice, the same JSON as one piece, pages included', async () => {
    const api = await start({ scheduler: false });
    await api.post('/api/v1/namespaces', { metadata: { name: 'many' } });
    const count = LIST_SLICE * 2 + 7;
    for (let i = 0; i < count; i++)
      server!.rest.create(configmaps, 'many', { metadata: { name: `cm-${String(i).padStart(4, '0')}` } });
    const r = await api.get('/api/v1/namespaces/many/configmaps');
    expect(r.status).toBe(200);
    expect(r.headers['transfer-encoding']).toBe('chunked');
    const expected = {
      kind: 'ConfigMapList',
      apiVersion: 'v1',
      metadata: { resourceVersion: String(server!.store.resourceVersion) },
      items: server!.store.list('configmaps', 'many'),
    };
    expect(r.text).toBe(JSON.stringify(expected));
    expect(r.body.items).toHaveLength(count);

    // A change made after the first LIST is in the next one (the text is made per stored object).
    await api.patch('/api/v1/namespaces/many/configmaps/cm-0600', 'merge', { data: { k: 'v' } });
    const again = await api.get('/api/v1/namespaces/many/configmaps');
    expect(again.body.items[600]).toMatchObject({ metadata: { name: 'cm-0600' }, data: { k: 'v' } });
    expect((await api.get('/api/v1/namespaces/many/configmaps/cm-0600')).body.data).toEqual({ k: 'v' });

    // Pages and small lists are answered in one piece, as before.
    const page = await api.get('/api/v1/namespaces/many/configmaps?limit=10');
    expect(page.headers['content-length']).toBeDefined();
    expect(page.body.items).toHaveLength(10);
    expect(page.body.metadata.remainingItemCount).toBe(count - 10);
  });
});

describe('watch delivery', () => {
  it('delivers a burst of events complete and in order, written in batches', async () => {
    const api = await start({ scheduler: false });
    await api.post('/api/v1/namespaces', { metadata: { name: 'burst' } });
    const rv = (await api.get('/api/v1/namespaces/burst/configmaps')).body.metadata.resourceVersion;
    const n = 300;
    const seen = api.watch(
      `/api/v1/namespaces/burst/configmaps?watch=true&resourceVersion=${rv}`,
      (evs) => evs.length >= n,
    );
    await new Promise((r) => setTimeout(r, 100));
    for (let i = 0; i < n; i++) {
      server!.rest.create(configmaps, 'burst', { metadata: { name: `c${i}` } });
      // Spread over more than one write interval.
      if (i % 50 === 0) await new Promise((r) => setTimeout(r, 5));
    }
    const events = await seen;
    expect(events.map((e) => e.object.metadata.name)).toEqual(Array.from({ length: n }, (_, i) => `c${i}`));
    const rvs = events.map((e) => Number(e.object.metadata.resourceVersion));
    expect(rvs).toEqual([...rvs].sort((a, b) => a - b));
  });
});

describe('writes within their turn', () => {
  // A flush round or a LIST writes in turns of a few ms; its writes must reach the socket inside
  // the turn, not all at once on http's next-tick uncork.
  it('writeNow sends the chunks before it returns; a plain write waits for the next tick', async () => {
    const seen: { plain: number; now: number; pending: number }[] = [];
    let written = 0;
    const http = createServer((_req, res: ServerResponse) => {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.flushHeaders();
      setImmediate(() => {
        res.write('a\n');
        const plain = res.socket!.writableCorked;
        res.socket!.uncork();
        writeNow(res, [Buffer.from('b\n'), 'c\n'], () => written++);
        seen.push({ plain, now: res.socket!.writableCorked, pending: res.socket!.writableLength });
        writeNow(res, Buffer.from('d\n'));
        res.end();
      });
    });
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
    try {
      const body = await new Promise<string>((resolve, reject) =>
        get(`http://127.0.0.1:${(http.address() as AddressInfo).port}/`, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => {
            text += c;
          });
          res.on('end', () => resolve(text));
        }).on('error', reject),
      );
      expect(body).toBe('a\nb\nc\nd\n');
      // http corks a response's socket on a write; writeNow's chunks left it uncorked, in the kernel.
      expect(seen).toEqual([{ plain: 1, now: 0, pending: 0 }]);
      expect(written).toBe(1);
    } finally {
      await new Promise((r) => http.close(r));
    }
  });
});

describe('shared watch writes', () => {
  it('encodes one round once for the watchers that got the same events, apart for the others', () => {
    const [a, b, c] = ['a', 'b', 'c'].map((l) => Buffer.from(`${l}\n`)) as [Buffer, Buffer, Buffer];
    const shared = new Map();
    const first = encodePending({ pending: [a, b] }, shared);
    expect(first.toString()).toBe('a\nb\n');
    // Same events: the very same buffer, encoded once.
    expect(encodePending({ pending: [a, b] }, shared)).toBe(first);
    // A watcher with more, fewer or other events gets its own.
    expect(encodePending({ pending: [a, b, c] }, shared).toString()).toBe('a\nb\nc\n');
    expect(encodePending({ pending: [a] }, shared).toString()).toBe('a\n');
    expect(encodePending({ pending: [b, c] }, shared).toString()).toBe('b\nc\n');
    // Private lines (initial state, bookmarks) are encoded for their stream alone.
    expect(encodePending({ pending: ['x\n', a] }, undefined).toString()).toBe('x\na\n');
    expect(encodePending({ pending: [a, b] }, undefined)).not.toBe(first);
    // A long backlog is written line by line, not copied into one buffer.
    const backlog = Array.from({ length: MAX_JOINED_LINES + 1 }, (_, i) => Buffer.from(`${i}\n`));
    expect(encodePending({ pending: backlog }, shared)).toBe(backlog);
  });

  it('gives each watcher its own events while they share writes: namespaces, selectors, late starts', async () => {
    const api = await start({ scheduler: false });
    for (const name of ['burst', 'other']) await api.post('/api/v1/namespaces', { metadata: { name } });
    const rv0 = (await api.get('/api/v1/configmaps')).body.metadata.resourceVersion;
    const n = 240;
    const made = Array.from({ length: n }, (_, i) => ({
      name: `c${i}`,
      ns: i % 2 === 0 ? 'burst' : 'other',
      labeled: i % 3 === 0,
    }));
    const watch = (path: string, count: number) => api.watch(path, (evs) => evs.length >= count);
    const all = (from: string) => `/api/v1/configmaps?watch=true&resourceVersion=${from}`;
    const everyone = [watch(all(rv0), n), watch(all(rv0), n)];
    const inBurst = watch(`/api/v1/namespaces/burst/configmaps?watch=true&resourceVersion=${rv0}`, n / 2);
    const labeled = watch(`${all(rv0)}&labelSelector=a%3D1`, n / 3);
    await new Promise((r) => setTimeout(r, 100));
    let late: Promise<KObject[]> | undefined;
    for (const [i, m] of made.entries()) {
      server!.rest.create(configmaps, m.ns, {
        metadata: { name: m.name, namespace: m.ns, labels: m.labeled ? { a: '1' } : {} },
      });
      if (i % 40 === 0) await new Promise((r) => setTimeout(r, 5));
      // One more watcher, from the middle of the burst: it resumes from the cache.
      if (i === n / 2 - 1) late = watch(all(String(server!.store.resourceVersion)), n / 2);
    }
    const names = async (p: Promise<KObject[]>) => (await p).map((e) => e.object.metadata.name);
    const expected = (keep: (m: (typeof made)[number], i: number) => boolean) =>
      made.filter(keep).map((m) => m.name);
    for (const w of everyone) expect(await names(w)).toEqual(expected(() => true));
    expect(await names(inBurst)).toEqual(expected((m) => m.ns === 'burst'));
    expect(await names(labeled)).toEqual(expected((m) => m.labeled));
    expect(await names(late!)).toEqual(expected((_, i) => i >= n / 2));
  });

  it('never shares a write between selectors that got the same first and last event and as many', async () => {
    const api = await start({ scheduler: false });
    await api.post('/api/v1/namespaces', { metadata: { name: 'sel' } });
    const rv = (await api.get('/api/v1/namespaces/sel/configmaps')).body.metadata.resourceVersion;
    const path = (sel: string) =>
      `/api/v1/namespaces/sel/configmaps?watch=true&resourceVersion=${rv}&labelSelector=${sel}`;
    const [a, b] = ['a%3D1', 'b%3D1'].map((sel) => api.watch(path(sel), (evs) => evs.length >= 3));
    await new Promise((r) => setTimeout(r, 100));
    // In one tick, so in one round: a=1 sees e0 e1 e3, b=1 sees e0 e2 e3.
    const labels = [{ a: '1', b: '1' }, { a: '1' }, { b: '1' }, { a: '1', b: '1' }];
    for (const [i, l] of labels.entries())
      server!.rest.create(configmaps, 'sel', { metadata: { name: `e${i}`, namespace: 'sel', labels: l } });
    const names = async (p: Promise<KObject[]> | undefined) => (await p!).map((e) => e.object.metadata.name);
    expect(await names(a)).toEqual(['e0', 'e1', 'e3']);
    expect(await names(b)).toEqual(['e0', 'e2', 'e3']);
  });
});

describe('scheduler caches', () => {
  it('sees room freed by a pod finishing, and a node whose allocatable grew', async () => {
    const api = await start();
    await api.post('/api/v1/nodes', readyNode('one', { cpu: '4', memory: '4Gi', pods: '1' }));
    await api.post('/api/v1/namespaces/default/pods', pod('first'));
    await eventually(async () =>
      expect((await api.get('/api/v1/namespaces/default/pods/first')).body.spec.nodeName).toBe('one'),
    );
    await api.post('/api/v1/namespaces/default/pods', pod('second'));
    await eventually(async () => {
      const p = (await api.get('/api/v1/namespaces/default/pods/second')).body;
      expect(p.status.conditions?.[0]?.message).toMatch(/1 Too many pods/);
    });
    await api.patch('/api/v1/namespaces/default/pods/first/status', 'merge', {
      status: { phase: 'Succeeded' },
    });
    await eventually(async () =>
      expect((await api.get('/api/v1/namespaces/default/pods/second')).body.spec.nodeName).toBe('one'),
    );

    // Full again; raising the node's pods allocatable lets the next one in.
    await api.post('/api/v1/namespaces/default/pods', pod('third'));
    await eventually(async () => {
      const p = (await api.get('/api/v1/namespaces/default/pods/third')).body;
      expect(p.status.conditions?.[0]?.message).toMatch(/1 Too many pods/);
    });
    await api.patch('/api/v1/nodes/one/status', 'merge', { status: { allocatable: { pods: '2' } } });
    await eventually(async () =>
      expect((await api.get('/api/v1/namespaces/default/pods/third')).body.spec.nodeName).toBe('one'),
    );
  });
});
