import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONTINUE_EXPIRED } from '../src/http/api.js';
import type { KObject } from '../src/meta/object.js';
import { type ObjectKey, type PageRequest, Store } from '../src/storage/store.js';
import { type ApiClient, type Harness, startHarness } from './helpers.js';

const cm = (ns: string, name: string, labels: Record<string, string> = {}, data = '1'): KObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: ns, labels },
  data: { v: data },
});

const names = (items: KObject[]) => items.map((o) => `${o.metadata.namespace}/${o.metadata.name}`);

/** Every page of a store listing, following `next` as the API's continue token does (start just after it). */
function allPages(s: Store, resource: string, req: Omit<PageRequest, 'from'>) {
  const pages = [];
  let from: ObjectKey | undefined;
  for (;;) {
    const page = s.page(resource, { ...req, from })!;
    pages.push(page);
    if (!page.next) return pages;
    from = [page.next[0], `${page.next[1]}\0`];
    req = { ...req, rv: page.rv };
  }
}

describe('Store.page', () => {
  it('reads a page by seeking: its cost is the page, not the resource', () => {
    const s = new Store();
    for (let n = 0; n < 20; n++)
      for (let i = 0; i < 500; i++) s.write('configmaps', 'ADDED', cm(`ns-${n}`, `c-${i}`));
    // Deep inside the resource: past 300 names of a namespace in the middle of the key order.
    const page = s.page('configmaps', { from: ['ns-15', 'c-300\0'], limit: 10 })!;
    expect(names(page.items)[0]).toBe('ns-15/c-301');
    expect(page.items).toHaveLength(10);
    // Ten objects and the one that tells more remain.
    expect(page.visited).toBe(11);
    const pages = allPages(s, 'configmaps', { limit: 100 });
    expect(pages).toHaveLength(100);
    expect(Math.max(...pages.map((p) => p.visited))).toBe(101);
    expect(pages.flatMap((p) => names(p.items))).toEqual(names(s.list('configmaps')));
    // An older resourceVersion costs the changes since, not the resource either.
    s.write('configmaps', 'MODIFIED', cm('ns-15', 'c-305', {}, '2'));
    const old = s.page('configmaps', { from: ['ns-15', 'c-300\0'], rv: page.rv, limit: 10 })!;
    expect(old.items[4]!.data.v).toBe('1');
    expect(old.visited).toBe(12);
  });

  it('counts the remaining objects, only when every object matched', () => {
    const s = new Store();
    for (let i = 0; i < 10; i++)
      s.write('configmaps', 'ADDED', cm('a', `c${i}`, { even: String(i % 2 === 0) }));
    const pages = allPages(s, 'configmaps', { limit: 3 });
    expect(pages.map((p) => p.remaining)).toEqual([7, 4, 1, undefined]);
    const even = allPages(s, 'configmaps', { limit: 3, match: (o) => o.metadata.labels.even === 'true' });
    expect(even.map((p) => names(p.items))).toEqual([
      ['a/c0', 'a/c2', 'a/c4'],
      ['a/c6', 'a/c8'],
    ]);
    expect(even.map((p) => p.remaining)).toEqual([undefined, undefined]);
  });

  it('reads an older resourceVersion as it was, from the watch cache', () => {
    const s = new Store();
    for (const n of ['b', 'd', 'f', 'h']) s.write('configmaps', 'ADDED', cm('x', n));
    const first = s.page('configmaps', { limit: 2 })!;
    expect(names(first.items)).toEqual(['x/b', 'x/d']);
    // After the first page: a create before and after the cut, an update, a delete, a re-create.
    s.write('configmaps', 'ADDED', cm('x', 'a'));
    s.write('configmaps', 'ADDED', cm('x', 'g'));
    s.write('configmaps', 'MODIFIED', cm('x', 'f', {}, '2'));
    s.delete('configmaps', 'x', 'h');
    s.write('configmaps', 'ADDED', cm('x', 'h', {}, '3'));
    s.delete('configmaps', 'x', 'b');
    s.write('secrets', 'ADDED', cm('x', 'e'));
    const rest = s.page('configmaps', { from: ['x', 'd\0'], rv: first.rv, limit: 10 })!;
    expect(rest.rv).toBe(first.rv);
    expect(names(rest.items)).toEqual(['x/f', 'x/h']);
    expect(rest.items.map((o) => o.data.v)).toEqual(['1', '1']);
    const mid = s.page('configmaps', { from: ['x', 'd\0'], rv: first.rv, limit: 1 })!;
    expect(mid.remaining).toBe(1);
    // Today's objects from the same key.
    expect(names(s.page('configmaps', { from: ['x', 'd\0'], limit: 10 })!.items)).toEqual([
      'x/f',
      'x/g',
      'x/h',
    ]);
  });

  it('undoes writes that are not durable yet, with --data-dir', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kh-pages-'));
    try {
      const s = new Store({ dataDir: dir });
      s.write('configmaps', 'ADDED', cm('x', 'a'));
      await s.sync();
      const rv = s.resourceVersion;
      s.write('configmaps', 'ADDED', cm('x', 'b'));
      // Being committed: in the tables, in neither the pending list nor the watch cache.
      const committed = s.sync();
      s.write('configmaps', 'ADDED', cm('x', 'c'));
      expect(names(s.page('configmaps', { rv, limit: 10 })!.items)).toEqual(['x/a']);
      await committed;
      await s.sync();
      expect(names(s.page('configmaps', { rv, limit: 10 })!.items)).toEqual(['x/a']);
      s.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('has no page for a resourceVersion the watch cache no longer reaches', () => {
    const s = new Store({ watchCacheSize: 3 });
    s.write('configmaps', 'ADDED', cm('x', 'a'));
    const rv = s.resourceVersion;
    // Four changes in a cache of three: the first one after `rv` is gone.
    for (let i = 0; i < 4; i++) s.write('configmaps', 'MODIFIED', cm('x', 'a', {}, String(i)));
    expect(s.page('configmaps', { rv, limit: 1 })).toBeUndefined();
    expect(s.page('configmaps', { rv: rv + 1, limit: 1 })?.items[0]?.data.v).toBe('0');
  });
});

describe('LIST with limit and continue', () => {
  let h: Harness;
  let api: ApiClient;

  beforeAll(async () => {
    h = await startHarness({ scheduler: false, watchCacheSize: 200 });
    api = h.api;
    for (const ns of ['pa', 'pa-b', 'pb']) {
      await api.post('/api/v1/namespaces', { metadata: { name: ns } });
      for (let i = 0; i < 12; i++)
        await api.post(`/api/v1/namespaces/${ns}/configmaps`, {
          metadata: { name: `c${String(i).padStart(2, '0')}`, labels: { tier: i % 3 === 0 ? 'db' : 'web' } },
        });
    }
  });
  afterAll(async () => {
    await h?.stop();
  });

  /** Follows continue from the first page to the last; `between` runs after each page. */
  async function pages(path: string, limit: number, between?: (n: number) => Promise<void>) {
    const got: KObject[] = [];
    let cont = '';
    for (let n = 1; ; n++) {
      const sep = path.includes('?') ? '&' : '?';
      const res = await api.get(`${path}${sep}limit=${limit}${cont ? `&continue=${cont}` : ''}`);
      expect(res.status).toBe(200);
      got.push(res.body);
      cont = res.body.metadata.continue ?? '';
      if (!cont) return got;
      await between?.(n);
    }
  }
  const keys = (list: KObject) =>
    list.items.map((o: KObject) => `${o.metadata.namespace}/${o.metadata.name}`);

  it('concatenates to exactly the unpaged list, with and without selectors', async () => {
    for (const path of [
      '/api/v1/configmaps',
      '/api/v1/namespaces/pa/configmaps',
      '/api/v1/configmaps?labelSelector=tier%3Ddb',
      '/api/v1/configmaps?fieldSelector=metadata.namespace!%3Dpa-b',
      '/api/v1/namespaces',
    ]) {
      const whole = keys((await api.get(path)).body);
      for (const limit of [1, 5, 12, 500]) {
        const got = await pages(path, limit);
        expect(got.flatMap(keys), `${path} limit=${limit}`).toEqual(whole);
        // Every page but the last is full: selectors drop objects while the page fills.
        for (const p of got.slice(0, -1)) expect(p.items).toHaveLength(limit);
        expect(new Set(got.map((p) => p.metadata.resourceVersion)).size).toBe(1);
      }
    }
  });

  it('counts remainingItemCount without selectors only', async () => {
    const [p1, p2] = await pages('/api/v1/configmaps', 10);
    const total = keys((await api.get('/api/v1/configmaps')).body).length;
    expect(p1!.metadata.remainingItemCount).toBe(total - 10);
    expect(p2!.metadata.remainingItemCount).toBe(total - 20);
    const [sel] = await pages('/api/v1/configmaps?labelSelector=tier%3Dweb', 10);
    expect(sel!.metadata.continue).toBeDefined();
    expect(sel!.metadata.remainingItemCount).toBeUndefined();
  });

  it('pages through the snapshot of the first page while objects come, change and go', async () => {
    for (const path of ['/api/v1/configmaps', '/api/v1/configmaps?labelSelector=tier%3Ddb']) {
      const before = (await api.get(path)).body;
      const got = await pages(path, 4, async (n) => {
        // Ahead of the pages: one created, one deleted, one relabelled out of the selector.
        await api.post('/api/v1/namespaces/pb/configmaps', {
          metadata: { name: `new-${n}`, labels: { tier: 'db' } },
        });
        await api.delete(`/api/v1/namespaces/pb/configmaps/c${String(12 - n).padStart(2, '0')}`);
        await api.patch(`/api/v1/namespaces/pa-b/configmaps/c${String(n).padStart(2, '0')}`, 'merge', {
          metadata: { labels: { tier: 'cache' } },
        });
      });
      expect(got.flatMap(keys), path).toEqual(keys(before));
      expect(got.flatMap((p) => p.items.map((o: KObject) => o.metadata.labels.tier))).toEqual(
        before.items.map((o: KObject) => o.metadata.labels.tier),
      );
      expect(got.every((p) => p.metadata.resourceVersion === before.metadata.resourceVersion)).toBe(true);
      // What changed is there today.
      const now = keys((await api.get(path)).body);
      expect(now).toContain('pb/new-1');
      expect(now).not.toEqual(keys(before));
      // Put things back for the next path.
      for (let n = 1; n < got.length; n++) {
        await api.delete(`/api/v1/namespaces/pb/configmaps/new-${n}`);
        await api.post('/api/v1/namespaces/pb/configmaps', {
          metadata: {
            name: `c${String(12 - n).padStart(2, '0')}`,
            labels: { tier: (12 - n) % 3 === 0 ? 'db' : 'web' },
          },
        });
        await api.patch(`/api/v1/namespaces/pa-b/configmaps/c${String(n).padStart(2, '0')}`, 'merge', {
          metadata: { labels: { tier: n % 3 === 0 ? 'db' : 'web' } },
        });
      }
    }
  });

  it('answers a continue token the watch cache no longer reaches with 410 and a token for the rest', async () => {
    const p1 = (await api.get('/api/v1/namespaces/pa/configmaps?limit=5')).body;
    for (let i = 0; i < 201; i++)
      await api.patch('/api/v1/namespaces/pb/configmaps/c00', 'merge', { data: { i: String(i) } });
    await api.post('/api/v1/namespaces/pa/configmaps', { metadata: { name: 'c05a' } });
    const res = await api.get(`/api/v1/namespaces/pa/configmaps?limit=5&continue=${p1.metadata.continue}`);
    expect(res.status).toBe(410);
    expect(res.body).toMatchObject({
      kind: 'Status',
      reason: 'Expired',
      code: 410,
      message: CONTINUE_EXPIRED,
    });
    // The token in the Status goes on from the same key at the latest resourceVersion.
    const rest = await api.get(
      `/api/v1/namespaces/pa/configmaps?limit=5&continue=${res.body.metadata.continue}`,
    );
    expect(rest.status).toBe(200);
    expect(keys(rest.body)).toEqual(['pa/c05', 'pa/c05a', 'pa/c06', 'pa/c07', 'pa/c08']);
    await api.delete('/api/v1/namespaces/pa/configmaps/c05a');
  });

  it('refuses bad continue tokens with upstream messages', async () => {
    const token = (t: unknown) => Buffer.from(JSON.stringify(t)).toString('base64url');
    const cases: [string, string][] = [
      ['garbage!', 'invalid continue token: continue key is not valid: illegal base64 data'],
      [
        token({ v: 'meta.k8s.io/v2', rv: 5, start: 'a\0' }),
        'invalid continue token: continue key is not valid: server does not recognize this encoded version meta.k8s.io/v2',
      ],
      [
        token({ v: 'meta.k8s.io/v1', rv: 0, start: 'a\0' }),
        'invalid continue token: continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)',
      ],
      [
        token({ v: 'meta.k8s.io/v1', rv: 'x', start: 'a\0' }),
        'invalid continue token: continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)',
      ],
      [
        token({ v: 'meta.k8s.io/v1', rv: 5, start: '' }),
        'invalid continue token: continue key is not valid: encoded start key empty (version meta.k8s.io/v1)',
      ],
      [
        token({ v: 'meta.k8s.io/v1', rv: 5, start: '../kube-system/a' }),
        'invalid continue token: continue key is not valid: ../kube-system/a',
      ],
    ];
    for (const [cont, message] of cases) {
      const res = await api.get(
        `/api/v1/namespaces/pa/configmaps?limit=2&continue=${encodeURIComponent(cont)}`,
      );
      expect(res.status, cont).toBe(400);
      expect(res.body).toMatchObject({ kind: 'Status', reason: 'BadRequest', code: 400, message });
    }
    const p1 = (await api.get('/api/v1/namespaces/pa/configmaps?limit=2')).body;
    const withRv = await api.get(
      `/api/v1/namespaces/pa/configmaps?limit=2&continue=${p1.metadata.continue}&resourceVersion=${p1.metadata.resourceVersion}`,
    );
    expect(withRv.status).toBe(400);
    expect(withRv.body.message).toBe('specifying resource version is not allowed when using continue');
  });

  it('encodes the token as upstream does: version, resourceVersion and the key after the last one read', async () => {
    const p1 = (await api.get('/api/v1/configmaps?limit=2')).body;
    const t = JSON.parse(Buffer.from(p1.metadata.continue, 'base64url').toString('utf8'));
    expect(t).toEqual({ v: 'meta.k8s.io/v1', rv: Number(p1.metadata.resourceVersion), start: 'pa/c01\0' });
    const n1 = (await api.get('/api/v1/namespaces/pa/configmaps?limit=2')).body;
    expect(JSON.parse(Buffer.from(n1.metadata.continue, 'base64url').toString('utf8')).start).toBe('c01\0');
  });
});
