// SPDY/3.1 framing: the frame types, their binary layout, header name/value blocks, and an
// incremental parser that cuts a byte stream into frames. Header blocks stay compressed here;
// codec.ts owns the zlib contexts, because compression state spans frames.

export const SPDY_VERSION = 3;
/** The largest length a frame header can carry (24 bits). */
export const MAX_FRAME_LENGTH = 0xffffff;

export const FrameType = {
  SYN_STREAM: 1,
  SYN_REPLY: 2,
  RST_STREAM: 3,
  SETTINGS: 4,
  PING: 6,
  GOAWAY: 7,
  HEADERS: 8,
  WINDOW_UPDATE: 9,
} as const;

export const FLAG_FIN = 0x01;
export const FLAG_UNIDIRECTIONAL = 0x02;
export const FLAG_SETTINGS_CLEAR = 0x01;

/** RST_STREAM status codes. */
export const RstStatus = {
  PROTOCOL_ERROR: 1,
  INVALID_STREAM: 2,
  REFUSED_STREAM: 3,
  UNSUPPORTED_VERSION: 4,
  CANCEL: 5,
  INTERNAL_ERROR: 6,
  FLOW_CONTROL_ERROR: 7,
  STREAM_IN_USE: 8,
  STREAM_ALREADY_CLOSED: 9,
  FRAME_TOO_LARGE: 11,
} as const;

/** GOAWAY status codes. */
export const GoAwayStatus = { OK: 0, PROTOCOL_ERROR: 1, INTERNAL_ERROR: 2 } as const;

/** Header names (lower case) to values; SPDY joins several values of one name with NUL. */
export type SpdyHeaders = Record<string, string[]>;

export type SpdyFrame =
  | {
      type: 'SYN_STREAM';
      streamId: number;
      associatedStreamId: number;
      priority: number;
      slot: number;
      fin: boolean;
      unidirectional: boolean;
      headers: SpdyHeaders;
    }
  | { type: 'SYN_REPLY'; streamId: number; fin: boolean; headers: SpdyHeaders }
  | { type: 'RST_STREAM'; streamId: number; status: number }
  | { type: 'SETTINGS'; clear: boolean; entries: { id: number; flags: number; value: number }[] }
  | { type: 'PING'; id: number }
  | { type: 'GOAWAY'; lastGoodStreamId: number; status: number }
  | { type: 'HEADERS'; streamId: number; fin: boolean; headers: SpdyHeaders }
  | { type: 'WINDOW_UPDATE'; streamId: number; delta: number }
  | { type: 'DATA'; streamId: number; fin: boolean; data: Buffer };

/** A frame as cut from the wire: control frames keep their raw payload until decoded. */
export type RawFrame =
  | { control: true; version: number; type: number; flags: number; payload: Buffer }
  | { control: false; streamId: number; flags: number; payload: Buffer };

/**
 * A violation of the framing rules. `streamId` is set when only that stream is affected (the
 * peer gets RST_STREAM with `rstStatus`); otherwise the whole session is in error (GOAWAY).
 */
export class SpdyProtocolError extends Error {
  constructor(
    message: string,
    readonly streamId?: number,
    readonly rstStatus: number = RstStatus.PROTOCOL_ERROR,
  ) {
    super(message);
    this.name = 'SpdyProtocolError';
  }
}

// ---- encoding ----

function controlFrame(type: number, flags: number, payload: Buffer): Buffer {
  if (payload.length > MAX_FRAME_LENGTH)
    throw new RangeError(`SPDY control frame too large: ${payload.length}`);
  const head = Buffer.alloc(8);
  head.writeUInt16BE(0x8000 | SPDY_VERSION, 0);
  head.writeUInt16BE(type, 2);
  head.writeUInt32BE(((flags & 0xff) << 24) | payload.length, 4);
  return Buffer.concat([head, payload]);
}

export function encodeData(streamId: number, data: Buffer, fin: boolean): Buffer {
  return Buffer.concat([encodeDataHead(streamId, data.length, fin), data]);
}

