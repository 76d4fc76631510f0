// Port-forward over SPDY/3.1 (portforward.k8s.io): for every forwarded connection the client
// opens an error stream and a data stream with the same `requestid` and the remote `port`.
import type { Duplex } from 'node:stream';
import { headerValue, RstStatus } from '../spdy/frames.js';
import { SpdySession, type SpdyStream } from '../spdy/session.js';
import { endWritable } from '../util/streams.js';
import { PORT_FORWARD_SPDY_PROTOCOLS, PROTOCOL_HEADER } from './negotiate.js';
import { forwardOne, type PortForwardHandler, type PortForwardOptions } from './portforward_session.js';
import { spdyHandshake } from './remotecommand_spdy.js';
import { linkedAbort, type UpgradeRequest } from './session_options.js';

interface StreamPair {
  data?: SpdyStream;
  error?: SpdyStream;
  timer: NodeJS.Timeout;
}

/** The HTTP upgrade to SPDY, then the session. */
export async function serveSpdyPortForward(
  { req, socket, head }: UpgradeRequest,
  handler: PortForwardHandler,
  options: PortForwardOptions,
): Promise<void> {
  const protocol = spdyHandshake(
    req.headers[PROTOCOL_HEADER.toLowerCase()],
    PORT_FORWARD_SPDY_PROTOCOLS,
    socket,
  );
  if (!protocol) return;
  await runSpdyPortForward(socket, head, handler, options);
}

/** A port-forward SPDY session on an already switched byte stream; resolves when it closes. */
export async function runSpdyPortForward(
  socket: Duplex,
  head: Buffer,
  handler: PortForwardHandler,
  options: PortForwardOptions,
): Promise<void> {
  const pairs = new Map<string, StreamPair>();
  const running = new Set<Promise<void>>();

  const onStream = (stream: SpdyStream) => {
    const problem = validate(stream);
    if (problem) {
      options.onError?.(new Error(`refused SPDY stream ${stream.id}: ${problem}`));
      stream.reset(RstStatus.REFUSED_STREAM);
      return;
    }
    void stream.reply();
    const type = headerValue(stream.headers, 'streamtype') as 'data' | 'error';
    // Clients older than the requestid header pair streams by id: error n, data n+2.
    const requestId =
      headerValue(stream.headers, 'requestid') ?? String(type === 'error' ? stream.id : stream.id - 2);
    let pair = pairs.get(requestId);
    if (!pair) {
      const created: StreamPair = {
        timer: setTimeout(() => {
          pairs.delete(requestId);
          const message = `timed out waiting for the data and error streams of request ${requestId}`;
          options.onError?.(new Error(message));
          created.error?.end(message);
          created.data?.reset(RstStatus.CANCEL);
        }, options.creationTimeoutMs),
      };
      pair = created;
      pairs.set(requestId, pair);
    }
    if (pair[type]) {
      const message = `error processing stream for request ${requestId}: ${type} stream already assigned`;
      options.onError?.(new Error(message));
      pair.error?.write(message);
      stream.reset(RstStatus.PROTOCOL_ERROR);
      return;
    }
    pair[type] = stream;
    if (pair.data && pair.error) {
      clearTimeout(pair.timer);
      pairs.delete(requestId);
      const run = forward(pair.data, pair.error).finally(() => running.delete(run));
      running.add(run);
    }
  };

  const session = new SpdySession(socket, {
    role: 'server',
    head,
    idleTimeoutMs: options.idleTimeoutMs,
    onError: options.onError,
    onStream,
  });
  options.signal?.addEventListener('abort', () => session.destroy(), { once: true, signal: session.signal });

  async function forward(data: SpdyStream, error: SpdyStream): Promise<void> {
    const port = Number(headerValue(data.headers, 'port'));
    const abort = linkedAbort(session.signal);
    data.once('reset', () => abort.abort(new Error('the client reset the data stream')));
    const result = await forwardOne(handler, port, data, abort.signal, options);
    abort.abort();
    if (!result.ok && result.reset) {
      data.reset(RstStatus.CANCEL);
      error.reset(RstStatus.CANCEL);
      return;
    }
    if (!result.ok) error.write(result.message);
    await Promise.all([endWritable(data, session.signal), endWritable(error, session.signal)]);
  }

  await session.closed;
  for (const pair of pairs.values()) clearTimeout(pair.timer);
  await Promise.all(running);
}

/** The kubelet's checks of a new port-forward stream's headers. */
function validate(stream: SpdyStream): string | undefined {
  const port = headerValue(stream.headers, 'port');
  if (!port) return '"port" header is required';
  if (!/^\d{1,5}$/.test(port) || Number(port) > 65535) return `unable to parse "${port}" as a port`;
  if (Number(port) < 1) return `port "${port}" must be > 0`;
  const type = headerValue(stream.headers, 'streamtype');
  if (!type) return '"streamType" header is required';
  if (type !== 'data' && type !== 'error') return `invalid stream type "${type}"`;
  return undefined;
}
