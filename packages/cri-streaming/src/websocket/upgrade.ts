// Completing a WebSocket handshake on a socket handed over by an HTTP server's 'upgrade' event.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import { bufferMessages, type EarlyMessages } from './channels.js';

/** Client messages larger than this close the socket (stdin and port-forward data come in small pieces). */
const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

/**
 * Answers the handshake with `protocol` as the subprotocol ('' for none). Resolves undefined when
 * the handshake itself is invalid: ws then answers 400 and closes the socket.
 */
export function acceptWebSocket(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  protocol: string,
): Promise<{ ws: WebSocket; early: EarlyMessages } | undefined> {
  const wss = new WebSocketServer({
    noServer: true,
    perMessageDeflate: false,
    maxPayload: MAX_MESSAGE_BYTES,
    handleProtocols: () => protocol || false,
  });
  return new Promise((resolve) => {
    const onClose = () => resolve(undefined);
    socket.once('close', onClose);
    socket.on('error', () => {});
    wss.handleUpgrade(req, socket, head, (ws) => {
      socket.off('close', onClose);
      resolve({ ws, early: bufferMessages(ws) });
    });
  });
}
