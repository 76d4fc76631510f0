import http2 from 'node:http2';
import net from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ClientHeaderRewriter,
  H2_COMPRESSION_ERROR,
  H2_FRAME_SIZE_ERROR,
  H2_PROTOCOL_ERROR,
  Http2ConnectionError,
  MAX_HEADER_BLOCK_BYTES,
} from '../src/server/h2_rewriter.js';
import {
  type HeaderField,
  HpackDecoder,
  HpackError,
  huffmanCode,
  huffmanDecode,
} from '../src/server/hpack.js';
import {
  CONTINUATION,
  F,
  type Frame,
  frame,
  GET,
  hex,
  hp,
  int,
  type Judge,
  PREFACE,
  parseFrames,
  RawClient,
  request,
  startJudge,
  T,
} from './h2_helpers.js';
import { tempDir } from './helpers.js';

const SOCKET_PATH = '/run/kubelet-harness/fake-cri.sock';
const text = (fields: HeaderField[]): [string, string][] =>
  fields.map((f) => [f.name.toString('latin1'), f.value.toString('latin1')]);

// ---- reading what the rewriter sends on -----------------------------------------------------------

/** Feeds a whole client byte stream through a rewriter; returns the frames after the preface. */
function rewriteAll(input: Buffer, rw = new ClientHeaderRewriter()): Frame[] {
  const out = Buffer.concat(rw.fromClient(input));
  expect(out.subarray(0, PREFACE.length)).toEqual(PREFACE);
  const { frames, rest } = parseFrames(out.subarray(PREFACE.length));
  expect(rest.length).toBe(0);
  return frames;
}

/** Decodes the (literal-only) header blocks the rewriter produced, per stream. */
function headerBlocks(frames: Frame[]): Map<number, [string, string][]> {
  const blocks = new Map<number, [string, string][]>();
  let open: { streamId: number; parts: Buffer[] } | undefined;
  for (const f of frames) {
    if (f.type === T.HEADERS) {
      const start = f.flags & F.PRIORITY ? 5 : 0;
      expect(f.flags & F.PADDED).toBe(0);
      open = { streamId: f.streamId, parts: [f.payload.subarray(start)] };
    } else if (f.type === CONTINUATION) {
      open!.parts.push(f.payload);
    } else {
      continue;
    }
    if (f.flags & F.END_HEADERS) {
      // A fresh decoder with a zero-size table: the rewriter must never rely on the server's.
      blocks.set(open!.streamId, text(new HpackDecoder(0).decode(Buffer.concat(open!.parts))));
      open = undefined;
    }
  }
  return blocks;
}

// ---- HPACK ---------------------------------------------------------------------------------------

