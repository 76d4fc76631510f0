import { describe, expect, it } from 'vitest';
import { demuxBuffer, FrameDecoder, StreamType } from '../src/index.js';

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
