/**
 * serveCri owns its listening socket (so it can rewrite what Go clients send): close() must stop
 * it and end every connection, whatever state the connection is in.
 */
import net from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CriClient } from '../src/client/client.js';
import type { ConnectionPath } from '../src/server/h2_opening.js';
import { type CriServer, serveCri } from '../src/server/serve.js';
import { F, frame, grpcRequest, hp, PREFACE, RawClient, request, T } from './h2_helpers.js';
import { tempDir } from './helpers.js';

const backend = {
  name: 'conn',
  runtime: {
    version: () => ({ runtimeName: 'conn' }),
    async *getContainerEvents(_req: unknown, ctx: { signal: AbortSignal }) {
      await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
    },
  },
};

/** Resolves when the server has closed `socket` (reading it, or the end would go unseen). */
const closed = (socket: net.Socket) =>
  socket.destroyed
    ? Promise.resolve()
    : new Promise<void>((resolve) => socket.resume().once('close', () => resolve()));

function connectError(options: net.NetConnectOpts): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect(options);
    s.once('connect', () => {
      s.destroy();
      resolve('connected');
    });
    s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
  });
}

describe('serveCri connections', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  let server: CriServer | undefined;
  beforeEach(async () => {
    tmp = await tempDir();
  });
  afterEach(async () => {
    await server?.close({ graceMs: 100 });
    server = undefined;
    await tmp.remove();
  });

  it('close() ends streams, silent connections and ones reading a GOAWAY, and stops listening', async () => {
    server = await serveCri(backend, { socketPath: tmp.sock() });
    const client = await CriClient.connect(server.endpoint);
    const events = client.getContainerEvents({})[Symbol.asyncIterator]().next();
    const silent = net.connect(tmp.sock());
    await new Promise((resolve) => silent.once('connect', resolve));
    // This one broke the protocol, got its GOAWAY, and neither reads on nor closes.
    const broken = new RawClient(tmp.sock());
    broken.socket.write(Buffer.concat([PREFACE, frame(T.SETTINGS, 0, 0), request(1, hp.indexed(99))]));
    await broken.next((f) => f.type === T.GOAWAY);

    await server.close({ graceMs: 200 });
    server = undefined;
    await Promise.all([closed(silent), broken.closed, expect(events).resolves.toMatchObject({ done: true })]);
    client.close();
    expect(await connectError({ path: tmp.sock() })).toBe('ENOENT');
  });

  it('close() frees a tcp port', async () => {
    server = await serveCri(backend, { address: 'tcp://127.0.0.1:0' });
    const port = Number(server.endpoint.split(':').pop());
    const client = await CriClient.connect(server.endpoint);
    await expect(client.version({})).resolves.toMatchObject({ runtimeName: 'conn' });
    client.close();
    await server.close();
    server = undefined;
    expect(await connectError({ host: '127.0.0.1', port })).toBe('ECONNREFUSED');
  });

  it('refuses a port that is taken with a clear error', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as net.AddressInfo;
    await expect(serveCri(backend, { address: `tcp://127.0.0.1:${port}` })).rejects.toThrow(
      `cannot listen on tcp://127.0.0.1:${port}: listen EADDRINUSE`,
    );
    await new Promise((resolve) => taken.close(resolve));
  });

  it('reports how each connection reached the server: natively, or through the rewriter for a socket path', async () => {
    const paths: ConnectionPath[] = [];
    server = await serveCri(backend, { socketPath: tmp.sock(), onConnection: (p) => paths.push(p) });
    const client = await CriClient.connect(server.endpoint);
    await expect(client.version({})).resolves.toMatchObject({ runtimeName: 'conn' });
    client.close();
    const goLike = new RawClient(tmp.sock());
    goLike.socket.write(Buffer.concat([PREFACE, frame(T.SETTINGS, 0, 0)]));
    await goLike.next((f) => f.type === T.SETTINGS);
    goLike.socket.write(grpcRequest(1, '/runtime.v1.RuntimeService/Version', tmp.sock()));
    const answer = await goLike.next((f) => f.type === T.HEADERS && (f.flags & F.END_STREAM) !== 0);
    expect(answer.streamId).toBe(1);
    goLike.socket.destroy();
    expect(paths).toEqual(['native', 'rewritten']);
  });

  it('drops a client that does not speak HTTP/2 and serves the next', async () => {
    server = await serveCri(backend, { socketPath: tmp.sock() });
    const http1 = net.connect(tmp.sock());
    http1.on('error', () => {});
    http1.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await closed(http1);
    const client = await CriClient.connect(server.endpoint);
    await expect(client.version({})).resolves.toMatchObject({ runtimeName: 'conn' });
    client.close();
  });
});