describe('HPACK decoding', () => {
  it('has a complete Huffman code that decodes the RFC 7541 examples', () => {
    let kraft = 0;
    for (let sym = 0; sym <= 256; sym++) kraft += 2 ** (30 - huffmanCode(sym).bits);
    expect(kraft).toBe(2 ** 30);
    expect(huffmanCode('0'.charCodeAt(0))).toEqual({ code: 0b00000, bits: 5 });
    expect(huffmanCode('a'.charCodeAt(0))).toEqual({ code: 0b00011, bits: 5 });
    expect(huffmanCode(256)).toEqual({ code: 0x3fffffff, bits: 30 });
    expect(huffmanDecode(hex('f1e3 c2e5 f23a 6ba0 ab90 f4ff')).toString()).toBe('www.example.com');
    expect(huffmanDecode(hex('a8eb 1064 9cbf')).toString()).toBe('no-cache');
  });

  it("keeps the client's dynamic table across the requests of a connection (RFC 7541 C.4)", () => {
    const d = new HpackDecoder();
    expect(text(d.decode(hex('8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff')))).toEqual([
      [':method', 'GET'],
      [':scheme', 'http'],
      [':path', '/'],
      [':authority', 'www.example.com'],
    ]);
    expect(d.tableEntries).toBe(1);
    expect(text(d.decode(hex('8286 84be 5886 a8eb 1064 9cbf')))).toEqual([
      [':method', 'GET'],
      [':scheme', 'http'],
      [':path', '/'],
      [':authority', 'www.example.com'],
      ['cache-control', 'no-cache'],
    ]);
    expect(text(d.decode(hex('8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf')))).toEqual([
      [':method', 'GET'],
      [':scheme', 'https'],
      [':path', '/index.html'],
      [':authority', 'www.example.com'],
      ['custom-key', 'custom-value'],
    ]);
    expect(d.tableEntries).toBe(3);
  });

  it('evicts on size updates and keeps never-indexed fields marked', () => {
    const d = new HpackDecoder();
    d.decode(Buffer.concat([hp.incremental('x-a', 'one'), hp.incremental('x-b', 'two')]));
    expect(d.tableEntries).toBe(2);
    // 72 bytes hold one entry (3 + 3 + 32 = 38) but not two.
    const fields = d.decode(
      Buffer.concat([hp.sizeUpdate(72), hp.indexed(62), hp.neverIndexed(23, 'secret')]),
    );
    expect(text(fields)).toEqual([
      ['x-b', 'two'],
      ['authorization', 'secret'],
    ]);
    expect(fields.map((f) => f.neverIndex)).toEqual([false, true]);
    expect(d.tableEntries).toBe(1);
  });

  it.each([
    ['index 0', hp.indexed(0), /index 0/],
    ['an index past both tables', hp.indexed(70), /index 70 is outside the tables \(61 static \+ 0 dynamic/],
    ['a truncated string', Buffer.concat([int(0, 4, 0), int(0, 7, 10), Buffer.from('abc')]), /overruns/],
    ['a truncated integer', Buffer.from([0xff, 0x80]), /truncated integer/],
    ['an integer too large', Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]), /too large/],
    [
      'Huffman padding of zeros',
      Buffer.concat([int(0, 4, 1), int(0x80, 7, 1), Buffer.from([0x00])]),
      /padding/,
    ],
    [
      'a Huffman EOS',
      Buffer.concat([int(0, 4, 1), int(0x80, 7, 4), Buffer.from([0xff, 0xff, 0xff, 0xff])]),
      /EOS/,
    ],
    ['a table size above the limit', hp.sizeUpdate(8192), /exceeds the limit 4096/],
    [
      'a table size update after a field',
      Buffer.concat([hp.indexed(2), hp.sizeUpdate(0)]),
      /after a header field/,
    ],
  ])('rejects %s', (_what, block, message) => {
    expect(() => new HpackDecoder().decode(block)).toThrow(HpackError);
    expect(() => new HpackDecoder().decode(block)).toThrow(message);
  });

  it('refuses a small block that expands to a huge header list', () => {
    const d = new HpackDecoder(4096, 64 * 1024);
    d.decode(hp.incremental('x-big', 'v'.repeat(3000)));
    // 30 one-byte references to a 3 KB entry: 90 KB decoded from 30 bytes.
    expect(() => d.decode(Buffer.concat(Array.from({ length: 30 }, () => hp.indexed(62))))).toThrow(
      /header list larger than 65536 bytes/,
    );
  });
});

// ---- the frame rewriter on its own ---------------------------------------------------------------

const SETTINGS_EMPTY = frame(T.SETTINGS, 0, 0);

