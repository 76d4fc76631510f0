import { encodeLiterals, type HeaderField, HpackDecoder, HpackError } from './hpack.js';

/**
 * Rewrites the request headers Go gRPC clients send before Node's HTTP/2 stack sees them.
 *
 * grpc-go (crictl, critest, the kubelet's remote runtime client) dials a unix socket with the
 * socket path as `:authority`. nghttp2 only accepts RFC 3986 authority characters there, so it
 * resets every such stream with PROTOCOL_ERROR; Go's own HTTP/2 server (containerd) accepts it.
 * This rewriter sits on the client-to-server byte stream of one connection: it passes the
 * preface and every frame through untouched except header blocks (HEADERS + CONTINUATION), which
 * it decodes with the client's HPACK state, fixes, and re-encodes as literals that leave the
 * server's dynamic table empty.
 */

export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
export const FRAME_HEADER = 9;
export const DEFAULT_MAX_FRAME_SIZE = 16_384;

export const HEADERS = 0x1;
export const SETTINGS = 0x4;
export const PUSH_PROMISE = 0x5;
const GOAWAY = 0x7;
export const CONTINUATION = 0x9;

const END_STREAM = 0x1;
export const ACK = 0x1;
export const END_HEADERS = 0x4;
const PADDED = 0x8;
const PRIORITY = 0x20;

const SETTINGS_HEADER_TABLE_SIZE = 0x1;
const SETTINGS_MAX_FRAME_SIZE = 0x5;

/** HTTP/2 error codes (RFC 9113 7) this rewriter answers with. */
export const H2_PROTOCOL_ERROR = 0x1;
export const H2_FRAME_SIZE_ERROR = 0x6;
export const H2_COMPRESSION_ERROR = 0x9;

/** A client broke HTTP/2 in a way that ends the connection (RFC 9113 5.4.1). */
export class Http2ConnectionError extends Error {
  constructor(
    readonly code: number,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'Http2ConnectionError';
  }
}

/** Header blocks larger than this are refused (CONTINUATION floods must not grow memory). */
export const MAX_HEADER_BLOCK_BYTES = 1 << 20;

/** `:authority`/`host` characters nghttp2 accepts: RFC 3986 reg-name, IP-literal, port, plus '@'. */
const AUTHORITY_CHAR = new Uint8Array(256);
for (const c of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@[]%") {
  AUTHORITY_CHAR[c.charCodeAt(0)] = 1;
}
const REPLACEMENT_AUTHORITY = Buffer.from('localhost');

/**
 * A client's ACK of a SETTINGS frame the server never sent, which is taken out of its bytes: only a
 * well-formed one, empty on stream 0. Any other ACK goes on for nghttp2 to refuse as a connection error.
 */
export function isDroppableSettingsAck(
  type: number,
  flags: number,
  length: number,
  streamId: number,
): boolean {
  return type === SETTINGS && (flags & ACK) !== 0 && length === 0 && streamId === 0;
}

/** An `:authority` or `host` field nghttp2 would reset the stream for. */
export function refusedAuthority(field: HeaderField): boolean {
  const name = field.name.toString('latin1');
  if (name !== ':authority' && name !== 'host') return false;
  for (const c of field.value) if (!AUTHORITY_CHAR[c]) return true;
  return false;
}

function fixAuthority(field: HeaderField): HeaderField {
  return refusedAuthority(field) ? { ...field, value: REPLACEMENT_AUTHORITY } : field;
}

function frameHeader(
  out: Buffer,
  pos: number,
  length: number,
  type: number,
  flags: number,
  streamId: number,
) {
  out.writeUIntBE(length, pos, 3);
  out[pos + 3] = type;
  out[pos + 4] = flags;
  out.writeUInt32BE(streamId, pos + 5);
}

/** A GOAWAY frame (stream 0) with `message` as its debug data. */
export function goawayFrame(lastStreamId: number, code: number, message: string): Buffer {
  const debug = Buffer.from(message.slice(0, 1024));
  const out = Buffer.alloc(FRAME_HEADER + 8 + debug.length);
  frameHeader(out, 0, 8 + debug.length, GOAWAY, 0, 0);
  out.writeUInt32BE(lastStreamId & 0x7fffffff, FRAME_HEADER);
  out.writeUInt32BE(code, FRAME_HEADER + 4);
  debug.copy(out, FRAME_HEADER + 8);
  return out;
}

