// Starting and stopping the agent's HTTP(S) servers (healthz, the kubelet server) one way: a
// listen error (port in use) rejects instead of crashing the process, and stop does not wait for
// idle keep-alive clients, so SIGTERM ends the agent at once.
import type { Server as HttpServer } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';

type AnyServer = HttpServer | HttpsServer;

export async function listen(
  server: AnyServer,
  host: string,
  port: number,
): Promise<{ host: string; port: number }> {
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
  await closed;
}