/** The 8 bytes before a DATA frame's payload, so the payload can be written as it is, uncopied. */
export function encodeDataHead(streamId: number, length: number, fin: boolean): Buffer {
  if (streamId <= 0 || streamId > 0x7fffffff) throw new RangeError(`bad SPDY stream id ${streamId}`);
  if (length > MAX_FRAME_LENGTH) throw new RangeError(`SPDY data frame too large: ${length}`);
  const head = Buffer.allocUnsafe(8);
  head.writeUInt32BE(streamId, 0);
  head.writeUInt32BE((((fin ? FLAG_FIN : 0) << 24) | length) >>> 0, 4);
  return head;
}

function u32s(...values: number[]): Buffer {
  const b = Buffer.alloc(values.length * 4);
  for (const [i, v] of values.entries()) b.writeUInt32BE(v >>> 0, i * 4);
  return b;
}

/**
 * Encodes one frame. `compressedHeaders` is the header block of SYN_STREAM, SYN_REPLY and HEADERS,
 * already compressed by the connection's deflate context (see codec.ts).
 */
export function encodeFrame(frame: SpdyFrame, compressedHeaders: Buffer = Buffer.alloc(0)): Buffer {
  switch (frame.type) {
    case 'DATA':
      return encodeData(frame.streamId, frame.data, frame.fin);
    case 'SYN_STREAM': {
      const fixed = Buffer.alloc(10);
      fixed.writeUInt32BE(frame.streamId & 0x7fffffff, 0);
      fixed.writeUInt32BE(frame.associatedStreamId & 0x7fffffff, 4);
      fixed.writeUInt8((frame.priority & 0x7) << 5, 8);
      fixed.writeUInt8(frame.slot & 0xff, 9);
      const flags = (frame.fin ? FLAG_FIN : 0) | (frame.unidirectional ? FLAG_UNIDIRECTIONAL : 0);
      return controlFrame(FrameType.SYN_STREAM, flags, Buffer.concat([fixed, compressedHeaders]));
    }
    case 'SYN_REPLY':
    case 'HEADERS':
      return controlFrame(
        frame.type === 'SYN_REPLY' ? FrameType.SYN_REPLY : FrameType.HEADERS,
        frame.fin ? FLAG_FIN : 0,
        Buffer.concat([u32s(frame.streamId & 0x7fffffff), compressedHeaders]),
      );
    case 'RST_STREAM':
      return controlFrame(FrameType.RST_STREAM, 0, u32s(frame.streamId & 0x7fffffff, frame.status));
    case 'SETTINGS':
      return controlFrame(
        FrameType.SETTINGS,
        frame.clear ? FLAG_SETTINGS_CLEAR : 0,
        u32s(
          frame.entries.length,
          ...frame.entries.flatMap((e) => [((e.flags & 0xff) << 24) | (e.id & 0xffffff), e.value]),
        ),
      );
    case 'PING':
      return controlFrame(FrameType.PING, 0, u32s(frame.id));
    case 'GOAWAY':
      return controlFrame(FrameType.GOAWAY, 0, u32s(frame.lastGoodStreamId & 0x7fffffff, frame.status));
    case 'WINDOW_UPDATE':
      return controlFrame(
        FrameType.WINDOW_UPDATE,
        0,
        u32s(frame.streamId & 0x7fffffff, frame.delta & 0x7fffffff),
      );
  }
}

/** Serializes a name/value block (before compression): count, then length-prefixed names and values. */
export function serializeHeaderBlock(headers: SpdyHeaders): Buffer {
  const entries = Object.entries(headers);
  const parts: Buffer[] = [u32s(entries.length)];
  for (const [name, values] of entries) {
    const n = Buffer.from(name.toLowerCase(), 'utf8');
    const v = Buffer.from(values.join('\0'), 'utf8');
    parts.push(u32s(n.length), n, u32s(v.length), v);
  }
  return Buffer.concat(parts);
}

// ---- decoding ----

