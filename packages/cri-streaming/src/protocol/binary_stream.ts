// A byte stream sent to a WebSocket client, as apimachinery's wsstream.Reader sends a pod's log:
// each chunk one message, raw in a binary message (binary.k8s.io, or no subprotocol) or base64 in
// a text message (base64.binary.k8s.io), and a normal close when the stream ends.
import type { Readable } from 'node:stream';
import { acceptWebSocket } from '../websocket/upgrade.js';
import { headerList, negotiate } from './negotiate.js';
import type { UpgradeRequest } from './session_options.js';

/** wsstream's NewDefaultReaderProtocols, in its order of preference. */
export const BINARY_STREAM_WS_PROTOCOLS = ['binary.k8s.io', 'base64.binary.k8s.io'] as const;

/**
 * Completes the handshake and sends `source` until it ends (or fails: the socket then closes
 * with 1011). A client that offers subprotocols but none of these gets no subprotocol and raw
 * binary messages, as wsstream falls back to its "" protocol. Resolves once the socket closed.
 */
export async function serveBinaryStream(upgrade: UpgradeRequest, source: Readable): Promise<void> {
  const offered = headerList(upgrade.req.headers['sec-websocket-protocol']);
  const protocol = negotiate(offered, BINARY_STREAM_WS_PROTOCOLS) ?? '';
  const accepted = await acceptWebSocket(upgrade.req, upgrade.socket, upgrade.head, protocol);
  if (!accepted) {
    source.destroy();
    return;
  }
  const { ws } = accepted;
  const base64 = protocol === 'base64.binary.k8s.io';
  await new Promise<void>((resolve) => {
    ws.once('close', () => {
      source.destroy();
      resolve();
    });
    source.on('data', (chunk: Buffer) => {
      if (chunk.length === 0) return;
      if (base64) ws.send(chunk.toString('base64'), { binary: false });
      else ws.send(chunk, { binary: true });
    });
    source.once('end', () => ws.close(1000));
    source.once('error', () => ws.close(1011));
  });
}
