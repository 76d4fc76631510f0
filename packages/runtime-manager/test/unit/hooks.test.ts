// httpGet lifecycle hooks as the kubelet runs them: HTTPS without verifying the certificate,
// kube-lifecycle's User-Agent, redirects followed only on the hook's host, 4xx/5xx a failure.
import { readFileSync } from 'node:fs';
import { createServer as createHttp, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttps } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIFECYCLE_USER_AGENT, runHandler } from '../../src/kuberuntime/hooks.js';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/${name}`, import.meta.url));

const seen: { path: string; userAgent: string | undefined }[] = [];
function handle(req: IncomingMessage, res: ServerResponse) {
  seen.push({ path: req.url ?? '', userAgent: req.headers['user-agent'] });
  if (req.url === '/fail') res.writeHead(500).end('no');
  else if (req.url === '/here') res.writeHead(302, { location: '/fail' }).end();
  else if (req.url === '/away') res.writeHead(302, { location: 'http://192.0.2.1/fail' }).end();
  else res.writeHead(200).end('ok');
}
// A self-signed pair no client trusts: only a hook that skips verification gets through.
const https = createHttps({ cert: fixture('hook-tls.crt'), key: fixture('hook-tls.key') }, handle);
const http = createHttp(handle);
const portOf = (s: { address(): unknown }) => (s.address() as AddressInfo).port;

beforeAll(async () => {
  await Promise.all([
    new Promise<void>((r) => https.listen(0, '127.0.0.1', r)),
    new Promise<void>((r) => http.listen(0, '127.0.0.1', r)),
  ]);
});
afterAll(() => {
  https.close();
  http.close();
});

const target = { containerId: 'c1', containerName: 'app', podIP: '127.0.0.1', ports: [] };
const noExec = { exec: () => Promise.reject(new Error('no exec here')) };
const get = (scheme: 'HTTP' | 'HTTPS', path: string) =>
  runHandler(
    { httpGet: { scheme, path, port: portOf(scheme === 'HTTPS' ? https : http) } },
    target,
    noExec,
    5,
  );

describe('httpGet lifecycle hooks', () => {
  it('reach an HTTPS server whose certificate nothing trusts, as kube-lifecycle', async () => {
    await expect(get('HTTPS', '/echo?msg=poststart')).resolves.toBeUndefined();
    expect(seen.at(-1)).toEqual({ path: '/echo?msg=poststart', userAgent: LIFECYCLE_USER_AGENT });
  });

  it('fail on an error status with the kubelet message', async () => {
    await expect(get('HTTP', '/fail')).rejects.toThrow(
      'HTTP lifecycle hook (/fail) for Container "app" failed - error: HTTP status 500',
    );
  });

  it('follow a redirect on the same host, but take one off the host as the answer', async () => {
    await expect(get('HTTPS', '/here')).rejects.toThrow('HTTP status 500');
    expect(seen.at(-1)?.path).toBe('/fail');
    await expect(get('HTTP', '/away')).resolves.toBeUndefined();
    expect(seen.at(-1)?.path).toBe('/away');
  });
});
