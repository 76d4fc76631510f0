// Docker multiplexes stdout and stderr of a non-TTY container into one byte stream of frames:
// an 8-byte header (stream type, 3 zero bytes, big-endian payload length) then the payload. The
// Engine API uses it for logs, attach and exec output. It lives here, next to the other wire
// formats the packages share, because the dockershim, the test kit and the harness all read it
// and none of them may depend on another for it.

export enum StreamType {
  Stdin = 0,
  Stdout = 1,
  Stderr = 2,
}

export interface Frame {
  stream: StreamType;
  payload: Buffer;
}

const HEADER = 8;

/** Incremental frame decoder: push raw chunks, get back the complete frames seen so far. */
export class FrameDecoder {
  private buffer: Buffer = Buffer.alloc(0);

  /** Throws on a header whose stream type is not 0, 1 or 2 (the stream is not multiplexed). */
  push(chunk: Buffer): Frame[] {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    const frames: Frame[] = [];
    while (this.buffer.length >= HEADER) {
      const type = this.buffer.readUInt8(0);
      if (type > StreamType.Stderr) throw new Error(`bad docker stream header (type ${type})`);
      const length = this.buffer.readUInt32BE(4);
      if (this.buffer.length < HEADER + length) break;
      frames.push({ stream: type as StreamType, payload: this.buffer.subarray(HEADER, HEADER + length) });
      this.buffer = this.buffer.subarray(HEADER + length);
    }
    return frames;
  }

  /** Bytes of an incomplete frame still waiting for more input. */
  get pending(): number {
    return this.buffer.length;
  }
}

/** The frames of a complete multiplexed buffer, e.g. a non-following `docker logs` answer. */
export function demuxBuffer(buf: Buffer): Frame[] {
  return new FrameDecoder().push(buf);
}
