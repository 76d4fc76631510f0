// pods/log over WebSocket, as e2e's "should support retrieving logs from the container over
// websockets" reads it: the kubelet's answer as binary.k8s.io (or base64) messages, then a close.
import { once } from 'node:events';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { generateTls } from '../src/index.js';
import { type Harness, pod, readyNode, startHarness, TOKEN } from './helpers.js';

describe('pods/log over WebSocket', () => {
  let h: Harness;
  let kubelet: Server;
  const requests: string[] = [];

  beforeAll(async () => {
    const tls = await generateTls();
    kubelet = createServer({ cert: tls.certPem, key: tls.keyPem }, (req, res) => {
      requests.push(req.url ?? '');
      if (req.url?.endsWith('/gone')) {
        res.writeHead(404, { 'Content-Type': 'text/plain' });
        res.end('container "gone" not found');
        return;
      }
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.write('container is alive\n');
      setTimeout(() => res.end('bye\n'), 20);
    });
    await new Promise<void>((r) => kubelet.listen(0, '127.0.0.1', () => r()));
    h = await startHarness({ scheduler: false });
    const node = readyNode('ws-logs-node');
    node.status.addresses = [{ type: 'InternalIP', address: '127.0.0.1' }];
    node.status.daemonEndpoints = { kubeletEndpoint: { Port: (kubelet.address() as AddressInfo).port } };
    await h.api.post('/api/v1/nodes', node);
    const p = pod('chatty', { nodeName: 'ws-logs-node' });
    p.spec.containers.push({ name: 'gone', image: 'busybox' });
    await h.api.post('/api/v1/namespaces/default/pods', p);
  });
  afterAll(async () => {
    await h?.stop();
    kubelet?.close();
  });

  const open = (path: string, protocols: string[], token = TOKEN) =>
    new WebSocket(`${h.server.url.replace(/^https/, 'wss')}${path}`, protocols, {
      ca: h.server.caPem,
      headers: { Authorization: `Bearer ${token}` },
    });

  async function read(ws: WebSocket) {
    const messages: { data: Buffer; binary: boolean }[] = [];
    ws.on('message', (data: Buffer, binary) => messages.push({ data, binary }));
    const [code] = (await once(ws, 'close')) as [number];
    return { messages, code, protocol: ws.protocol };
  }

  it('binary.k8s.io: the log as binary messages until the kubelet ends it, then a normal close', async () => {
    const r = await read(
      open('/api/v1/namespaces/default/pods/chatty/log?container=c&tailLines=1', ['binary.k8s.io']),
    );
    expect(r.protocol).toBe('binary.k8s.io');
    expect(r.code).toBe(1000);
    expect(r.messages.every((m) => m.binary)).toBe(true);
    expect(Buffer.concat(r.messages.map((m) => m.data)).toString()).toBe('container is alive\nbye\n');
    expect(requests.at(-1)).toBe('/containerLogs/default/chatty/c?tailLines=1');
  });

  it('base64.binary.k8s.io: text messages', async () => {
    const r = await read(
      open('/api/v1/namespaces/default/pods/chatty/log?container=c', ['base64.binary.k8s.io']),
    );
    expect(r.protocol).toBe('base64.binary.k8s.io');
    const text = r.messages.map((m) => Buffer.from(m.data.toString(), 'base64').toString()).join('');
    expect(text).toBe('container is alive\nbye\n');
  });

  async function refusal(ws: WebSocket) {
    const [, res] = (await once(ws, 'unexpected-response')) as [unknown, import('node:http').IncomingMessage];
    const chunks: Buffer[] = [];
    for await (const c of res) chunks.push(c as Buffer);
    return { status: res.statusCode, body: JSON.parse(Buffer.concat(chunks).toString()) };
  }

  it('refusals come as HTTP Status answers: a kubelet 404, an unknown container, no credentials', async () => {
    const gone = await refusal(
      open('/api/v1/namespaces/default/pods/chatty/log?container=gone', ['binary.k8s.io']),
    );
    expect(gone.status).toBe(404);
    expect(gone.body.message).toBe('container "gone" not found');
    const bad = await refusal(
      open('/api/v1/namespaces/default/pods/chatty/log?container=nope', ['binary.k8s.io']),
    );
    expect(bad.status).toBe(400);
    expect(bad.body.message).toBe('container nope is not valid for pod chatty');
    const anon = await refusal(open('/api/v1/namespaces/default/pods/chatty/log?container=c', [], 'wrong'));
    expect(anon.status).toBe(401);
  });
});
