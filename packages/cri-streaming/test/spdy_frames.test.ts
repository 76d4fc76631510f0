import { createHash } from 'node:crypto';
import {
  createDeflate,
  createInflate,
  type Deflate,
  type Inflate,
  constants as zlibConstants,
} from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { SpdyCodec } from '../src/spdy/codec.js';
import { SPDY_DICTIONARY } from '../src/spdy/dictionary.js';
import {
  FrameParser,
  parseHeaderBlock,
  type RawFrame,
  RstStatus,
  type SpdyFrame,
  SpdyProtocolError,
  serializeHeaderBlock,
} from '../src/spdy/frames.js';

/** Encodes with one codec (the sender) and decodes with another (the receiver), like a connection. */
async function roundTrip(
  frames: SpdyFrame[],
  chunkSize?: number,
): Promise<{ out: SpdyFrame[]; wire: Buffer[] }> {
  const sender = new SpdyCodec();
  const receiver = new SpdyCodec();
  const wire: Buffer[] = [];
  for (const f of frames) wire.push(await sender.encode(f));
  const parser = new FrameParser();
  const all = Buffer.concat(wire);
  const step = chunkSize ?? all.length;
  const out: SpdyFrame[] = [];
  for (let off = 0; off < all.length; off += step) {
    parser.push(all.subarray(off, off + step));
    for (let raw = parser.next(); raw; raw = parser.next()) {
      const f = await receiver.decode(raw);
      if (f) out.push(f);
    }
  }
  expect(parser.pending).toBe(0);
  sender.close();
  receiver.close();
  return { out, wire };
}

/** Runs one block through a zlib stream (either direction) and returns its sync-flushed output. */
function flushThrough(z: Deflate | Inflate, block: Buffer): Promise<Buffer> {
  const out: Buffer[] = [];
  const take = (c: Buffer) => out.push(c);
  z.on('data', take);
  z.write(block);
  return new Promise((resolve) =>
    z.flush(zlibConstants.Z_SYNC_FLUSH, () => {
      z.off('data', take);
      resolve(Buffer.concat(out));
    }),
  );
}

const headers = { streamtype: ['stdout'], port: ['8080'], multi: ['a', 'b'] };

const everyFrame: SpdyFrame[] = [
  {
    type: 'SYN_STREAM',
    streamId: 1,
    associatedStreamId: 0,
    priority: 3,
    slot: 0,
    fin: false,
    unidirectional: true,
    headers,
  },
  { type: 'SYN_REPLY', streamId: 1, fin: true, headers: {} },
  { type: 'HEADERS', streamId: 1, fin: false, headers: { 'x-extra': ['1'] } },
  { type: 'DATA', streamId: 1, fin: false, data: Buffer.from('hello') },
  { type: 'DATA', streamId: 1, fin: true, data: Buffer.alloc(0) },
  { type: 'RST_STREAM', streamId: 3, status: RstStatus.CANCEL },
  { type: 'SETTINGS', clear: true, entries: [{ id: 7, flags: 1, value: 65536 }] },
  { type: 'PING', id: 7 },
  { type: 'GOAWAY', lastGoodStreamId: 5, status: 0 },
  { type: 'WINDOW_UPDATE', streamId: 1, delta: 32768 },
];

describe('SPDY/3 dictionary', () => {
  it('is the 1423 bytes every SPDY/3 implementation uses', () => {
    expect(SPDY_DICTIONARY.length).toBe(1423);
    // SHA-256 of moby/spdystream's headerDictionary (the Go clients' copy).
    expect(createHash('sha256').update(SPDY_DICTIONARY).digest('hex')).toBe(
      '51d27341373f923f3cd88e1eb7162aeaa3723d7585ff2399201dc06498407f02',
    );
  });
});

