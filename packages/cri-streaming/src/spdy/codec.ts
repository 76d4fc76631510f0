// Header compression for one SPDY connection. SPDY/3 compresses every header block of a direction
// with one zlib stream that starts from the SPDY dictionary and is sync-flushed after each block,
// so a block can refer back to earlier ones: the contexts live as long as the connection, and
// blocks must be compressed and decompressed in wire order (callers serialize).
import zlib from 'node:zlib';
import { SPDY_DICTIONARY } from './dictionary.js';
import {
  decodeControl,
  encodeFrame,
  HEADER_BLOCK_OFFSET,
  parseHeaderBlock,
  type RawFrame,
  SPDY_VERSION,
  type SpdyFrame,
  SpdyProtocolError,
  serializeHeaderBlock,
} from './frames.js';

/** Decompressed header blocks larger than this are refused (a zlib bomb guard). */
export const MAX_HEADER_BLOCK = 1 << 20;

/** One zlib stream that turns each input block into its sync-flushed output. */
class ZlibContext {
  private out: Buffer[] = [];
  private outBytes = 0;
  private failure: Error | undefined;
  /** Rejects the block in progress: a failing zlib stream errors instead of calling back. */
  private rejectPending: ((err: Error) => void) | undefined;

  constructor(
    private readonly z: zlib.Deflate | zlib.Inflate,
    private readonly what: string,
    private readonly maxOutput: number,
  ) {
    z.on('data', (chunk: Buffer) => {
      this.outBytes += chunk.length;
      if (this.outBytes <= this.maxOutput) this.out.push(chunk);
    });
    z.on('error', (err) => {
      this.failure ??= err;
      this.rejectPending?.(this.error(err));
    });
  }

  process(block: Buffer): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      if (this.failure) return reject(this.error(this.failure));
      this.rejectPending = reject;
      this.z.write(block);
      this.z.flush(zlib.constants.Z_SYNC_FLUSH, () => {
        this.rejectPending = undefined;
        const out = Buffer.concat(this.out);
        const total = this.outBytes;
        this.out = [];
        this.outBytes = 0;
        if (this.failure) return reject(this.error(this.failure));
        if (total > this.maxOutput) {
          // The context is now out of step with the peer's; nothing after this can be trusted.
          this.failure = new Error(`header block of more than ${this.maxOutput} bytes`);
          return reject(this.error(this.failure));
        }
        resolve(out);
      });
    });
  }

  close(): void {
    this.z.close();
  }

  private error(err: Error): SpdyProtocolError {
    return new SpdyProtocolError(`${this.what}: ${err.message}`);
  }
}

/**
 * Encodes and decodes the frames of one connection: a deflate context for what this side sends
 * and an inflate context for what it receives. Calls of each direction must not overlap.
 */
export class SpdyCodec {
  private readonly deflate = new ZlibContext(
    zlib.createDeflate({ dictionary: SPDY_DICTIONARY }),
    'header compression',
    Number.POSITIVE_INFINITY,
  );
  private readonly inflate = new ZlibContext(
    zlib.createInflate({ dictionary: SPDY_DICTIONARY }),
    'header decompression',
    MAX_HEADER_BLOCK,
  );

  async encode(frame: SpdyFrame): Promise<Buffer> {
    if (frame.type === 'SYN_STREAM' || frame.type === 'SYN_REPLY' || frame.type === 'HEADERS') {
      return encodeFrame(frame, await this.deflate.process(serializeHeaderBlock(frame.headers)));
    }
    return encodeFrame(frame);
  }

  /**
   * Decodes a raw frame. Returns undefined for frames to ignore (unknown control types).
   * Throws SpdyProtocolError for malformed ones.
   */
  async decode(raw: RawFrame): Promise<SpdyFrame | undefined> {
    if (!raw.control) {
      if (raw.streamId === 0) throw new SpdyProtocolError('DATA frame on stream 0');
      return { type: 'DATA', streamId: raw.streamId, fin: (raw.flags & 0x01) !== 0, data: raw.payload };
    }
    if (raw.version !== SPDY_VERSION) {
      throw new SpdyProtocolError(`unsupported SPDY version ${raw.version} (only ${SPDY_VERSION})`);
    }
    const offset = HEADER_BLOCK_OFFSET[raw.type];
    if (offset === undefined || raw.payload.length < offset) return decodeControl(raw);
    // Decompress before anything can fail, so the inflate context stays in step with the peer's
    // deflate context even when this frame is then refused.
    const block = await this.inflate.process(raw.payload.subarray(offset));
    const streamId = raw.payload.readUInt32BE(0) & 0x7fffffff;
    return decodeControl(raw, parseHeaderBlock(block, streamId));
  }

  close(): void {
    this.deflate.close();
    this.inflate.close();
  }
}
