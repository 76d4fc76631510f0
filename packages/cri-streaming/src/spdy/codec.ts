// Header compression for one SPDY connection. SPDY/3 carries every header block of a direction in
// one zlib stream that starts from the SPDY dictionary and is flushed after each block, so a block
// can refer back to earlier ones. Receiving: one inflate context for the life of the connection,
// fed in wire order (callers serialize). Sending: this side writes that zlib stream itself as
// stored (uncompressed) deflate blocks, which any zlib reader, Go's included, takes like compressed
// ones. Header blocks here are a few dozen bytes, so compressing saves little; what it cost was a
// trip through libuv's thread pool per block (Node's zlib streams have no synchronous flush), and
// on a busy machine each such trip waits for a thread to be scheduled, on the critical path of
// every stream a session opens.
import zlib from 'node:zlib';
import { SPDY_DICTIONARY } from './dictionary.js';
import {
  decodeControl,
  encodeDataHead,
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

/** Largest stored deflate block (its length field is 16 bits). */
const MAX_STORED_BLOCK = 0xffff;

/**
 * The start of this side's zlib stream: CMF 0x78 (deflate, 32 KiB window), FLG 0x20 (a preset
 * dictionary follows; 0x7820 is a multiple of 31 as the check requires), then the dictionary's
 * Adler-32, taken from what zlib itself writes for it.
 */
const ZLIB_HEADER = Buffer.concat([
  Buffer.from([0x78, 0x20]),
  zlib.deflateSync(Buffer.alloc(0), { dictionary: SPDY_DICTIONARY }).subarray(2, 6),
]);

/**
 * The empty stored block zlib's Z_SYNC_FLUSH ends with. Readers hand out what they have decoded
 * when they reach it; Go's flate reader otherwise holds a stored block's bytes back until it has
 * read the next block's header, which is in a later frame, and fails on the frame's end.
 */
const SYNC_FLUSH_MARKER = Buffer.from([0x00, 0x00, 0x00, 0xff, 0xff]);

/** A header block as non-final stored deflate blocks, then the flush marker. */
function storedBlocks(block: Buffer): Buffer {
  const parts: Buffer[] = [];
  for (let off = 0; off < block.length; off += MAX_STORED_BLOCK) {
    const data = block.subarray(off, off + MAX_STORED_BLOCK);
    const head = Buffer.alloc(5); // BFINAL 0, BTYPE 00 (stored), padding to the byte; LEN; NLEN
    head.writeUInt16LE(data.length, 1);
    head.writeUInt16LE(~data.length & 0xffff, 3);
    parts.push(head, data);
  }
  parts.push(SYNC_FLUSH_MARKER);
  return Buffer.concat(parts);
}

/**
 * Encodes and decodes the frames of one connection: this side's zlib stream of header blocks
 * (see the file comment) and an inflate context for what it receives. Decode calls must not
 * overlap.
 */
export class SpdyCodec {
  private headerSent = false;
  private readonly inflate = new ZlibContext(
    zlib.createInflate({ dictionary: SPDY_DICTIONARY }),
    'header decompression',
    MAX_HEADER_BLOCK,
  );

  /** The frame as buffers to write in order: a DATA frame's payload is passed on uncopied. */
  encodeParts(frame: SpdyFrame): Buffer[] {
    if (frame.type === 'DATA') {
      const head = encodeDataHead(frame.streamId, frame.data.length, frame.fin);
      return frame.data.length > 0 ? [head, frame.data] : [head];
    }
    return [this.encode(frame)];
  }

  encode(frame: SpdyFrame): Buffer {
    if (frame.type === 'SYN_STREAM' || frame.type === 'SYN_REPLY' || frame.type === 'HEADERS') {
      const blocks = storedBlocks(serializeHeaderBlock(frame.headers));
      const compressed = this.headerSent ? blocks : Buffer.concat([ZLIB_HEADER, blocks]);
      this.headerSent = true;
      return encodeFrame(frame, compressed);
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
    this.inflate.close();
  }
}