/** Parses a decompressed name/value block; names must be unique, lower case and non-empty. */
export function parseHeaderBlock(block: Buffer, streamId: number): SpdyHeaders {
  const fail = (why: string): never => {
    throw new SpdyProtocolError(`stream ${streamId}: bad header block: ${why}`, streamId);
  };
  let off = 0;
  const u32 = (): number => {
    if (off + 4 > block.length) fail('truncated');
    const v = block.readUInt32BE(off);
    off += 4;
    return v;
  };
  const bytes = (n: number): Buffer => {
    if (off + n > block.length) fail('truncated');
    const b = block.subarray(off, off + n);
    off += n;
    return b;
  };
  const count = u32();
  // Each pair needs at least 8 bytes; a count beyond that is a lie, not a reason to allocate.
  if (count > (block.length - 4) / 8) fail(`claims ${count} headers in ${block.length} bytes`);
  const headers: SpdyHeaders = Object.create(null);
  for (let i = 0; i < count; i++) {
    const name = bytes(u32()).toString('utf8');
    const value = bytes(u32()).toString('utf8');
    if (name === '') fail('empty header name');
    if (name !== name.toLowerCase()) fail(`header name "${name}" is not lower case`);
    if (name in headers) fail(`duplicate header "${name}"`);
    headers[name] = value.split('\0');
  }
  if (off !== block.length) fail(`${block.length - off} trailing bytes`);
  return headers;
}

/** The first value of a header, or undefined. */
export function headerValue(headers: SpdyHeaders, name: string): string | undefined {
  return headers[name.toLowerCase()]?.[0];
}

/** Minimum payload length of each control frame type; shorter ones are malformed. */
const MIN_CONTROL_LENGTH: Record<number, number> = {
  [FrameType.SYN_STREAM]: 10,
  [FrameType.SYN_REPLY]: 4,
  [FrameType.RST_STREAM]: 8,
  [FrameType.SETTINGS]: 4,
  [FrameType.PING]: 4,
  [FrameType.GOAWAY]: 8,
  [FrameType.HEADERS]: 4,
  [FrameType.WINDOW_UPDATE]: 8,
};

/** Frames with a compressed header block, and where that block starts in the payload. */
export const HEADER_BLOCK_OFFSET: Record<number, number> = {
  [FrameType.SYN_STREAM]: 10,
  [FrameType.SYN_REPLY]: 4,
  [FrameType.HEADERS]: 4,
};

/**
 * Decodes a raw control frame except for its header block; `headers` is the block decompressed
 * by the caller (empty object for frames without one). Returns undefined for control frame types
 * SPDY/3.1 does not define (the draft says to ignore them).
 */
export function decodeControl(
  raw: RawFrame & { control: true },
  headers: SpdyHeaders = {},
): SpdyFrame | undefined {
  const p = raw.payload;
  const min = MIN_CONTROL_LENGTH[raw.type];
  if (min === undefined) return undefined;
  if (p.length < min)
    throw new SpdyProtocolError(`control frame type ${raw.type} is ${p.length} bytes, needs ${min}`);
  const fin = (raw.flags & FLAG_FIN) !== 0;
  const id31 = (o: number) => p.readUInt32BE(o) & 0x7fffffff;
  switch (raw.type) {
    case FrameType.SYN_STREAM:
      return {
        type: 'SYN_STREAM',
        streamId: id31(0),
        associatedStreamId: id31(4),
        priority: p.readUInt8(8) >> 5,
        slot: p.readUInt8(9),
        fin,
        unidirectional: (raw.flags & FLAG_UNIDIRECTIONAL) !== 0,
        headers,
      };
    case FrameType.SYN_REPLY:
      return { type: 'SYN_REPLY', streamId: id31(0), fin, headers };
    case FrameType.HEADERS:
      return { type: 'HEADERS', streamId: id31(0), fin, headers };
    case FrameType.RST_STREAM:
      if (p.length !== 8) throw new SpdyProtocolError(`RST_STREAM is ${p.length} bytes, must be 8`);
      return { type: 'RST_STREAM', streamId: id31(0), status: p.readUInt32BE(4) };
    case FrameType.SETTINGS: {
      const n = p.readUInt32BE(0);
      if (p.length !== 4 + n * 8)
        throw new SpdyProtocolError(`SETTINGS claims ${n} entries in ${p.length} bytes`);
      const entries = [];
      for (let i = 0; i < n; i++) {
        const flagsId = p.readUInt32BE(4 + i * 8);
        entries.push({ flags: flagsId >>> 24, id: flagsId & 0xffffff, value: p.readUInt32BE(8 + i * 8) });
      }
      return { type: 'SETTINGS', clear: (raw.flags & FLAG_SETTINGS_CLEAR) !== 0, entries };
    }
    case FrameType.PING:
      if (p.length !== 4) throw new SpdyProtocolError(`PING is ${p.length} bytes, must be 4`);
      return { type: 'PING', id: p.readUInt32BE(0) };
    case FrameType.GOAWAY:
      if (p.length !== 8) throw new SpdyProtocolError(`GOAWAY is ${p.length} bytes, must be 8`);
      return { type: 'GOAWAY', lastGoodStreamId: id31(0), status: p.readUInt32BE(4) };
    case FrameType.WINDOW_UPDATE:
      if (p.length !== 8) throw new SpdyProtocolError(`WINDOW_UPDATE is ${p.length} bytes, must be 8`);
      return { type: 'WINDOW_UPDATE', streamId: id31(0), delta: p.readUInt32BE(4) & 0x7fffffff };
  }
  return undefined;
}

