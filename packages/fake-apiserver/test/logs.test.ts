import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateTls } from '../src/index.js';
import { type Harness, KUBECTL, kubectl, pod, readyNode, startHarness } from './helpers.js';

describe('pods/log proxies to the kubelet', () => {
  let h: Harness;
  let kubelet: Server;
  const requests: string[] = [];

  beforeAll(async () => {
    // A stand-in kubelet server: HTTPS with its own self-signed certificate, like a real one.
    const tls = await generateTls();
    kubelet = createServer({ cert: tls.certPem, key: tls.keyPem }, (req, res) => {
      requests.push(req.url ?? '');
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.end('line 1\nline 2\n');
    });
    await new Promise<void>((r) => kubelet.listen(0, '127.0.0.1', () => r()));
    h = await startHarness({ scheduler: false });
    const node = readyNode('logs-node');
    node.status.addresses = [{ type: 'InternalIP', address: '127.0.0.1' }];
    node.status.daemonEndpoints = { kubeletEndpoint: { Port: (kubelet.address() as AddressInfo).port } };
    await h.api.post('/api/v1/nodes', node);
    await h.api.post('/api/v1/namespaces/default/pods', pod('chatty', { nodeName: 'logs-node' }));
  });
  afterAll(async () => {
    await h?.stop();
    kubelet?.close();
  });

  it('streams the kubelet containerLogs answer through the apiserver, with kubectl too', async () => {
    const res = await h.api.get(
      '/api/v1/namespaces/default/pods/chatty/log?tailLines=2&timestamps=true&bogus=1',
    );
    expect(res.status).toBe(200);
    expect(res.text).toBe('line 1\nline 2\n');
    expect(requests.at(-1)).toBe('/containerLogs/default/chatty/c?timestamps=true&tailLines=2');
    const out = await kubectl(KUBECTL.newest, h.kubeconfigPath, ['logs', 'chatty']);
    expect(out.stdout).toBe('line 1\nline 2\n');
    const bad = await h.api.get('/api/v1/namespaces/default/pods/chatty/log?container=nope');
    expect(bad.status).toBe(400);
    expect(bad.body.message).toBe('container nope is not valid for pod chatty');
  });
});
