import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import {
  ACK,
  CONTINUATION,
  END_HEADERS,
  FRAME_HEADER,
  HEADERS,
  headersFragment,
  isDroppableSettingsAck,
  MAX_HEADER_BLOCK_BYTES,
  PREFACE,
  PUSH_PROMISE,
  refusedAuthority,
  SETTINGS,
} from './h2_rewriter.js';
import { HpackDecoder } from './hpack.js';
import { RewritingConnection } from './rewriting_connection.js';

/**
 * The opening of a client connection decides how the HTTP/2 server gets it.
 *
 * Only clients that send a unix socket path as `:authority` (grpc-go before cri-client's
 * `WithAuthority("localhost")`, e.g. crictl v1.26) need the header rewriter, and a JS layer over a
 * socket costs every call (Node wraps it in a JS stream instead of handing nghttp2 the native
 * handle). So the server first reads the client's first header block: if nghttp2 accepts it, the
 * native socket goes to the server with the bytes read so far put back; otherwise the connection
 * goes through the rewriter. A client names its authority once per connection (gRPC channels do),
 * so the first request speaks for the rest.
 *
 * Go clients send no request before the server's preface, so the server sends an empty SETTINGS
 * frame at once, which changes nothing; the client's ACK of it is taken out of what the server
 * sees, since the server did not send that frame.
 */

/** The server preface sent before the HTTP/2 server takes the connection: SETTINGS, no values. */
export const EMPTY_SETTINGS = Buffer.from([0, 0, 0, SETTINGS, 0, 0, 0, 0, 0]);

/** A client that has not sent its first request by then goes to the rewriter, which serves it either way. */
export const OPENING_TIMEOUT_MS = 2_000;

/** An opening that grows past this without a verdict goes to the rewriter, which bounds the rest. */
export const MAX_OPENING_BYTES = 64 * 1024;

export type Opening =
  /** Nothing decided yet: read more. */
  | { kind: 'incomplete' }
  /** nghttp2 accepts the first request: `bytes` is what the client sent, without its ACK of our SETTINGS. */
  | { kind: 'native'; bytes: Buffer }
  /** The rewriter must carry the connection (it also answers malformed input and non-HTTP/2 clients). */
  | { kind: 'rewrite' };

const INCOMPLETE: Opening = { kind: 'incomplete' };
const REWRITE: Opening = { kind: 'rewrite' };

/** Judges everything a client sent so far, after the server sent EMPTY_SETTINGS. */
export function inspectOpening(buf: Buffer): Opening {
  const n = Math.min(PREFACE.length, buf.length);
  if (!buf.subarray(0, n).equals(PREFACE.subarray(0, n))) return REWRITE;
  if (buf.length > MAX_OPENING_BYTES) return REWRITE;
  let pos = PREFACE.length;
  let ackAt = -1;
  let block: Buffer[] | undefined;
  let accepted = false;
  while (buf.length - pos >= FRAME_HEADER) {
    const length = buf.readUIntBE(pos, 3);
    const type = buf[pos + 3]!;
    const flags = buf[pos + 4]!;
    const streamId = buf.readUInt32BE(pos + 5) & 0x7fffffff;
    if (buf.length - pos - FRAME_HEADER < length) break;
    const payload = buf.subarray(pos + FRAME_HEADER, pos + FRAME_HEADER + length);
    const at = pos;
    pos += FRAME_HEADER + length;
    if (block) {
      // Anything but the block's CONTINUATION is a protocol error the rewriter answers.
      if (type !== CONTINUATION) return REWRITE;
      block.push(payload);
      if (flags & END_HEADERS) {
        if (!acceptable(Buffer.concat(block))) return REWRITE;
        accepted = true;
        block = undefined;
      }
    } else if (type === SETTINGS && flags & ACK && ackAt < 0) {
      // A malformed ACK is a connection error: the rewriter hands it on for nghttp2 to answer.
      if (!isDroppableSettingsAck(type, flags, length, streamId)) return REWRITE;
      ackAt = at;
    } else if (!accepted) {
      if (type === HEADERS) {
        let fragment: Buffer;
        try {
          ({ fragment } = headersFragment(flags, streamId, payload));
        } catch {
          return REWRITE;
        }
        if (flags & END_HEADERS) {
          if (!acceptable(fragment)) return REWRITE;
          accepted = true;
        } else {
          block = [fragment];
        }
      } else if (type === CONTINUATION || type === PUSH_PROMISE) {
        return REWRITE;
      }
    }
    if (accepted && ackAt >= 0) {
      return {
        kind: 'native',
        bytes: Buffer.concat([buf.subarray(0, ackAt), buf.subarray(ackAt + FRAME_HEADER)]),
      };
    }
  }
  return INCOMPLETE;
}

/** The first header block decodes (from an empty dynamic table) and nghttp2 takes its authority. */
function acceptable(block: Buffer): boolean {
  if (block.length > MAX_HEADER_BLOCK_BYTES) return false;
  try {
    return !new HpackDecoder().decode(block).some(refusedAuthority);
  } catch {
    return false;
  }
}

/**
 * Sends EMPTY_SETTINGS, reads the client's opening and calls `decided` once: with the native socket
 * (its bytes put back to be read again), or with what was read for the rewriter. Nothing is called
 * for a client that closes first.
 */
export function readOpening(
  socket: Socket,
  decided: (opening: { kind: 'native' } | { kind: 'rewrite'; read: Buffer }) => void,
  timeoutMs = OPENING_TIMEOUT_MS,
): void {
  let read: Buffer = Buffer.alloc(0);
  const onData = (chunk: Buffer) => {
    read = read.length === 0 ? chunk : Buffer.concat([read, chunk]);
    const opening = inspectOpening(read);
    if (opening.kind === 'native') {
      done();
      // Paused, the bytes put back wait for the HTTP/2 session, which reads them before the handle.
      socket.pause();
      socket.unshift(opening.bytes);
      decided({ kind: 'native' });
    } else if (opening.kind === 'rewrite') {
      rewrite();
    }
  };
  const onClose = () => done();
  const rewrite = () => {
    done();
    decided({ kind: 'rewrite', read });
  };
  const timer = setTimeout(rewrite, timeoutMs);
  const done = () => {
    clearTimeout(timer);
    socket.off('data', onData).off('close', onClose).off('error', ignore);
  };
  socket.on('data', onData).once('close', onClose).on('error', ignore);
  socket.write(EMPTY_SETTINGS);
}

/** A reset during the opening ends in 'close'; nothing else is owed to anyone. */
function ignore(): void {}

/** How a connection reached the HTTP/2 server: its native socket, or the header rewriter over it. */
export type ConnectionPath = 'native' | 'rewritten';

/**
 * Hands a new client connection to an HTTP/2 server (`serve`) once its opening is read: the
 * socket itself, or a RewritingConnection over it that reports protocol errors to `onError`.
 */
export function acceptConnection(
  socket: Socket,
  serve: (connection: Duplex, path: ConnectionPath) => void,
  options: { onError?: (err: Error) => void; timeoutMs?: number } = {},
): void {
  readOpening(
    socket,
    (opening) =>
      opening.kind === 'native'
        ? serve(socket, 'native')
        : serve(new RewritingConnection(socket, options.onError, opening), 'rewritten'),
    options.timeoutMs,
  );
}
