import { once } from 'node:events';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { RuntimeStreamSocket } from '../../src/server/runtime_socket.js';

const servers: ReturnType<typeof createServer>[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

/** Blocks the event loop, so the kernel handles what the peer did before our next write. */
const blockFor = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

// The order that lost an exec's exit status: the runtime writes its last frames and resets the
// connection, and the proxy writes a late client frame before it has read them, all in one turn
// of the event loop.
it("reads a runtime's last frames after a write to the reset connection failed", async () => {
  const server = createServer();
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const accepted = once(server, 'connection') as Promise<[Socket]>;
  const socket = new RuntimeStreamSocket().connect((server.address() as AddressInfo).port, '127.0.0.1');
  const received: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => received.push(chunk));
  socket.on('error', () => {});
  await once(socket, 'connect');
  const [runtime] = await accepted;

  runtime.write('{"status":"Failure","reason":"NonZeroExitCode"}');
  runtime.resetAndDestroy();
  blockFor(50);
  socket.write('late stdin frame');

  await once(socket, 'close');
  expect(Buffer.concat(received).toString()).toBe('{"status":"Failure","reason":"NonZeroExitCode"}');
});