describe('ClientHeaderRewriter', () => {
  it('replaces an :authority (or host) nghttp2 refuses with localhost and keeps valid ones', () => {
    const frames = rewriteAll(
      Buffer.concat([
        PREFACE,
        SETTINGS_EMPTY,
        request(
          1,
          hp.incremental(1, SOCKET_PATH, true),
          hp.incremental('user-agent', 'grpc-go/1.49.0', true),
        ),
        request(3, hp.indexed(63), hp.withoutIndexing(38, 'a b')),
        request(5, hp.withoutIndexing(1, '127.0.0.1:40123'), hp.withoutIndexing(1, '[::1]:80')),
      ]),
    );
    expect(frames[0]).toMatchObject({ type: T.SETTINGS, payload: Buffer.alloc(0) });
    const blocks = headerBlocks(frames);
    const authority = (s: number) => blocks.get(s)!.filter(([n]) => n === ':authority' || n === 'host');
    expect(authority(1)).toEqual([[':authority', 'localhost']]);
    expect(blocks.get(1)).toContainEqual(['user-agent', 'grpc-go/1.49.0']);
    // Stream 3 refers to the dynamic table entry stream 1 inserted.
    expect(authority(3)).toEqual([
      [':authority', 'localhost'],
      ['host', 'localhost'],
    ]);
    expect(authority(5)).toEqual([
      [':authority', '127.0.0.1:40123'],
      [':authority', '[::1]:80'],
    ]);
  });

  it('keeps the priority of a padded + priority HEADERS frame and drops the padding', () => {
    const priority = hex('80000003 f0'); // exclusive, depends on stream 3, weight 241
    const frames = rewriteAll(
      Buffer.concat([
        PREFACE,
        frame(
          T.HEADERS,
          F.PADDED | F.PRIORITY | F.END_HEADERS | F.END_STREAM,
          5,
          Buffer.from([7]),
          priority,
          GET,
          hp.withoutIndexing(1, SOCKET_PATH),
          Buffer.alloc(7),
        ),
      ]),
    );
    expect(frames).toHaveLength(1);
    expect(frames[0]!.flags).toBe(F.PRIORITY | F.END_HEADERS | F.END_STREAM);
    expect(frames[0]!.payload.subarray(0, 5)).toEqual(priority);
    expect(headerBlocks(frames).get(5)).toContainEqual([':authority', 'localhost']);
  });

  it("joins CONTINUATION frames and splits blocks larger than the server's frame size", () => {
    const big = 'x'.repeat(40_000);
    const block = Buffer.concat([
      GET,
      hp.incremental(1, SOCKET_PATH, true),
      hp.withoutIndexing('x-big', big),
    ]);
    // The client splits mid-string; three frames of one block.
    const input = Buffer.concat([
      PREFACE,
      frame(T.HEADERS, F.END_STREAM, 1, block.subarray(0, 10)),
      frame(CONTINUATION, 0, 1, block.subarray(10, 16_000)),
      frame(CONTINUATION, 0, 1, block.subarray(16_000, 30_000)),
      frame(CONTINUATION, F.END_HEADERS, 1, block.subarray(30_000)),
    ]);
    const frames = rewriteAll(input);
    expect(frames.map((f) => [f.type, f.flags, f.payload.length <= 16_384])).toEqual([
      [T.HEADERS, F.END_STREAM, true],
      [CONTINUATION, 0, true],
      [CONTINUATION, F.END_HEADERS, true],
    ]);
    expect(headerBlocks(frames).get(1)).toContainEqual(['x-big', big]);

    // The server allows bigger frames: one frame is enough.
    const rw = new ClientHeaderRewriter();
    const maxFrame = Buffer.from([0, 5, 0, 1, 0, 0]); // SETTINGS_MAX_FRAME_SIZE = 65536
    rw.fromServer(frame(T.SETTINGS, 0, 0, maxFrame));
    const single = rewriteAll(input, rw);
    expect(single.map((f) => [f.type, f.flags])).toEqual([[T.HEADERS, F.END_STREAM | F.END_HEADERS]]);
  });

  it('takes out only as many well-formed ACKs of SETTINGS as it was told, and passes malformed ones on', () => {
    const ack = frame(T.SETTINGS, F.ACK, 0);
    const withPayload = frame(T.SETTINGS, F.ACK, 0, Buffer.alloc(6));
    const onStream = frame(T.SETTINGS, F.ACK, 1);
    const input = Buffer.concat([PREFACE, withPayload, onStream, ack, ack]);
    const kept = (rw: ClientHeaderRewriter) =>
      rewriteAll(input, rw).map((f) => [f.payload.length, f.streamId]);
    expect(kept(new ClientHeaderRewriter({ settingsAcksToDrop: 1 }))).toEqual([
      [6, 0],
      [0, 1],
      [0, 0],
    ]);
    expect(kept(new ClientHeaderRewriter())).toHaveLength(4);
  });

  it('gives the same bytes whatever the chunk boundaries', () => {
    const block = Buffer.concat([
      GET,
      hp.incremental(1, SOCKET_PATH, true),
      hp.incremental('x-id', 'first', true),
    ]);
    const input = Buffer.concat([
      PREFACE,
      SETTINGS_EMPTY,
      frame(8, 0, 0, hex('0000ffff')), // WINDOW_UPDATE
      frame(T.HEADERS, F.PRIORITY, 1, hex('00000000 0f'), block.subarray(0, 7)),
      frame(CONTINUATION, F.END_HEADERS, 1, block.subarray(7)),
      frame(T.DATA, F.END_STREAM, 1, Buffer.from('payload')),
      request(3, hp.indexed(63), hp.indexed(62)),
      frame(T.PING, 0, 0, Buffer.from('8 bytes!')),
    ]);
    const whole = Buffer.concat(new ClientHeaderRewriter().fromClient(input));
    const blocks = headerBlocks(parseFrames(whole.subarray(PREFACE.length)).frames);
    expect(blocks.get(3)).toEqual([
      ...blocks.get(1)!.slice(0, 3),
      [':authority', 'localhost'],
      ['x-id', 'first'],
    ]);
    // Frames other than header blocks pass byte for byte.
    expect(whole.includes(frame(T.DATA, F.END_STREAM, 1, Buffer.from('payload')))).toBe(true);
    expect(whole.subarray(-17)).toEqual(frame(T.PING, 0, 0, Buffer.from('8 bytes!')));

    const feed = (sizes: (i: number) => number) => {
      const rw = new ClientHeaderRewriter();
      const out: Buffer[] = [];
      for (let pos = 0, i = 0; pos < input.length; i++) {
        const n = sizes(i);
        out.push(...rw.fromClient(input.subarray(pos, pos + n)));
        pos += n;
      }
      return Buffer.concat(out);
    };
    expect(feed(() => 1)).toEqual(whole);
    for (let split = 1; split < input.length; split++) {
      expect(feed((i) => (i === 0 ? split : input.length))).toEqual(whole);
    }
    // Irregular chunk sizes, repeatably.
    expect(feed((i) => 1 + ((i * 7919) % 23))).toEqual(whole);
  });

  it.each([
    [
      'CONTINUATION without HEADERS',
      frame(CONTINUATION, F.END_HEADERS, 1, GET),
      H2_PROTOCOL_ERROR,
      /without HEADERS/,
    ],
    [
      'another frame inside a header block',
      Buffer.concat([frame(T.HEADERS, 0, 1, GET), frame(T.PING, 0, 0, Buffer.alloc(8))]),
      H2_PROTOCOL_ERROR,
      /expected CONTINUATION of stream 1, got frame type 6/,
    ],
    [
      'CONTINUATION of another stream',
      Buffer.concat([frame(T.HEADERS, 0, 1, GET), frame(CONTINUATION, F.END_HEADERS, 3, GET)]),
      H2_PROTOCOL_ERROR,
      /expected CONTINUATION of stream 1/,
    ],
    [
      'PUSH_PROMISE from a client',
      frame(T.PUSH_PROMISE, F.END_HEADERS, 1, hex('00000002'), GET),
      H2_PROTOCOL_ERROR,
      /PUSH_PROMISE/,
    ],
    ['HEADERS on stream 0', request(0), H2_PROTOCOL_ERROR, /stream 0/],
    [
      'padding longer than the payload',
      frame(T.HEADERS, F.PADDED | F.END_HEADERS, 1, Buffer.from([200]), GET),
      H2_PROTOCOL_ERROR,
      /padding of 200 bytes/,
    ],
    [
      'a HEADERS frame over the frame size',
      frame(T.HEADERS, F.END_HEADERS, 1, Buffer.alloc(16_385)),
      H2_FRAME_SIZE_ERROR,
      /16385 bytes exceeds/,
    ],
    [
      'a malformed header block',
      request(1, hp.indexed(99)),
      H2_COMPRESSION_ERROR,
      /stream 1: HPACK: index 99/,
    ],
  ])('ends the connection on %s', (_what, frames, code, message) => {
    const rw = new ClientHeaderRewriter();
    const err = (() => {
      try {
        rw.fromClient(Buffer.concat([PREFACE, frames]));
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(Http2ConnectionError);
    expect((err as Http2ConnectionError).code).toBe(code);
    expect((err as Error).message).toMatch(message);
  });

  it('names in lastStreamId only streams whose headers went on to the server', () => {
    const rw = new ClientHeaderRewriter();
    rw.fromClient(Buffer.concat([PREFACE, request(1, hp.withoutIndexing(1, 'localhost'))]));
    expect(rw.lastStreamId).toBe(1);
    // Stream 3 is fine but shares a read with a bad block: none of that read is sent on.
    expect(() => rw.fromClient(Buffer.concat([request(3), request(5, hp.indexed(99))]))).toThrow(/index 99/);
    expect(rw.lastStreamId).toBe(1);
  });

  it('refuses a CONTINUATION flood before it takes much memory', () => {
    const rw = new ClientHeaderRewriter();
    rw.fromClient(Buffer.concat([PREFACE, frame(T.HEADERS, 0, 1, GET)]));
    const cont = frame(CONTINUATION, 0, 1, Buffer.alloc(16_384, 0x82));
    expect(() => {
      for (let i = 0; i * 16_384 <= MAX_HEADER_BLOCK_BYTES; i++) rw.fromClient(cont);
    }).toThrow(/exceeds 1048576 bytes/);
  });

  it('passes a client that is not HTTP/2 through for the server to refuse', () => {
    const rw = new ClientHeaderRewriter();
    const get = Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(Buffer.concat([...rw.fromClient(get.subarray(0, 3)), ...rw.fromClient(get.subarray(3))])).toEqual(
      get,
    );
  });
});

// ---- against nghttp2 (Node's HTTP/2 server) -------------------------------------------------------

describe('the rewriter in front of nghttp2', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  const judges: Judge[] = [];
  const clients: RawClient[] = [];
  beforeEach(async () => {
    tmp = await tempDir();
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) c.socket.destroy();
    for (const j of judges.splice(0)) await j.close();
    await tmp.remove();
  });
  const judge = async (rewrite: boolean) => {
    const j = await startJudge(
      tmp.sock(rewrite ? 'rewrite.sock' : 'plain.sock'),
      rewrite ? 'rewrite' : 'plain',
    );
    judges.push(j);
    return j;
  };
  const raw = (j: Judge, ...bytes: Buffer[]) => {
    const c = new RawClient(j.path);
    clients.push(c);
    c.socket.write(Buffer.concat([PREFACE, SETTINGS_EMPTY, ...bytes]));
    return c;
  };
  const authorityOf = (headers: [string, Buffer][]) =>
    headers.filter(([n]) => n === ':authority').map(([, v]) => v.toString());

  it('turns the stream reset nghttp2 gives a socket path :authority into an answer', async () => {
    const req = request(1, hp.incremental(1, SOCKET_PATH, true));
    const plain = raw(await judge(false), req);
    const rst = await plain.next((f) => f.type === T.RST_STREAM);
    expect(rst.payload.readUInt32BE(0)).toBe(H2_PROTOCOL_ERROR);

    const fixed = raw(await judge(true), req);
    expect(authorityOf(await fixed.headersOf(1))).toEqual(['localhost']);
  });

  it("reads a real client's Huffman strings and dynamic table over many requests", async () => {
    const j = await judge(true);
    const session = http2.connect('http://localhost', { createConnection: () => net.connect(j.path) });
    try {
      for (let i = 0; i < 20; i++) {
        const headers = await new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
          const req = session.request({
            ':path': '/runtime.v1.RuntimeService/Version',
            ':authority': SOCKET_PATH,
            'user-agent': 'grpc-go/1.49.0',
            'x-request': `n${i}`,
            'x-latin1': 'café ÿ',
          });
          req.end();
          let body = '';
          req.on('data', (d) => {
            body += d;
          });
          req.on('end', () =>
            resolve(
              Object.fromEntries(
                (JSON.parse(body) as [string, string][]).map(([n, v]) => [
                  n,
                  Buffer.from(v, 'hex').toString('latin1'),
                ]),
              ),
            ),
          );
          req.on('error', reject);
        });
        expect(headers).toMatchObject({
          ':authority': 'localhost',
          ':path': '/runtime.v1.RuntimeService/Version',
          'user-agent': 'grpc-go/1.49.0',
          'x-request': `n${i}`,
          'x-latin1': 'café ÿ',
        });
      }
    } finally {
      session.destroy();
    }
  });

  it('agrees with nghttp2 on the Huffman code of every byte allowed in a value', async () => {
    // Every byte nghttp2 accepts in a value: HTAB, SP, VCHAR, obs-text (no whitespace at the ends).
    const bytes = [0x21, 0x09];
    for (let b = 0x20; b <= 0xff; b++) if (b !== 0x7f && b !== 0x21) bytes.push(b);
    const value = Buffer.from(bytes);
    const req = request(1, hp.withoutIndexing(1, 'localhost'), hp.withoutIndexing('x-all', value, true));
    // Straight to nghttp2: its decoder reads our encoding of all these bytes correctly...
    const plain = raw(await judge(false), req);
    expect((await plain.headersOf(1)).find(([n]) => n === 'x-all')?.[1]).toEqual(value);
    // ...and so does ours on the way through.
    const fixed = raw(await judge(true), req);
    expect((await fixed.headersOf(1)).find(([n]) => n === 'x-all')?.[1]).toEqual(value);
  });

  it('serves padded + priority HEADERS, CONTINUATION frames and big blocks split for the server', async () => {
    const big = 'v'.repeat(20_000);
    const block = Buffer.concat([
      GET,
      hp.incremental(1, SOCKET_PATH, true),
      hp.withoutIndexing('x-big', big),
    ]);
    const c = raw(
      await judge(true),
      frame(
        T.HEADERS,
        F.PADDED | F.PRIORITY | F.END_STREAM,
        1,
        Buffer.from([3]),
        hex('00000000 10'),
        block.subarray(0, 20),
        Buffer.alloc(3),
      ),
      frame(CONTINUATION, 0, 1, block.subarray(20, 12_000)),
      frame(CONTINUATION, F.END_HEADERS, 1, block.subarray(12_000)),
      request(3, hp.indexed(62)),
    );
    const first = await c.headersOf(1);
    expect(authorityOf(first)).toEqual(['localhost']);
    expect(first.find(([n]) => n === 'x-big')?.[1].toString()).toBe(big);
    expect(authorityOf(await c.headersOf(3))).toEqual(['localhost']);
  });

  it('copes with a header block split across arbitrary chunk boundaries', async () => {
    const c = new RawClient((await judge(true)).path, false);
    clients.push(c);
    const block = Buffer.concat([
      GET,
      hp.incremental(1, SOCKET_PATH, true),
      hp.incremental('x-id', 'chunked', true),
    ]);
    const bytes = Buffer.concat([
      PREFACE,
      SETTINGS_EMPTY,
      frame(T.HEADERS, F.END_STREAM, 1, block.subarray(0, 5)),
      frame(CONTINUATION, F.END_HEADERS, 1, block.subarray(5)),
      request(3, hp.indexed(63), hp.indexed(62)),
    ]);
    // Separate writes, each on its own turn of the event loop, so they arrive as separate reads.
    for (let pos = 0, i = 0; pos < bytes.length; i++) {
      const n = 1 + (i % 5);
      c.socket.write(bytes.subarray(pos, pos + n));
      pos += n;
      await new Promise((resolve) => setImmediate(resolve));
    }
    const second = await c.headersOf(3);
    expect(authorityOf(second)).toEqual(['localhost']);
    expect(second.find(([n]) => n === 'x-id')?.[1].toString()).toBe('chunked');
  });

  it('ends a connection with a malformed header block with GOAWAY COMPRESSION_ERROR and serves the next', async () => {
    const j = await judge(true);
    const bad = raw(j, request(1, hp.incremental(1, SOCKET_PATH)));
    expect(authorityOf(await bad.headersOf(1))).toEqual(['localhost']);
    bad.socket.write(request(3, hp.indexed(70)));
    const goaway = await bad.next((f) => f.type === T.GOAWAY);
    expect(goaway.payload.readUInt32BE(0)).toBe(1); // last stream id
    expect(goaway.payload.readUInt32BE(4)).toBe(H2_COMPRESSION_ERROR);
    expect(goaway.payload.subarray(8).toString()).toMatch(/stream 3: HPACK: index 70 is outside the tables/);
    await bad.closed;
    expect(j.errors.map((e) => e.message)).toEqual([expect.stringMatching(/index 70/)]);

    const good = raw(j, request(1, hp.incremental(1, SOCKET_PATH)));
    expect(authorityOf(await good.headersOf(1))).toEqual(['localhost']);
  });
});
