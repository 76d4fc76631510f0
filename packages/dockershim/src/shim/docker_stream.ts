// Docker multiplexes stdout and stderr of non-TTY containers into one byte stream of frames:
// an 8-byte header (stream type, 3 zero bytes, big-endian payload length) then the payload.
// Used for `docker logs` (log copier) and exec output.

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

/** For TTY containers Docker sends raw bytes; log entries are then cut at newlines. */
export class LineDecoder {
  private buffer: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): Buffer[] {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    const lines: Buffer[] = [];
    let nl = this.buffer.indexOf(0x0a);
    while (nl >= 0) {
      lines.push(this.buffer.subarray(0, nl + 1));
      this.buffer = this.buffer.subarray(nl + 1);
      nl = this.buffer.indexOf(0x0a);
    }
    return lines;
  }

  /** Whatever is left when the stream ends (a last line without newline). */
  flush(): Buffer | undefined {
    const rest = this.buffer;
    this.buffer = Buffer.alloc(0);
    return rest.length > 0 ? rest : undefined;
  }
}

/** Collects stdout/stderr under one shared byte budget, as kubelet expects of ExecSync. */
export class CappedOutput {
  readonly stdout: Buffer[] = [];
  readonly stderr: Buffer[] = [];
  private remaining: number;
  truncated = false;

  constructor(limitBytes: number) {
    this.remaining = limitBytes;
  }

  write(stream: StreamType, data: Buffer): void {
    if (this.remaining <= 0) {
      this.truncated = this.truncated || data.length > 0;
      return;
    }
    const kept = data.length > this.remaining ? data.subarray(0, this.remaining) : data;
    this.truncated = this.truncated || kept.length < data.length;
    this.remaining -= kept.length;
    (stream === StreamType.Stderr ? this.stderr : this.stdout).push(kept);
  }
}

/** Newline-delimited JSON (pull progress, the event stream), one parsed object per line. */
export async function* jsonLines<T>(
  stream: AsyncIterable<Buffer | string>,
): AsyncGenerator<{ value: T; raw: string }> {
  let buffered = '';
  for await (const chunk of stream) {
    buffered += chunk.toString();
    let nl = buffered.indexOf('\n');
    while (nl >= 0) {
      const raw = buffered.slice(0, nl).trim();
      buffered = buffered.slice(nl + 1);
      if (raw) yield { value: JSON.parse(raw) as T, raw };
      nl = buffered.indexOf('\n');
    }
  }
  const raw = buffered.trim();
  if (raw) yield { value: JSON.parse(raw) as T, raw };
}
