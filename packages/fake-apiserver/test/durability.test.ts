import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiServer } from '../src/index.js';
import { ApiClient, pod } from './helpers.js';

const NODE = process.execPath;
// The packaged entry point (turbo builds before testing).
const CLI = join(import.meta.dirname, '..', 'dist', 'cli.js');

describe('durable storage (--data-dir)', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'kh-apiserver-data-'));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps everything across a clean restart; watches resume from the last resourceVersion or get 410', async () => {
    const data = join(dir, 'clean');
    let server = await createApiServer({ dataDir: data, scheduler: false });
    let api = new ApiClient(server.url);
    await api.post('/api/v1/namespaces', { metadata: { name: 'keep' } });
    const cm = (
      await api.post('/api/v1/namespaces/keep/configmaps', { metadata: { name: 'c' }, data: { a: '1' } })
    ).body;
    await api.patch('/api/v1/namespaces/keep/configmaps/c', 'merge', { data: { b: '2' } });
    await api.post('/api/v1/namespaces/keep/pods', pod('p'));
    await api.delete('/api/v1/namespaces/keep/pods/p');
    const rvBefore = (await api.get('/api/v1/namespaces/keep/configmaps')).body.metadata.resourceVersion;
    await server.close();

    server = await createApiServer({ dataDir: data, scheduler: false });
    api = new ApiClient(server.url);
    try {
      const after = (await api.get('/api/v1/namespaces/keep/configmaps/c')).body;
      expect(after.data).toEqual({ a: '1', b: '2' });
      expect(after.metadata.uid).toBe(cm.metadata.uid);
      expect((await api.get('/api/v1/namespaces/keep/pods/p')).status).toBe(404);
      expect((await api.get('/api/v1/namespaces/keep/configmaps')).body.metadata.resourceVersion).toBe(
        rvBefore,
      );
      // Resuming exactly where the list left off works...
      const resumed = api.watch(
        `/api/v1/namespaces/keep/configmaps?watch=true&resourceVersion=${rvBefore}`,
        (e) => e.length >= 1,
      );
      const next = (await api.patch('/api/v1/namespaces/keep/configmaps/c', 'merge', { data: { c: '3' } }))
        .body;
      const events = await resumed;
      expect(events[0]).toMatchObject({ type: 'MODIFIED', object: { data: { c: '3' } } });
      expect(Number(next.metadata.resourceVersion)).toBeGreaterThan(Number(rvBefore));
      // ...history from before the restart is gone: 410, and the client relists.
      const old = await api.watch(
        `/api/v1/namespaces/keep/configmaps?watch=true&resourceVersion=${cm.metadata.resourceVersion}`,
        () => false,
      );
      expect(old[0]).toMatchObject({ type: 'ERROR', object: { code: 410, reason: 'Expired' } });
    } finally {
      await server.close();
    }
  });

  it('answers 500 instead of acknowledging when the log cannot be written (disk full), and keeps serving reads', async () => {
    const data = join(dir, 'full');
    mkdirSync(data);
    symlinkSync('/dev/full', join(data, 'wal.jsonl'));
    const server = await createApiServer({ dataDir: data, scheduler: false, nodeLifecycle: false });
    try {
      const api = new ApiClient(server.url);
      const res = await api.post('/api/v1/namespaces/default/configmaps', { metadata: { name: 'c' } });
      expect(res.status).toBe(500);
      expect(res.body).toMatchObject({ kind: 'Status', reason: 'InternalError' });
      expect(res.body.message).toMatch(/write-ahead log failed/);
      expect((await api.get('/api/v1/namespaces')).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('loses no acknowledged write when the process is killed (SIGKILL)', async () => {
    const data = join(dir, 'crash');
    const tokens = join(dir, 'tokens.csv');
    writeFileSync(tokens, 'crash-token,admin,uid-1,"system:masters"\n');
    const start = async () => {
      const kubeconfig = join(dir, `kc-${Date.now()}`);
      const child = spawn(
        NODE,
        [CLI, '--port', '0', '--data-dir', data, '--token-file', tokens, '--kubeconfig-out', kubeconfig],
        {
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      const url = await new Promise<string>((resolve, reject) => {
        let err = '';
        child.stderr!.on('data', (c: Buffer) => {
          err += c.toString();
          const m = /listening on (\S+)/.exec(err);
          if (m) resolve(m[1]!);
        });
        child.on('exit', (code) => reject(new Error(`fake-apiserver exited ${code}: ${err}`)));
      });
      expect(readFileSync(kubeconfig, 'utf8')).toContain('token: crash-token');
      return { child, api: new ApiClient(url, { token: 'crash-token' }) };
    };
    const kill = (child: ChildProcess) =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      });

    let { child, api } = await start();
    const names: string[] = [];
    for (let i = 0; i < 50; i++) {
      const res = await api.post('/api/v1/namespaces/default/configmaps', {
        metadata: { name: `cm-${i}` },
        data: { i: String(i) },
      });
      expect(res.status).toBe(201);
      names.push(res.body.metadata.name);
    }
    await api.patch('/api/v1/namespaces/default/configmaps/cm-7', 'merge', { data: { patched: 'yes' } });
    await api.delete('/api/v1/namespaces/default/configmaps/cm-8');
    const rv = (await api.get('/api/v1/namespaces/default/configmaps')).body.metadata.resourceVersion;
    await kill(child);

    ({ child, api } = await start());
    try {
      const list = (await api.get('/api/v1/namespaces/default/configmaps')).body;
      expect(list.metadata.resourceVersion).toBe(rv);
      expect(list.items.map((c: { metadata: { name: string } }) => c.metadata.name).sort()).toEqual(
        names.filter((n) => n !== 'cm-8').sort(),
      );
      expect((await api.get('/api/v1/namespaces/default/configmaps/cm-7')).body.data).toEqual({
        i: '7',
        patched: 'yes',
      });
    } finally {
      await kill(child);
    }
  });
  it('keeps its CA and serving certificate in the data dir (--tls), so clients that trust the CA reconnect after a restart', async () => {
    const data = join(dir, 'tls');
    const first = await createApiServer({
      dataDir: data,
      tls: true,
      tlsHosts: ['apiserver'],
      scheduler: false,
    });
    const ca = first.caPem;
    await first.close();
    const second = await createApiServer({ dataDir: data, tls: true, scheduler: false });
    try {
      expect(ca).toMatch(/BEGIN CERTIFICATE/);
      expect(second.caPem).toBe(ca);
      expect(second.kubeconfig({})).toContain(Buffer.from(ca!).toString('base64'));
    } finally {
      await second.close();
    }
    const elsewhere = await createApiServer({ dataDir: join(dir, 'tls-other'), tls: true, scheduler: false });
    await elsewhere.close();
    expect(elsewhere.caPem).not.toBe(ca);
  });
});
