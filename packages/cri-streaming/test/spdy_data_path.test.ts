// The bulk data path of a SPDY session (port-forward, exec output): what each DATA frame costs in
// frames, copies and syscalls. Issue 15's port-forward benchmark goes through this code on Docker.
import { Duplex } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { SpdyCodec } from '../src/spdy/codec.js';
import { FrameParser, type RawFrame } from '../src/spdy/frames.js';
import { MAX_DATA_PAYLOAD, SpdySession, type SpdyStream } from '../src/spdy/session.js';

const frame = (streamId: number, payload: Buffer): Buffer => {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(streamId, 0);
  head.writeUInt32BE(payload.length, 4);
  return Buffer.concat([head, payload]);
};

describe('FrameParser', () => {
  it('hands out frames lying within one chunk as views of it, even after a frame that straddled chunks', () => {
    // Unpooled buffers, so a copy can never share their memory by accident.
    const first = Buffer.alloc(20_000, 1);
    const second = Buffer.alloc(20_000, 2);
    const wire = Buffer.concat([frame(1, first), frame(1, second)]);
    const a = Buffer.alloc(4);
    wire.copy(a, 0, 0, 4);
    const b = Buffer.alloc(wire.length - 4);
    wire.copy(b, 0, 4);
    const parser = new FrameParser();
    parser.push(a); // half a frame header
    parser.push(b);
    const one = parser.next() as RawFrame & { control: false };
    const two = parser.next() as RawFrame & { control: false };
    expect(one.payload.equals(first)).toBe(true);
    expect(two.payload.equals(second)).toBe(true);
    // Joining everything buffered to read the first header would copy the second frame too.
    expect(two.payload.buffer).toBe(b.buffer);
    expect(parser.next()).toBeUndefined();
    expect(parser.pending).toBe(0);
  });

  it('copies only the bytes of a frame that spans chunks and keeps the rest as it came', () => {
    const payload = Buffer.alloc(50_000, 3);
    const wire = Buffer.concat([frame(3, payload), frame(3, Buffer.alloc(10, 4))]);
    const parser = new FrameParser();
    for (let off = 0; off < wire.length; off += 7_001) parser.push(wire.subarray(off, off + 7_001));
    const big = parser.next() as RawFrame & { control: false };
    const small = parser.next() as RawFrame & { control: false };
    expect(big.payload.equals(payload)).toBe(true);
    expect(small.payload.equals(Buffer.alloc(10, 4))).toBe(true);
    expect(parser.pending).toBe(0);
  });
});

/** A socket that records what the session writes, and one write() call per writev. */
class RecordingSocket extends Duplex {
  readonly writes: Buffer[][] = [];
  override _read(): void {}
  override _write(chunk: Buffer, _e: BufferEncoding, cb: () => void): void {
    this.writes.push([chunk]);
    cb();
  }
  override _writev(chunks: { chunk: Buffer }[], cb: () => void): void {
    this.writes.push(chunks.map((c) => c.chunk));
    cb();
  }
}

/** A server session with one stream the peer opened and this side accepted. */
async function acceptedStream(): Promise<{
  socket: RecordingSocket;
  stream: SpdyStream;
  session: SpdySession;
}> {
  const socket = new RecordingSocket();
  const peer = new SpdyCodec();
  let accepted!: (s: SpdyStream) => void;
  const got = new Promise<SpdyStream>((resolve) => {
    accepted = resolve;
  });
  const session = new SpdySession(socket, {
    role: 'server',
    onStream: (s) => {
      void s.reply();
      accepted(s);
    },
  });
  socket.push(
    peer.encode({
      type: 'SYN_STREAM',
      streamId: 1,
      associatedStreamId: 0,
      priority: 0,
      slot: 0,
      fin: false,
      unidirectional: false,
      headers: { streamtype: ['data'] },
    }),
  );
  const stream = await got;
  await stream.established;
  return { socket, stream, session };
}

function dataFrames(writes: Buffer[][]): RawFrame[] {
  const parser = new FrameParser();
  for (const w of writes) for (const c of w) parser.push(c);
  const out: RawFrame[] = [];
  for (let f = parser.next(); f; f = parser.next()) if (!f.control) out.push(f);
  return out;
}

describe('SPDY session data path', () => {
  it('sends a 64 KiB chunk (one socket read) as one DATA frame, its payload uncopied, in one writev', async () => {
    const { socket, stream, session } = await acceptedStream();
    const before = socket.writes.length;
    const chunk = Buffer.alloc(64 * 1024, 5);
    await new Promise<void>((resolve) => stream.write(chunk, () => resolve()));
    const writes = socket.writes.slice(before);
    expect(MAX_DATA_PAYLOAD).toBeGreaterThanOrEqual(64 * 1024);
    const frames = dataFrames(writes);
    expect(frames).toHaveLength(1);
    expect(frames[0]!.payload.equals(chunk)).toBe(true);
    // Header and payload reached the socket together (one writev, one syscall), the payload as
    // the caller's own memory.
    expect(writes).toHaveLength(1);
    expect(writes[0]!.some((c) => c.buffer === chunk.buffer && c.length === chunk.length)).toBe(true);
    session.destroy();
  });

  it('still splits a chunk larger than the frame limit, and ends with FIN', async () => {
    const { socket, stream, session } = await acceptedStream();
    const before = socket.writes.length;
    const chunk = Buffer.alloc(MAX_DATA_PAYLOAD * 2 + 10, 6);
    await new Promise<void>((resolve) => stream.end(chunk, () => resolve()));
    const frames = dataFrames(socket.writes.slice(before));
    expect(frames.map((f) => f.payload.length)).toEqual([MAX_DATA_PAYLOAD, MAX_DATA_PAYLOAD, 10, 0]);
    expect(frames.map((f) => f.flags & 1)).toEqual([0, 0, 0, 1]);
    session.destroy();
  });
});