describe('SPDY framer', () => {
  it('round-trips every frame type', async () => {
    const { out } = await roundTrip(everyFrame);
    expect(out).toEqual(everyFrame);
  });

  it('parses frames split across chunks of any size, down to single bytes', async () => {
    for (const size of [1, 3, 7, 13]) {
      const { out } = await roundTrip(everyFrame, size);
      expect(out).toEqual(everyFrame);
    }
  });

  it('writes control frames with the SPDY/3 layout', async () => {
    const codec = new SpdyCodec();
    const ping = await codec.encode({ type: 'PING', id: 0x01020304 });
    expect(ping.toString('hex')).toBe('8003000600000004' + '01020304');
    const rst = await codec.encode({ type: 'RST_STREAM', streamId: 5, status: RstStatus.REFUSED_STREAM });
    expect(rst.toString('hex')).toBe('80030003000000080000000500000003');
    const data = await codec.encode({ type: 'DATA', streamId: 9, fin: true, data: Buffer.from('ab') });
    expect(data.toString('hex')).toBe('00000009010000026162');
    codec.close();
  });

  it('sends its header blocks as one zlib stream with the dictionary, readable by any zlib reader', async () => {
    const sent = { streamtype: ['error'], port: ['12345'], requestid: ['0'] };
    const syn = (streamId: number): SpdyFrame => ({
      type: 'SYN_STREAM',
      streamId,
      associatedStreamId: 0,
      priority: 0,
      slot: 0,
      fin: false,
      unidirectional: false,
      headers: sent,
    });
    const codec = new SpdyCodec();
    const wire = [1, 3, 5].map((id) => codec.encode(syn(id)));
    codec.close();
    // What Go's spdystream does: one zlib reader with the dictionary over all blocks in order.
    const reader = createInflate({ dictionary: SPDY_DICTIONARY });
    const parser = new FrameParser();
    for (const [i, frame] of wire.entries()) {
      parser.push(frame);
      const block = parser.next()!.payload.subarray(10);
      const plain = await flushThrough(reader, block);
      expect(parseHeaderBlock(plain, 1 + 2 * i)).toEqual(sent);
    }
    reader.close();
  });

  it('splits a header block larger than a stored block (64 KiB) into several', async () => {
    const big: SpdyFrame = {
      type: 'HEADERS',
      streamId: 1,
      fin: false,
      headers: { big: ['x'.repeat(150_000)] },
    };
    const { out } = await roundTrip([big, { ...big, streamId: 3 }]);
    expect(out).toEqual([big, { ...big, streamId: 3 }]);
  });

  it('keeps one inflate context for what it receives: later blocks need the earlier frames', async () => {
    // A peer that compresses, as Go does: one deflate stream, sync-flushed after each block.
    const deflate = createDeflate({ dictionary: SPDY_DICTIONARY });
    const block = serializeHeaderBlock({ streamtype: ['error'], port: ['12345'] });
    const reply = async (streamId: number) => {
      const head = Buffer.alloc(4);
      head.writeUInt32BE(streamId);
      const payload = Buffer.concat([head, await flushThrough(deflate, block)]);
      return { control: true, version: 3, type: 2, flags: 0, payload } satisfies RawFrame;
    };
    const first = await reply(1);
    const second = await reply(3);
    deflate.close();
    // The second block refers back to the first, so it is smaller ...
    expect(second.payload.length).toBeLessThan(first.payload.length);
    const receiver = new SpdyCodec();
    expect(await receiver.decode(first)).toMatchObject({ type: 'SYN_REPLY', streamId: 1 });
    expect(await receiver.decode(second)).toMatchObject({ type: 'SYN_REPLY', streamId: 3 });
    receiver.close();
    // ... and a receiver that missed the first frame cannot read it.
    const fresh = new SpdyCodec();
    await expect(fresh.decode(second)).rejects.toBeInstanceOf(SpdyProtocolError);
    fresh.close();
  });

  it('decodes header blocks that Go writes (names lower case, values joined by NUL)', () => {
    const block = serializeHeaderBlock({ streamtype: ['data'], multi: ['x', 'y'] });
    expect(parseHeaderBlock(block, 1)).toEqual({ streamtype: ['data'], multi: ['x', 'y'] });
  });

  describe('refuses malformed input with a SpdyProtocolError', () => {
    const control = (type: number, payload: Buffer, version = 3): RawFrame => ({
      control: true,
      version,
      type,
      flags: 0,
      payload,
    });

    it('a control frame of another SPDY version', async () => {
      const codec = new SpdyCodec();
      await expect(codec.decode(control(6, Buffer.alloc(4, 1), 2))).rejects.toThrow(
        /unsupported SPDY version 2/,
      );
      codec.close();
    });

    it('control frames shorter than their fixed fields', async () => {
      const codec = new SpdyCodec();
      await expect(codec.decode(control(3, Buffer.alloc(4)))).rejects.toThrow(/RST_STREAM|needs 8/);
      await expect(codec.decode(control(6, Buffer.alloc(8)))).rejects.toThrow(/PING is 8 bytes/);
      await expect(codec.decode(control(4, Buffer.from('0000000500000000', 'hex')))).rejects.toThrow(
        /SETTINGS claims 5/,
      );
      codec.close();
    });

    it('a DATA frame on stream 0', async () => {
      const codec = new SpdyCodec();
      await expect(
        codec.decode({ control: false, streamId: 0, flags: 0, payload: Buffer.alloc(1) }),
      ).rejects.toThrow(/stream 0/);
      codec.close();
    });

    it('a header block that is not zlib data', async () => {
      const codec = new SpdyCodec();
      const payload = Buffer.concat([Buffer.from('00000001', 'hex'), Buffer.from('not zlib at all')]);
      await expect(codec.decode(control(2, payload))).rejects.toThrow(/header decompression/);
      codec.close();
    });

    it('header blocks that lie about their contents, naming the stream', () => {
      const count = Buffer.from('7fffffff', 'hex');
      expect(() => parseHeaderBlock(count, 3)).toThrow(/stream 3: bad header block: claims/);
      const upper = serializeHeaderBlock({ StreamType: ['x'] });
      upper.write('S', 8); // serializeHeaderBlock lower-cases; put an upper-case letter back
      expect(() => parseHeaderBlock(upper, 3)).toThrow(/not lower case/);
      const dup = Buffer.concat([
        Buffer.from('00000002', 'hex'),
        serializeHeaderBlock({ a: ['1'] }).subarray(4),
        serializeHeaderBlock({ a: ['2'] }).subarray(4),
      ]);
      expect(() => parseHeaderBlock(dup, 3)).toThrow(/duplicate header "a"/);
      const truncated = serializeHeaderBlock({ a: ['1'] }).subarray(0, 13);
      expect(() => parseHeaderBlock(truncated, 3)).toThrow(/truncated/);
      try {
        parseHeaderBlock(truncated, 3);
      } catch (err) {
        expect((err as SpdyProtocolError).streamId).toBe(3);
      }
    });

    it('a frame longer than the parser allows', () => {
      const parser = new FrameParser(1024);
      parser.push(Buffer.from('0000000100100000', 'hex')); // DATA of 1 MiB
      expect(() => parser.next()).toThrow(/exceeds the limit/);
    });
  });

  it('ignores control frame types SPDY/3.1 does not define', async () => {
    const codec = new SpdyCodec();
    expect(
      await codec.decode({ control: true, version: 3, type: 0x55, flags: 0, payload: Buffer.alloc(3) }),
    ).toBe(undefined);
    codec.close();
  });
});
