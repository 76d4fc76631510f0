// A remotecommand client (exec and attach) over SPDY or WebSocket, shaped like client-go's
// executors: it opens the channels asked for, copies them, and reads the outcome from the
// error stream.
import type { Readable, Writable } from 'node:stream';
import { REMOTE_COMMAND_SPDY_PROTOCOLS } from '../protocol/negotiate.js';
import {
  ERROR_CHANNEL,
  RESIZE_CHANNEL,
  STDERR_CHANNEL,
  STDIN_CHANNEL,
  STDOUT_CHANNEL,
} from '../protocol/remotecommand_ws.js';
import { EXIT_CODE_CAUSE, type KubeStatus, NON_ZERO_EXIT_CODE_REASON } from '../protocol/status.js';
import type { TerminalSize } from '../runtime/streaming_runtime.js';
import { GoAwayStatus } from '../spdy/frames.js';
import type { SpdySession, SpdyStream } from '../spdy/session.js';
import { collect } from '../util/streams.js';
import { ChannelSocket } from '../websocket/channels.js';
import { type DialOptions, dialSpdy, dialWebSocket, StreamingError } from './dial.js';

export interface RemoteCommandClientOptions {
  /** 'spdy' (default) or 'websocket'. */
  transport?: 'spdy' | 'websocket';
  /** Subprotocols to offer, most preferred first; defaults: all SPDY ones, or v5 and v4 for WebSocket. */
  protocols?: readonly string[];
  /** Sent to the command; its end closes the command's stdin (SPDY FIN, WebSocket v5 close signal). */
  stdin?: Readable;
  /** Receive the command's output; they are not ended. */
  stdout?: Writable;
  stderr?: Writable;
  tty?: boolean;
  /** Terminal sizes to send (tty only). */
  resize?: AsyncIterable<TerminalSize>;
  signal?: AbortSignal;
  /** Client certificate, trust and extra headers for an https URL (SPDY only). */
  dial?: DialOptions;
}

export interface RemoteCommandResult {
  /** 0, or the code of a NonZeroExitCode Status. */
  exitCode: number;
  /** The negotiated subprotocol. */
  protocol: string;
}

/**
 * Runs an exec or attach session on a URL from CRI Exec/Attach. Resolves with the exit code;
 * rejects with StreamingError when the server refuses or reports another failure.
 */
export async function streamRemoteCommand(
  url: string,
  options: RemoteCommandClientOptions,
): Promise<RemoteCommandResult> {
  const run = options.transport === 'websocket' ? overWebSocket : overSpdy;
  const { errorText, protocol } = await run(url, options);
  return { exitCode: decodeOutcome(errorText, protocol), protocol };
}

async function overSpdy(
  url: string,
  o: RemoteCommandClientOptions,
): Promise<{ errorText: string; protocol: string }> {
  const { session, protocol } = await dialSpdy(
    url,
    o.protocols ?? REMOTE_COMMAND_SPDY_PROTOCOLS,
    o.signal,
    o.dial,
  );
  const onAbort = () => session.destroy(new Error('aborted'));
  o.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const hasResize = o.tty && protocol !== 'v2.channel.k8s.io' && protocol !== 'channel.k8s.io';
    const [error, stdin, stdout, stderr, resize] = await openStreams(session, [
      'error',
      o.stdin && 'stdin',
      o.stdout && 'stdout',
      o.stderr && !o.tty && 'stderr',
      hasResize && 'resize',
    ]);
    const errorText = collect(error!);
    if (stdin) {
      o.stdin!.pipe(stdin);
      session.signal.addEventListener('abort', () => o.stdin!.unpipe(stdin), { once: true });
    }
    if (resize && o.resize) void sendResizes(o.resize, (json) => resize.write(json), session.signal);
    await Promise.all([copyOut(stdout, o.stdout), copyOut(stderr, o.stderr)]);
    const text = await errorText;
    if (o.signal?.aborted) throw o.signal.reason;
    return { errorText: text, protocol };
  } finally {
    o.signal?.removeEventListener('abort', onAbort);
    await session.end(GoAwayStatus.OK);
  }
}

