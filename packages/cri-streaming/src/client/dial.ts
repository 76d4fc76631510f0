// Client side of the upgrades: SPDY/3.1 over HTTP/1.1, and WebSocket. A refused upgrade becomes a
// StreamingError carrying the server's Kubernetes Status.
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { WebSocket } from 'ws';
import type { KubeStatus } from '../protocol/status.js';
import { SpdySession } from '../spdy/session.js';
import { bufferMessages, type EarlyMessages } from '../websocket/channels.js';

export class StreamingError extends Error {
  constructor(
    message: string,
    /** The Status the server sent, when it sent one. */
    readonly status?: KubeStatus,
    /** The HTTP status of a refused upgrade. */
    readonly httpStatus?: number,
  ) {
    super(message);
    this.name = 'StreamingError';
  }
}

/** How to dial: client certificate and trust for an https URL (an apiserver dialling a kubelet), extra headers. */
export interface DialOptions {
  cert?: string;
  key?: string;
  ca?: string;
  rejectUnauthorized?: boolean;
  /** Extra request headers, e.g. `Authorization: Bearer …` for an apiserver. */
  headers?: Record<string, string>;
}

/** Opens a SPDY session on `url` offering `protocols`; resolves with the one the server chose. */
export function dialSpdy(
  url: string,
  protocols: readonly string[],
  signal?: AbortSignal,
  dial: DialOptions = {},
): Promise<{ session: SpdySession; protocol: string }> {
  const target = new URL(url);
  const { headers, ...trust } = dial;
  const request = (target.protocol === 'https:' ? https : http).request(target, {
    ...trust,
    method: 'POST',
    headers: {
      ...headers,
      Connection: 'Upgrade',
      Upgrade: 'SPDY/3.1',
      'X-Stream-Protocol-Version': [...protocols],
      'Content-Length': '0',
    },
    signal,
  });
  return new Promise((resolve, reject) => {
    request.on('upgrade', (res, socket, head) => {
      if (
        !String(res.headers.upgrade ?? '')
          .toLowerCase()
          .includes('spdy/3.1')
      ) {
        socket.destroy();
        reject(
          new StreamingError(`unable to upgrade connection: server switched to "${res.headers.upgrade}"`),
        );
        return;
      }
      socket.setNoDelay(true);
      const session = new SpdySession(socket, { role: 'client', head });
      resolve({ session, protocol: String(res.headers['x-stream-protocol-version'] ?? '') });
    });
    request.on('response', (res) => refusal(res).then(reject, reject));
    request.on('error', reject);
    request.end();
  });
}

/** Opens a WebSocket on `url` (http/https become ws/wss) offering `protocols`. */
export function dialWebSocket(
  url: string,
  protocols: readonly string[],
  signal?: AbortSignal,
): Promise<{ ws: WebSocket; protocol: string; early: EarlyMessages }> {
  const target = new URL(url);
  target.protocol =
    target.protocol === 'https:' ? 'wss:' : target.protocol === 'http:' ? 'ws:' : target.protocol;
  const ws = new WebSocket(target, [...protocols], { perMessageDeflate: false });
  const early = bufferMessages(ws);
  const onAbort = () => ws.terminate();
  signal?.addEventListener('abort', onAbort, { once: true });
  return new Promise((resolve, reject) => {
    ws.once('open', () => {
      signal?.removeEventListener('abort', onAbort);
      resolve({ ws, protocol: ws.protocol, early });
    });
    ws.once('unexpected-response', (_req, res) => refusal(res).then(reject, reject));
    ws.once('error', reject);
    ws.once('close', () => reject(new StreamingError('WebSocket closed before it opened')));
  });
}

/** The error for a non-upgrade answer: the Status message when the body is one. */
async function refusal(res: IncomingMessage): Promise<StreamingError> {
  const chunks: Buffer[] = [];
  for await (const c of res) chunks.push(c as Buffer);
  const body = Buffer.concat(chunks).toString('utf8').trim();
  let status: KubeStatus | undefined;
  try {
    const parsed = JSON.parse(body) as KubeStatus;
    if (parsed?.kind === 'Status') status = parsed;
  } catch {}
  return new StreamingError(
    `unable to upgrade connection: ${status?.message ?? (body || `HTTP ${res.statusCode}`)}`,
    status,
    res.statusCode,
  );
}
