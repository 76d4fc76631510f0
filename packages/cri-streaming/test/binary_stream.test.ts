// serveBinaryStream: a byte stream over WebSocket as wsstream.Reader sends it (pod logs).
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { serveBinaryStream } from '../src/protocol/binary_stream.js';

let server: Server | undefined;
afterEach(() => server?.close());

/** A server whose every upgrade gets `source`; the client's messages until the close. */
async function receive(source: PassThrough, protocols: string[], feed: () => void) {
  server = createServer();
  server.on('upgrade', (req, socket, head) => void serveBinaryStream({ req, socket, head }, source));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const ws = new WebSocket(`ws://127.0.0.1:${port}/`, protocols);
  const messages: { data: Buffer; binary: boolean }[] = [];
  ws.on('message', (data: Buffer, binary) => messages.push({ data, binary }));
  await once(ws, 'open');
  feed();
  const [code] = (await once(ws, 'close')) as [number];
  return { protocol: ws.protocol, messages, code };
}

describe('serveBinaryStream', () => {
  it('binary.k8s.io: each chunk one binary message, then a normal close when the stream ends', async () => {
    const src = new PassThrough();
    const r = await receive(src, ['binary.k8s.io'], () => {
      src.write('container is alive\n');
      setTimeout(() => src.end('second\n'), 20);
    });
    expect(r.protocol).toBe('binary.k8s.io');
    expect(r.code).toBe(1000);
    expect(r.messages.every((m) => m.binary)).toBe(true);
    expect(Buffer.concat(r.messages.map((m) => m.data)).toString()).toBe('container is alive\nsecond\n');
  });

  it('base64.binary.k8s.io: text messages holding base64', async () => {
    const src = new PassThrough();
    const r = await receive(src, ['base64.binary.k8s.io'], () => src.end(Buffer.from([0, 255, 10])));
    expect(r.protocol).toBe('base64.binary.k8s.io');
    expect(r.messages).toHaveLength(1);
    expect(r.messages[0]!.binary).toBe(false);
    expect(Buffer.from(r.messages[0]!.data.toString(), 'base64')).toEqual(Buffer.from([0, 255, 10]));
  });

  it('the client preference wins; no known subprotocol falls back to raw binary without one', async () => {
    const both = new PassThrough();
    const r1 = await receive(both, ['base64.binary.k8s.io', 'binary.k8s.io'], () => both.end('x'));
    expect(r1.protocol).toBe('base64.binary.k8s.io');
    server?.close();
    const none = new PassThrough();
    const r2 = await receive(none, [], () => none.end('raw'));
    expect(r2.protocol).toBe('');
    expect(r2.messages.map((m) => [m.data.toString(), m.binary])).toEqual([['raw', true]]);
  });

  it('a failing stream closes the socket with 1011', async () => {
    const src = new PassThrough();
    const r = await receive(src, ['binary.k8s.io'], () => src.destroy(new Error('kubelet went away')));
    expect(r.code).toBe(1011);
  });
});
