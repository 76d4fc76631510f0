// How a SPDY session ends. A server that ends its socket right behind its last frame races a
// spdystream client (kubectl, crictl): on EOF that client closes every stream at once and drops the
// frames still queued for them, so an exec's status could vanish and kubectl report exit 0.
import { once } from 'node:events';
import { type AddressInfo, createConnection, createServer, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { SpdySession, type SpdyStream } from '../src/spdy/session.js';

const open: Socket[] = [];
afterEach(() => {
  for (const s of open.splice(0)) s.destroy();
});

/** A server session and a client session on a loopback TCP connection (half-open allowed, as after an HTTP upgrade). */
async function pair(): Promise<{
  server: SpdySession;
  client: SpdySession;
  serverSocket: Socket;
  accepted: Promise<SpdyStream>;
}> {
  let accept!: (s: SpdyStream) => void;
  const accepted = new Promise<SpdyStream>((resolve) => {
    accept = resolve;
  });
  const listener = createServer({ allowHalfOpen: true });
  listener.listen(0, '127.0.0.1');
  await once(listener, 'listening');
  const clientSocket = createConnection((listener.address() as AddressInfo).port, '127.0.0.1');
  const [serverSocket] = (await once(listener, 'connection')) as [Socket];
  listener.close();
  open.push(clientSocket, serverSocket);
  const server = new SpdySession(serverSocket, {
    role: 'server',
    onStream: (stream) => {
      void stream.reply();
      accept(stream);
    },
  });
  const client = new SpdySession(clientSocket, { role: 'client' });
  return { server, client, serverSocket, accepted };
}

async function readAll(stream: SpdyStream): Promise<string> {
  let text = '';
  for await (const chunk of stream) text += String(chunk);
  return text;
}

describe('ending a SPDY session', () => {
  it('a server keeps the connection open after its GOAWAY until the client closes it', async () => {
    const { server, client, serverSocket, accepted } = await pair();
    const stream = await client.openStream({ streamtype: ['error'] });
    const serverStream = await accepted;
    serverStream.end('{"status":"Failure","reason":"NonZeroExitCode"}');
    let ended = false;
    const ending = server.end().then(() => {
      ended = true;
    });
    expect(await readAll(stream)).toBe('{"status":"Failure","reason":"NonZeroExitCode"}');
    // The server is still there after its last frame: a round trip through it succeeds, where a
    // server that had ended its socket could no longer answer.
    await client.ping();
    expect(ended).toBe(false);
    expect(serverSocket.writableEnded).toBe(false);
    await client.end();
    await ending;
    await server.closed;
  });

  it('a client ends its socket at once', async () => {
    const { client, server } = await pair();
    await client.end();
    // The server's read loop saw the client's EOF without the server doing anything.
    await new Promise<void>((resolve) =>
      server.signal.addEventListener('abort', () => resolve(), { once: true }),
    );
    await server.end();
    await client.closed;
  });
});
