import { describe, expect, it } from 'vitest';
import { demuxBuffer, FrameDecoder, FrameSplitter, StreamType } from '../src/index.js';

function frame(stream: StreamType, text: string): Buffer {
  const payload = Buffer.from(text);
  const header = Buffer.alloc(8);
  header.writeUInt8(stream, 0);
  header.writeUInt32BE(payload.length, 4);
  return Buffer.concat([header, payload]);
}

const decoded = (fs: { stream: StreamType; payload: Buffer }[]) =>
  fs.map((f) => [f.stream, f.payload.toString()]);

describe('FrameDecoder', () => {
  it('decodes frames split anywhere across chunks, headers included', () => {
    const wire = Buffer.concat([
      frame(StreamType.Stdout, 'out'),
      frame(StreamType.Stderr, 'err'),
      frame(StreamType.Stdout, ''),
    ]);
    for (let cut = 0; cut <= wire.length; cut++) {
      const d = new FrameDecoder();
      const frames = [...d.push(wire.subarray(0, cut)), ...d.push(wire.subarray(cut))];
      expect(decoded(frames)).toEqual([
        [StreamType.Stdout, 'out'],
        [StreamType.Stderr, 'err'],
        [StreamType.Stdout, ''],
      ]);
      expect(d.pending).toBe(0);
    }
  });

  it('byte by byte, holding an incomplete frame as pending', () => {
    const d = new FrameDecoder();
    const wire = frame(StreamType.Stderr, 'hello');
    const got = [];
    for (let i = 0; i < wire.length - 1; i++) got.push(...d.push(wire.subarray(i, i + 1)));
    expect(got).toEqual([]);
    expect(d.pending).toBe(wire.length - 1);
    expect(decoded(d.push(wire.subarray(wire.length - 1)))).toEqual([[StreamType.Stderr, 'hello']]);
  });

  it('rejects a stream that is not multiplexed', () => {
    expect(() => new FrameDecoder().push(Buffer.from('hello world!'))).toThrow(
      /bad docker stream header \(type 104\)/,
    );
  });
});

describe('FrameSplitter', () => {
  const wire = Buffer.concat([
    frame(StreamType.Stdout, 'hello out'),
    frame(StreamType.Stderr, 'err'),
    frame(StreamType.Stdout, ''),
    frame(StreamType.Stdout, 'bye'),
  ]);
  /** Each stream's bytes joined, and the frames' ends seen. */
  const joined = (pieces: { stream: StreamType; payload: Buffer; end: boolean }[]) => ({
    out: Buffer.concat(pieces.filter((p) => p.stream === StreamType.Stdout).map((p) => p.payload)).toString(),
    err: Buffer.concat(pieces.filter((p) => p.stream === StreamType.Stderr).map((p) => p.payload)).toString(),
    ends: pieces.filter((p) => p.end).length,
  });

  it('passes payloads on as views of the chunks they arrive in, at any two cuts', () => {
    for (let a = 0; a <= wire.length; a++) {
      for (let b = a; b <= wire.length; b++) {
        // Each chunk in a buffer of its own, as sockets deliver them.
        const chunks = [wire.subarray(0, a), wire.subarray(a, b), wire.subarray(b)].map((c) =>
          Buffer.from(c),
        );
        const s = new FrameSplitter();
        const pieces = chunks.flatMap((c) => {
          const got = s.push(c);
          for (const p of got) if (p.payload.length > 0) expect(p.payload.buffer).toBe(c.buffer);
          return got;
        });
        expect(joined(pieces)).toEqual({ out: 'hello outbye', err: 'err', ends: 4 });
        expect(s.pending).toBe(0);
      }
    }
  });

  it('hands out a frame larger than its chunks piece by piece, before the frame is complete', () => {
    const s = new FrameSplitter();
    const big = frame(StreamType.Stderr, 'x'.repeat(100));
    expect(s.push(Buffer.from(big.subarray(0, 3)))).toEqual([]);
    expect(s.pending).toBe(3);
    const first = s.push(Buffer.from(big.subarray(3, 50)));
    expect(first.map((p) => [p.stream, p.payload.length, p.end])).toEqual([[StreamType.Stderr, 42, false]]);
    expect(s.pending).toBe(8);
    const rest = s.push(Buffer.from(big.subarray(50)));
    expect(rest.map((p) => [p.stream, p.payload.length, p.end])).toEqual([[StreamType.Stderr, 58, true]]);
    expect(s.pending).toBe(0);
  });

  it('rejects a stream that is not multiplexed, even with its header cut', () => {
    const s = new FrameSplitter();
    expect(s.push(Buffer.from('hel'))).toEqual([]);
    expect(() => s.push(Buffer.from('lo world!'))).toThrow(/bad docker stream header \(type 104\)/);
  });
});

describe('FrameDecoder, whole frames', () => {
  it('returns a frame within one chunk as a view of it, and joins one that straddles chunks', () => {
    const wire = Buffer.concat([frame(StreamType.Stdout, 'inside'), frame(StreamType.Stderr, 'across')]);
    const d = new FrameDecoder();
    const cut = wire.length - 3;
    const first = Buffer.from(wire.subarray(0, cut));
    const [inside] = d.push(first);
    expect(inside!.payload.buffer).toBe(first.buffer);
    expect(d.pending).toBe(8 + 3);
    expect(decoded(d.push(Buffer.from(wire.subarray(cut))))).toEqual([[StreamType.Stderr, 'across']]);
  });
});

describe('demuxBuffer', () => {
  it('decodes a whole buffer and drops a truncated tail', () => {
    const wire = Buffer.concat([
      frame(StreamType.Stdout, 'a\n'),
      frame(StreamType.Stderr, 'b\n'),
      frame(StreamType.Stdout, 'cut').subarray(0, 9),
    ]);
    expect(decoded(demuxBuffer(wire))).toEqual([
      [StreamType.Stdout, 'a\n'],
      [StreamType.Stderr, 'b\n'],
    ]);
  });
});