async function overWebSocket(
  url: string,
  o: RemoteCommandClientOptions,
): Promise<{ errorText: string; protocol: string }> {
  const { ws, protocol, early } = await dialWebSocket(
    url,
    o.protocols ?? ['v5.channel.k8s.io', 'v4.channel.k8s.io'],
    o.signal,
  );
  const channels = new ChannelSocket(ws, {
    base64: protocol.includes('base64'),
    closeSignal: protocol === 'v5.channel.k8s.io',
    role: 'client',
  });
  const onAbort = () => channels.terminate();
  o.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const errorText = collect(channels.stream(ERROR_CHANNEL));
    const copies = [
      copyOut(channels.stream(STDOUT_CHANNEL), o.stdout),
      copyOut(channels.stream(STDERR_CHANNEL), o.stderr),
      channels.closed,
    ];
    channels.start(early);
    if (o.stdin) {
      const stdin = channels.stream(STDIN_CHANNEL);
      o.stdin.pipe(stdin);
      channels.signal.addEventListener('abort', () => o.stdin!.unpipe(stdin), { once: true });
    }
    if (o.tty && o.resize) {
      void sendResizes(o.resize, (json) => channels.send(RESIZE_CHANNEL, Buffer.from(json)), channels.signal);
    }
    await Promise.all(copies);
    if (o.signal?.aborted) throw o.signal.reason;
    return { errorText: await errorText, protocol };
  } finally {
    o.signal?.removeEventListener('abort', onAbort);
    channels.close();
  }
}

/**
 * Opens the named streams (none for a falsy name) all at once: every SYN_STREAM goes out before
 * the first SYN_REPLY is awaited, so the session costs one round trip instead of one per stream
 * (client-go's executor waits for each reply in turn). Rejects with the first refusal.
 */
async function openStreams(
  session: SpdySession,
  types: ReadonlyArray<string | false | undefined>,
): Promise<Array<SpdyStream | undefined>> {
  const opened = await Promise.allSettled(
    types.map((t) => (t ? session.openStream({ streamtype: [t] }) : undefined)),
  );
  const refused = opened.find((r) => r.status === 'rejected');
  if (refused) throw refused.reason;
  return opened.map((r) => (r as PromiseFulfilledResult<SpdyStream | undefined>).value);
}

/** Copies a received stream into the caller's writable (left open) until the stream ends. */
function copyOut(from: Readable | undefined, to: Writable | undefined): Promise<void> {
  if (!from) return Promise.resolve();
  return new Promise((resolve) => {
    from.once('end', resolve);
    if (to) from.pipe(to, { end: false });
    else from.resume();
  });
}

async function sendResizes(
  sizes: AsyncIterable<TerminalSize>,
  send: (json: string) => unknown,
  signal: AbortSignal,
): Promise<void> {
  for await (const { width, height } of sizes) {
    if (signal.aborted) return;
    send(`${JSON.stringify({ Width: width, Height: height })}\n`);
  }
}

/** The exit code from the error stream (client-go's error decoders), or a StreamingError. */
export function decodeOutcome(text: string, protocol: string): number {
  if (text === '') return 0;
  if (!/^v[45]\./.test(protocol)) throw new StreamingError(`error executing remote command: ${text}`);
  let status: KubeStatus;
  try {
    status = JSON.parse(text) as KubeStatus;
  } catch {
    throw new StreamingError(`error stream protocol error: not a Status: ${JSON.stringify(text)}`);
  }
  if (status.status === 'Success') return 0;
  if (status.reason === NON_ZERO_EXIT_CODE_REASON) {
    const cause = status.details?.causes?.find((c) => c.reason === EXIT_CODE_CAUSE);
    const code = Number(cause?.message);
    if (Number.isInteger(code) && code >= 0 && code <= 255) return code;
    throw new StreamingError(
      `error stream protocol error: bad exit code cause ${JSON.stringify(cause)}`,
      status,
    );
  }
  throw new StreamingError(status.message ?? 'unknown error', status);
}