/**
 * Cuts a byte stream into frames. Feed chunks as they arrive with push(); next() returns each
 * complete frame once, or undefined until more bytes come. Frames may span any number of chunks.
 */
export class FrameParser {
  private chunks: Buffer[] = [];
  private buffered = 0;

  constructor(private readonly maxFrameLength = MAX_FRAME_LENGTH) {}

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.chunks.push(chunk);
    this.buffered += chunk.length;
  }

  /** Bytes received but not yet returned as frames. */
  get pending(): number {
    return this.buffered;
  }

  next(): RawFrame | undefined {
    if (this.buffered < 8) return undefined;
    const head = this.peekHead();
    const length = head.readUInt32BE(4) & 0xffffff;
    const flags = head.readUInt8(4);
    if (length > this.maxFrameLength) {
      throw new SpdyProtocolError(`frame of ${length} bytes exceeds the limit of ${this.maxFrameLength}`);
    }
    if (this.buffered < 8 + length) return undefined;
    const first = head.readUInt32BE(0);
    this.skip(8);
    const payload = this.take(length);
    if (first & 0x80000000) {
      return { control: true, version: (first >>> 16) & 0x7fff, type: first & 0xffff, flags, payload };
    }
    return { control: false, streamId: first & 0x7fffffff, flags, payload };
  }

  /** The 8-byte frame header, copied only when it straddles chunks. */
  private peekHead(): Buffer {
    const first = this.chunks[0]!;
    if (first.length >= 8) return first;
    const out = Buffer.allocUnsafe(8);
    let off = 0;
    for (const c of this.chunks) {
      off += c.copy(out, off, 0, Math.min(c.length, 8 - off));
      if (off === 8) break;
    }
    return out;
  }

  private skip(n: number): void {
    this.buffered -= n;
    while (n > 0) {
      const c = this.chunks[0]!;
      if (c.length > n) {
        this.chunks[0] = c.subarray(n);
        return;
      }
      n -= c.length;
      this.chunks.shift();
    }
  }

  /**
   * The next n bytes: a view of the chunk they arrived in, or, when they straddle chunks, a copy
   * of exactly those bytes (joining everything buffered would copy the same bytes again for each
   * frame that follows in it).
   */
  private take(n: number): Buffer {
    const first = this.chunks[0];
    if (n === 0 || first === undefined) return Buffer.alloc(0);
    if (first.length >= n) {
      this.skip(n);
      return first.subarray(0, n);
    }
    const out = Buffer.allocUnsafe(n);
    let off = 0;
    while (off < n) {
      const c = this.chunks[0]!;
      const k = Math.min(c.length, n - off);
      c.copy(out, off, 0, k);
      off += k;
      if (k === c.length) this.chunks.shift();
      else this.chunks[0] = c.subarray(k);
    }
    this.buffered -= n;
    return out;
  }
}