/**
 * The header block fragment of a HEADERS frame's payload, without its padding, and the 5
 * PRIORITY bytes if it has them. Throws Http2ConnectionError for a malformed frame.
 */
export function headersFragment(
  flags: number,
  streamId: number,
  payload: Buffer,
): { fragment: Buffer; priority: Buffer | undefined } {
  if (streamId === 0) throw new Http2ConnectionError(H2_PROTOCOL_ERROR, 'HEADERS on stream 0');
  let start = 0;
  let padding = 0;
  if (flags & PADDED) {
    if (payload.length < 1)
      throw new Http2ConnectionError(H2_FRAME_SIZE_ERROR, 'PADDED HEADERS without a pad length');
    padding = payload[0]!;
    start = 1;
  }
  let priority: Buffer | undefined;
  if (flags & PRIORITY) {
    if (payload.length < start + 5)
      throw new Http2ConnectionError(H2_FRAME_SIZE_ERROR, 'HEADERS too short for PRIORITY');
    priority = payload.subarray(start, start + 5);
    start += 5;
  }
  if (padding > payload.length - start) {
    throw new Http2ConnectionError(
      H2_PROTOCOL_ERROR,
      `HEADERS padding of ${padding} bytes exceeds its payload`,
    );
  }
  return { fragment: payload.subarray(start, payload.length - padding), priority };
}

interface OpenBlock {
  streamId: number;
  endStream: boolean;
  /** The 5 PRIORITY bytes of the HEADERS frame, kept on the rewritten one. */
  priority: Buffer | undefined;
  fragments: Buffer[];
  size: number;
}

/** Follows the frame boundaries of one direction, for the parts that only need to be observed. */
class FrameCursor {
  readonly #header = Buffer.alloc(FRAME_HEADER);
  #headerBytes = 0;
  #payloadLeft = 0;
  /** Payload pieces of the current frame, when `want` asked for it. */
  #collect: Buffer[] | undefined;

  /** `onFrame` gets the payload of each complete frame that `want` asked for. */
  constructor(
    private readonly want: (type: number, flags: number) => boolean,
    private readonly onFrame: (payload: Buffer) => void,
  ) {}

  get atBoundary(): boolean {
    return this.#headerBytes === 0 && this.#payloadLeft === 0;
  }

