/**
 * HTTP/2 frames and HPACK fields built by hand, a raw client, and nghttp2 as a judge, for tests of
 * the header rewriter and of how serveCri opens connections.
 */
import http2 from 'node:http2';
import net from 'node:net';
import { acceptConnection, type ConnectionPath } from '../src/server/h2_opening.js';
import { huffmanCode } from '../src/server/hpack.js';
import { RewritingConnection } from '../src/server/rewriting_connection.js';

export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
export const T = {
  DATA: 0,
  HEADERS: 1,
  PRIORITY: 2,
  RST_STREAM: 3,
  SETTINGS: 4,
  PUSH_PROMISE: 5,
  PING: 6,
  GOAWAY: 7,
};
export const CONTINUATION = 9;
export const F = { END_STREAM: 1, ACK: 1, END_HEADERS: 4, PADDED: 8, PRIORITY: 0x20 };

export function frame(type: number, flags: number, streamId: number, ...payload: Buffer[]): Buffer {
  const body = Buffer.concat(payload);
  const h = Buffer.alloc(9);
  h.writeUIntBE(body.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(streamId, 5);
  return Buffer.concat([h, body]);
}

export function int(prefix: number, bits: number, value: number): Buffer {
  const max = (1 << bits) - 1;
  if (value < max) return Buffer.from([prefix | value]);
  const out = [prefix | max];
  let rest = value - max;
  while (rest >= 0x80) {
    out.push((rest & 0x7f) | 0x80);
    rest >>= 7;
  }
  out.push(rest);
  return Buffer.from(out);
}

/** Huffman-codes bytes with our table (tests below check that nghttp2 reads them the same). */
export function huff(data: Buffer): Buffer {
  const out: number[] = [];
  let acc = 0n;
  let n = 0;
  for (const b of data) {
    const { code, bits } = huffmanCode(b);
    acc = (acc << BigInt(bits)) | BigInt(code);
    n += bits;
    while (n >= 8) {
      n -= 8;
      out.push(Number((acc >> BigInt(n)) & 0xffn));
    }
  }
  if (n > 0) out.push(Number(((acc << BigInt(8 - n)) | ((1n << BigInt(8 - n)) - 1n)) & 0xffn));
  return Buffer.from(out);
}

export function str(s: string | Buffer, huffman = false): Buffer {
  const raw = typeof s === 'string' ? Buffer.from(s, 'latin1') : s;
  const data = huffman ? huff(raw) : raw;
  return Buffer.concat([int(huffman ? 0x80 : 0, 7, data.length), data]);
}

/** One header field representation (RFC 7541 6). `name` is a table index or a literal name. */
export const hp = {
  indexed: (index: number) => int(0x80, 7, index),
  incremental: (name: number | string, value: string | Buffer, huffman = false) =>
    literal(0x40, 6, name, value, huffman),
  withoutIndexing: (name: number | string, value: string | Buffer, huffman = false) =>
    literal(0x00, 4, name, value, huffman),
  neverIndexed: (name: number | string, value: string | Buffer, huffman = false) =>
    literal(0x10, 4, name, value, huffman),
  sizeUpdate: (size: number) => int(0x20, 5, size),
};
function literal(
  prefix: number,
  bits: number,
  name: number | string,
  value: string | Buffer,
  huffman: boolean,
) {
  return typeof name === 'number'
    ? Buffer.concat([int(prefix, bits, name), str(value, huffman)])
    : Buffer.concat([int(prefix, bits, 0), str(name, huffman), str(value, huffman)]);
}

/** :method GET, :scheme http, :path / (static entries 2, 6, 4). */
export const GET = Buffer.concat([hp.indexed(2), hp.indexed(6), hp.indexed(4)]);

export function request(streamId: number, ...fields: Buffer[]): Buffer {
  return frame(T.HEADERS, F.END_HEADERS | F.END_STREAM, streamId, GET, ...fields);
}

/** A unary gRPC call with an empty request message, as grpc-go sends it, naming `authority`. */
export function grpcRequest(streamId: number, method: string, authority: string): Buffer {
  const headers = Buffer.concat([
    hp.indexed(3), // :method POST
    hp.indexed(6), // :scheme http
    hp.withoutIndexing(4, method),
    hp.withoutIndexing(1, authority),
    hp.withoutIndexing(31, 'application/grpc'),
    hp.withoutIndexing('te', 'trailers'),
  ]);
  return Buffer.concat([
    frame(T.HEADERS, F.END_HEADERS, streamId, headers),
    frame(T.DATA, F.END_STREAM, streamId, Buffer.alloc(5)),
  ]);
}

export const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');

export interface Frame {
  type: number;
  flags: number;
  streamId: number;
  payload: Buffer;
}

export function parseFrames(buf: Buffer): { frames: Frame[]; rest: Buffer } {
  const frames: Frame[] = [];
  let pos = 0;
  while (buf.length - pos >= 9) {
    const len = buf.readUIntBE(pos, 3);
    if (buf.length - pos < 9 + len) break;
    frames.push({
      type: buf[pos + 3]!,
      flags: buf[pos + 4]!,
      streamId: buf.readUInt32BE(pos + 5) & 0x7fffffff,
      payload: buf.subarray(pos + 9, pos + 9 + len),
    });
    pos += 9 + len;
  }
  return { frames, rest: buf.subarray(pos) };
}

/** A client that writes raw bytes and reads frames. */
export class RawClient {
  readonly socket: net.Socket;
  readonly frames: Frame[] = [];
  readonly closed: Promise<void>;
  #buf = Buffer.alloc(0);
  #waiters: (() => void)[] = [];

  /** `ackSettings: false` when the test writes a frame in pieces an ACK must not cut into. */
  constructor(path: string, ackSettings = true) {
    this.socket = net.connect(path);
    this.socket.on('error', () => {});
    this.closed = new Promise((resolve) => this.socket.on('close', () => resolve()));
    this.socket.on('data', (chunk: Buffer) => {
      const { frames, rest } = parseFrames(Buffer.concat([this.#buf, chunk]));
      this.#buf = Buffer.from(rest);
      for (const f of frames) {
        // Acknowledge the server's SETTINGS like any client.
        if (ackSettings && f.type === T.SETTINGS && !(f.flags & F.ACK))
          this.socket.write(frame(T.SETTINGS, F.ACK, 0));
        this.frames.push(f);
      }
      for (const w of this.#waiters.splice(0)) w();
    });
    this.socket.on('close', () => {
      for (const w of this.#waiters.splice(0)) w();
    });
  }

  async next(match: (f: Frame) => boolean): Promise<Frame> {
    for (;;) {
      const f = this.frames.find(match);
      if (f) return f;
      if (this.socket.destroyed) {
        const goaway = this.frames.find((x) => x.type === T.GOAWAY)?.payload;
        throw new Error(
          `connection closed (${goaway ? `GOAWAY ${goaway.readUInt32BE(4)} ${goaway.subarray(8)}` : 'no GOAWAY'})`,
        );
      }
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }

  /** The request's header list as the server decoded it. */
  async headersOf(streamId: number): Promise<[string, Buffer][]> {
    const isData = (f: Frame) => f.type === T.DATA && f.streamId === streamId;
    await this.next((f) => isData(f) && (f.flags & F.END_STREAM) !== 0);
    const body = Buffer.concat(this.frames.filter(isData).map((f) => f.payload)).toString();
    return (JSON.parse(body) as [string, string][]).map(([n, v]) => [n, Buffer.from(v, 'hex')]);
  }
}

// ---- a judge: nghttp2 (Node's HTTP/2 server) -----------------------------------------------------

export interface Judge {
  path: string;
  /** Errors the RewritingConnections reported. */
  errors: Error[];
  /** With the 'opening' front: how each connection went on, in order. */
  paths: ConnectionPath[];
  close(): Promise<void>;
}

/**
 * How the judge's connections reach nghttp2: as they are, through the rewriter, or after their
 * opening was read (acceptConnection), as serveCri does.
 */
export type JudgeFront = 'plain' | 'rewrite' | 'opening';

/**
 * A plain Node HTTP/2 server on a unix socket. Each request is answered with a DATA frame holding
 * its header list as JSON, values as hex.
 */
export async function startJudge(sock: string, front: JudgeFront, openingTimeoutMs?: number): Promise<Judge> {
  const errors: Error[] = [];
  const paths: Judge['paths'] = [];
  const h2 = http2.createServer();
  h2.on('stream', (stream, _headers, _flags, raw) => {
    const pairs: [string, string][] = [];
    for (let i = 0; i < raw.length; i += 2)
      pairs.push([raw[i]!, Buffer.from(raw[i + 1]!, 'latin1').toString('hex')]);
    stream.respond({ ':status': 200 });
    stream.end(JSON.stringify(pairs));
  });
  const sockets = new Set<net.Socket>();
  const listener = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    const onError = (e: Error) => errors.push(e);
    if (front === 'plain') h2.emit('connection', socket);
    else if (front === 'rewrite') h2.emit('connection', new RewritingConnection(socket, onError));
    else {
      acceptConnection(
        socket,
        (connection, path) => {
          paths.push(path);
          h2.emit('connection', connection);
        },
        { onError, timeoutMs: openingTimeoutMs },
      );
    }
  });
  await new Promise<void>((resolve) => listener.listen(sock, resolve));
  return {
    path: sock,
    errors,
    paths,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => listener.close(resolve));
      await new Promise((resolve) => h2.close(resolve));
    },
  };
}
