// Starting and stopping the agent's HTTP(S) servers (healthz, the kubelet server) one way: a
// listen error (port in use) rejects instead of crashing the process, and stop does not wait for
// any client (idle keep-alive, upgraded, or one that stopped reading), so SIGTERM ends the agent
// at once.
import type { Server as HttpServer } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';

type AnyServer = HttpServer | HttpsServer;

/** Every TCP connection of a server, upgraded ones included, which closeAllConnections misses. */
const connections = new WeakMap<AnyServer, Set<Socket>>();

export async function listen(
  server: AnyServer,
  host: string,
  port: number,
): Promise<{ host: string; port: number }> {
  const open = new Set<Socket>();
  connections.set(server, open);
  server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  return { host: addr.address, port: addr.port };
}

export async function closeServer(server: AnyServer | undefined): Promise<void> {
  if (!server) return;
  const closed = new Promise<void>((r) => server.close(() => r()));
  server.closeAllConnections();
  for (const socket of connections.get(server) ?? []) socket.destroy();
  await closed;
}