  feed(chunk: Buffer): void {
    let pos = 0;
    while (pos < chunk.length) {
      if (this.#payloadLeft > 0) {
        const n = Math.min(this.#payloadLeft, chunk.length - pos);
        if (this.#collect) this.#collect.push(chunk.subarray(pos, pos + n));
        this.#payloadLeft -= n;
        pos += n;
        if (this.#payloadLeft === 0) this.#complete();
        continue;
      }
      const n = Math.min(FRAME_HEADER - this.#headerBytes, chunk.length - pos);
      chunk.copy(this.#header, this.#headerBytes, pos, pos + n);
      this.#headerBytes += n;
      pos += n;
      if (this.#headerBytes < FRAME_HEADER) break;
      this.#headerBytes = 0;
      this.#payloadLeft = this.#header.readUIntBE(0, 3);
      this.#collect = this.want(this.#header[3]!, this.#header[4]!) ? [] : undefined;
      if (this.#payloadLeft === 0) this.#complete();
    }
  }

  #complete(): void {
    if (this.#collect) this.onFrame(Buffer.concat(this.#collect));
    this.#collect = undefined;
  }
}

export class ClientHeaderRewriter {
  readonly #decoder = new HpackDecoder();
  /** The server's SETTINGS bound the frames and table sizes we may use. */
  readonly #server = new FrameCursor(
    (type, flags) => type === SETTINGS && (flags & ACK) === 0,
    (payload) => {
      for (let i = 0; i + 6 <= payload.length; i += 6) {
        const id = payload.readUInt16BE(i);
        const value = payload.readUInt32BE(i + 2);
        // Out-of-range values are the server's bug, never a reason for tiny or huge frames.
        if (id === SETTINGS_MAX_FRAME_SIZE && value >= DEFAULT_MAX_FRAME_SIZE && value < 1 << 24) {
          this.#maxFrameSize = value;
        } else if (id === SETTINGS_HEADER_TABLE_SIZE) this.#decoder.raiseLimit(value);
      }
    },
  );
  /**
   * Chunks holding an incomplete preface, frame header or header-block frame, joined once
   * `#need` bytes are there (not on every chunk: a frame trickling in byte by byte stays linear).
   */
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  #need = 0;
  #prefaceChecked = false;
  /** Not an HTTP/2 client: everything goes through untouched and the server answers it. */
  #raw = false;
  /** Payload bytes of a passed-through frame still to come. */
  #passLeft = 0;
  #block: OpenBlock | undefined;
  #maxFrameSize = DEFAULT_MAX_FRAME_SIZE;
  #lastStreamId = 0;
  /** The client's ACKs of a SETTINGS frame the server itself never sent (h2_opening.ts). */
  #acksToDrop: number;

  constructor(options: { settingsAcksToDrop?: number } = {}) {
    this.#acksToDrop = options.settingsAcksToDrop ?? 0;
  }

  /** The highest stream whose headers went to the server, for the last-stream-id of a GOAWAY. */
  get lastStreamId(): number {
    return this.#lastStreamId;
  }

  /** True between the server's frames, where a frame of our own can be sent to the client. */
  get serverAtFrameBoundary(): boolean {
    return this.#server.atBoundary;
  }

  /** Observes what the server sends (it passes on unchanged). */
  fromServer(chunk: Buffer): void {
    this.#server.feed(chunk);
  }

  /**
   * Returns what to send to the server for `chunk` from the client. Throws Http2ConnectionError;
   * then nothing of the chunk reaches the server and the connection must end.
   */
  fromClient(chunk: Buffer): Buffer[] {
    const lastStreamId = this.#lastStreamId;
    try {
      return this.#rewrite(chunk);
    } catch (err) {
      this.#lastStreamId = lastStreamId;
      throw err;
    }
  }

  #rewrite(chunk: Buffer): Buffer[] {
    if (this.#raw) return [chunk];
    let buf = chunk;
    if (this.#pendingBytes > 0) {
      this.#pending.push(chunk);
      this.#pendingBytes += chunk.length;
      if (this.#pendingBytes < this.#need) return [];
      buf = Buffer.concat(this.#pending);
      this.#pending = [];
      this.#pendingBytes = 0;
    }
    const out: Buffer[] = [];
    let pos = 0;
    // Start of bytes to forward unchanged; contiguous ones leave as one slice.
    let runStart = 0;
    const flushRun = (end: number) => {
      if (end > runStart) out.push(buf.subarray(runStart, end));
    };

    if (!this.#prefaceChecked) {
      const n = Math.min(PREFACE.length, buf.length);
      if (!buf.subarray(0, n).equals(PREFACE.subarray(0, n))) {
        this.#raw = true;
        return [buf];
      }
      if (n < PREFACE.length) {
        this.#hold(buf, PREFACE.length);
        return [];
      }
      this.#prefaceChecked = true;
      pos = PREFACE.length;
    }

    let need = 0;
    while (pos < buf.length) {
      if (this.#passLeft > 0) {
        const n = Math.min(this.#passLeft, buf.length - pos);
        this.#passLeft -= n;
        pos += n;
        continue;
      }
      need = FRAME_HEADER;
      if (buf.length - pos < need) break;
      const length = buf.readUIntBE(pos, 3);
      const type = buf[pos + 3]!;
      const flags = buf[pos + 4]!;
      const streamId = buf.readUInt32BE(pos + 5) & 0x7fffffff;
      if (this.#block && (type !== CONTINUATION || streamId !== this.#block.streamId)) {
        throw new Http2ConnectionError(
          H2_PROTOCOL_ERROR,
          `expected CONTINUATION of stream ${this.#block.streamId}, got frame type ${type} on stream ${streamId}`,
        );
      }
      if (type === PUSH_PROMISE)
        throw new Http2ConnectionError(H2_PROTOCOL_ERROR, 'a client sent PUSH_PROMISE');
      if (type !== HEADERS && type !== CONTINUATION) {
        if (this.#acksToDrop > 0 && isDroppableSettingsAck(type, flags, length, streamId)) {
          flushRun(pos);
          pos += FRAME_HEADER;
          runStart = pos;
          this.#acksToDrop--;
          continue;
        }
        pos += FRAME_HEADER;
        this.#passLeft = length;
        continue;
      }
      if (length > this.#maxFrameSize) {
        throw new Http2ConnectionError(
          H2_FRAME_SIZE_ERROR,
          `frame of ${length} bytes exceeds SETTINGS_MAX_FRAME_SIZE ${this.#maxFrameSize}`,
        );
      }
      need = FRAME_HEADER + length;
      if (buf.length - pos < need) break;
      flushRun(pos);
      const payload = buf.subarray(pos + FRAME_HEADER, pos + FRAME_HEADER + length);
      pos += FRAME_HEADER + length;
      runStart = pos;
      const rewritten =
        type === HEADERS
          ? this.#headers(flags, streamId, payload)
          : this.#continuation(flags, streamId, payload);
      if (rewritten) out.push(rewritten);
    }
    flushRun(pos);
    if (pos < buf.length) this.#hold(buf.subarray(pos), need);
    return out;
  }

  #hold(bytes: Buffer, need: number): void {
    this.#pending = [bytes];
    this.#pendingBytes = bytes.length;
    this.#need = need;
  }

  #headers(flags: number, streamId: number, payload: Buffer): Buffer | undefined {
    const { fragment, priority } = headersFragment(flags, streamId, payload);
    this.#block = { streamId, endStream: (flags & END_STREAM) !== 0, priority, fragments: [], size: 0 };
    return this.#append(fragment, flags);
  }

  #continuation(flags: number, streamId: number, payload: Buffer): Buffer | undefined {
    if (!this.#block) {
      throw new Http2ConnectionError(H2_PROTOCOL_ERROR, `CONTINUATION on stream ${streamId} without HEADERS`);
    }
    return this.#append(payload, flags);
  }

  #append(fragment: Buffer, flags: number): Buffer | undefined {
    const block = this.#block!;
    block.size += fragment.length;
    if (block.size > MAX_HEADER_BLOCK_BYTES) {
      throw new Http2ConnectionError(
        H2_PROTOCOL_ERROR,
        `header block of stream ${block.streamId} exceeds ${MAX_HEADER_BLOCK_BYTES} bytes`,
      );
    }
    block.fragments.push(fragment);
    if ((flags & END_HEADERS) === 0) return undefined;
    this.#block = undefined;
    const encoded = block.fragments.length === 1 ? block.fragments[0]! : Buffer.concat(block.fragments);
    let fields: HeaderField[];
    try {
      fields = this.#decoder.decode(encoded);
    } catch (err) {
      if (!(err instanceof HpackError)) throw err;
      throw new Http2ConnectionError(H2_COMPRESSION_ERROR, `stream ${block.streamId}: ${err.message}`, {
        cause: err,
      });
    }
    this.#lastStreamId = Math.max(this.#lastStreamId, block.streamId);
    return this.#frames(block, encodeLiterals(fields.map(fixAuthority)));
  }

  /** One HEADERS frame, then CONTINUATION frames when the block exceeds the server's frame size. */
  #frames(block: OpenBlock, encoded: Buffer): Buffer {
    const prio = block.priority?.length ?? 0;
    const firstRoom = this.#maxFrameSize - prio;
    const continuations =
      encoded.length > firstRoom ? Math.ceil((encoded.length - firstRoom) / this.#maxFrameSize) : 0;
    const out = Buffer.allocUnsafe((1 + continuations) * FRAME_HEADER + prio + encoded.length);
    let pos = 0;
    let taken = 0;
    for (let i = 0; i <= continuations; i++) {
      const room = i === 0 ? firstRoom : this.#maxFrameSize;
      const piece = Math.min(room, encoded.length - taken);
      const last = i === continuations;
      let flags = last ? END_HEADERS : 0;
      if (i === 0) {
        if (block.endStream) flags |= END_STREAM;
        if (block.priority) flags |= PRIORITY;
      }
      frameHeader(
        out,
        pos,
        piece + (i === 0 ? prio : 0),
        i === 0 ? HEADERS : CONTINUATION,
        flags,
        block.streamId,
      );
      pos += FRAME_HEADER;
      if (i === 0 && block.priority) pos += block.priority.copy(out, pos);
      pos += encoded.copy(out, pos, taken, taken + piece);
      taken += piece;
    }
    return out;
  }
}
