// Refusing a request with a Kubernetes Status body: on a raw socket (the 'upgrade' event hands
// over the socket before any response exists) or on a ServerResponse.
import { type OutgoingHttpHeaders, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { KubeStatus } from './status.js';

export function refuseUpgrade(socket: Duplex, status: KubeStatus, headers: OutgoingHttpHeaders = {}): void {
  if (socket.destroyed) return;
  const code = status.code ?? 500;
  const body = Buffer.from(`${JSON.stringify(status)}\n`);
  const lines = [`HTTP/1.1 ${code} ${STATUS_CODES[code] ?? 'Error'}`];
  const all: OutgoingHttpHeaders = {
    'Content-Type': 'application/json',
    'Content-Length': body.length,
    Connection: 'close',
    ...headers,
  };
  for (const [name, value] of Object.entries(all)) {
    for (const v of Array.isArray(value) ? value : [value]) lines.push(`${name}: ${v}`);
  }
  socket.end(Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`), body]));
  socket.on('error', () => {});
  setTimeout(() => socket.destroy(), 1_000).unref();
}

export function replyStatus(
  res: ServerResponse,
  status: KubeStatus,
  headers: OutgoingHttpHeaders = {},
): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const body = `${JSON.stringify(status)}\n`;
  res.writeHead(status.code ?? 500, { 'Content-Type': 'application/json', ...headers });
  res.end(body);
}
