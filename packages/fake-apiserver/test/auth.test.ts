import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type ApiServer, createApiServer, FakeApiServer } from '../src/index.js';
import { ApiClient } from './helpers.js';

describe('authentication and TLS', () => {
  const servers: ApiServer[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'kh-apiserver-auth-'));
  afterAll(async () => {
    for (const s of servers) await s.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads tokens from a kube-apiserver token file', async () => {
    const file = join(dir, 'tokens.csv');
    writeFileSync(file, 'tok-a,alice,uid-a,"system:masters,dev"\ntok-b,bob,uid-b\n');
    const s = await createApiServer({ tokens: file, scheduler: false, nodeLifecycle: false });
    servers.push(s);
    expect((await new ApiClient(s.url, { token: 'tok-b' }).get('/api/v1/namespaces')).status).toBe(200);
    expect((await new ApiClient(s.url, { token: 'tok-c' }).get('/api/v1/namespaces')).status).toBe(401);
    expect(s.kubeconfig()).toContain('token: tok-a');
    expect(s.kubeconfig({ token: 'tok-b', server: 'https://apiserver:6443' })).toMatch(
      /server: https:\/\/apiserver:6443[\s\S]*token: tok-b/,
    );
  });

  it('allows anonymous requests only when enabled, and still refuses a wrong token', async () => {
    const closed = await createApiServer({ tokens: { t: 'admin' }, scheduler: false, nodeLifecycle: false });
    const open = await createApiServer({
      tokens: { t: 'admin' },
      anonymous: true,
      scheduler: false,
      nodeLifecycle: false,
    });
    servers.push(closed, open);
    expect((await new ApiClient(closed.url).get('/api/v1/namespaces')).status).toBe(401);
    expect((await new ApiClient(open.url).get('/api/v1/namespaces')).status).toBe(200);
    expect((await new ApiClient(open.url, { token: 'wrong' }).get('/api/v1/namespaces')).status).toBe(401);
  });

  it('serves TLS with a generated CA that the kubeconfig carries', async () => {
    const s = await createApiServer({
      tls: true,
      tokens: { t: 'admin' },
      tlsHosts: ['apiserver'],
      scheduler: false,
      nodeLifecycle: false,
    });
    servers.push(s);
    expect(s.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(s.caPem).toMatch(/^-----BEGIN CERTIFICATE-----/);
    const kc = s.kubeconfig();
    const caData = /certificate-authority-data: (\S+)/.exec(kc)![1]!;
    expect(Buffer.from(caData, 'base64').toString()).toBe(s.caPem);
    // Trusting the CA works; without it the certificate is rejected.
    expect((await new ApiClient(s.url, { token: 't', ca: s.caPem }).get('/version')).status).toBe(200);
    await expect(new ApiClient(s.url, { token: 't' }).get('/version')).rejects.toThrow(
      /self[- ]signed|unable to verify|certificate/i,
    );
  });
});

describe('FakeApiServer builder', () => {
  it('starts a TLS server with tokens and stops it (twice is fine)', async () => {
    const s = await new FakeApiServer()
      .withTls('apiserver')
      .withToken('b-token', 'builder', ['system:masters'])
      .withoutScheduler()
      .start();
    try {
      expect(s.kubeconfig()).toContain('token: b-token');
      const api = new ApiClient(s.url, { token: 'b-token', ca: s.caPem });
      expect((await api.get('/api/v1/namespaces/default')).status).toBe(200);
      expect(s.scheduler).toBeUndefined();
    } finally {
      await s.close();
    }
    await s.close();
    await expect(new ApiClient(s.url, { ca: s.caPem }).get('/healthz')).rejects.toThrow();
  });
});
