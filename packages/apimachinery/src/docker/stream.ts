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

/** A piece of one frame's payload; `end` on the frame's last piece. */
export interface FramePiece extends Frame {
  end: boolean;
}

/**
 * Incremental demultiplexer for relays (exec and attach output): push raw chunks, get back each
 * frame's payload as it arrives, in pieces that are views of the chunks they came in, never
 * copies. A frame straddling chunks comes out as several pieces; only a header split across
 * chunks is held, in an 8-byte buffer of its own. An empty frame is one empty piece.
 */
export class FrameSplitter {
  private readonly header = Buffer.alloc(HEADER);
  private headerBytes = 0;
  private stream = StreamType.Stdout;
  /** Payload bytes of the current frame still to come. */
  private remaining = 0;

  /** Throws on a header whose stream type is not 0, 1 or 2 (the stream is not multiplexed). */
  push(chunk: Buffer): FramePiece[] {
    const pieces: FramePiece[] = [];
    let at = 0;
    while (at < chunk.length) {
      if (this.remaining > 0) {
        const n = Math.min(this.remaining, chunk.length - at);
        this.remaining -= n;
        pieces.push({ stream: this.stream, payload: chunk.subarray(at, at + n), end: this.remaining === 0 });
        at += n;
        continue;
      }
      let header: Buffer;
      if (this.headerBytes === 0 && chunk.length - at >= HEADER) {
        header = chunk.subarray(at, at + HEADER);
        at += HEADER;
      } else {
        const n = chunk.copy(this.header, this.headerBytes, at, at + HEADER - this.headerBytes);
        this.headerBytes += n;
        at += n;
        if (this.headerBytes < HEADER) break;
        header = this.header;
        this.headerBytes = 0;
      }
      const type = header.readUInt8(0);
      if (type > StreamType.Stderr) throw new Error(`bad docker stream header (type ${type})`);
      this.stream = type as StreamType;
      this.remaining = header.readUInt32BE(4);
      if (this.remaining === 0) pieces.push({ stream: this.stream, payload: EMPTY, end: true });
    }
    return pieces;
  }

  /** Bytes of an incomplete frame seen so far: a partial header, or a header whose payload is due. */
  get pending(): number {
    return this.remaining > 0 ? HEADER : this.headerBytes;
  }
}

const EMPTY = Buffer.alloc(0);

/**
 * Incremental frame decoder for whole frames (a log entry is one): push raw chunks, get back the
 * complete frames seen so far. A frame within one chunk is a view of it; one straddling chunks is
 * copied once, when its last piece arrives.
 */
export class FrameDecoder {
  private readonly splitter = new FrameSplitter();
  private pieces: Buffer[] = [];
  private held = 0;

  /** Throws on a header whose stream type is not 0, 1 or 2 (the stream is not multiplexed). */
  push(chunk: Buffer): Frame[] {
    const frames: Frame[] = [];
    for (const { stream, payload, end } of this.splitter.push(chunk)) {
      if (!end) {
        this.pieces.push(payload);
        this.held += payload.length;
        continue;
      }
      const whole = this.pieces.length === 0 ? payload : Buffer.concat([...this.pieces, payload]);
      this.pieces = [];
      this.held = 0;
      frames.push({ stream, payload: whole });
    }
    return frames;
  }

  /** Bytes of an incomplete frame still waiting for more input. */
  get pending(): number {
    return this.splitter.pending + this.held;
  }
}

/** The frames of a complete multiplexed buffer, e.g. a non-following `docker logs` answer. */
export function demuxBuffer(buf: Buffer): Frame[] {
  return new FrameDecoder().push(buf);
}
