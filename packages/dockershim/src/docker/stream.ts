// Reading Docker's output streams: multiplexed frames (non-TTY containers: an 8-byte header
// then the payload, cut by @kh/apimachinery's FrameSplitter into uncopied pieces for relays, or
// decoded into whole frames by its FrameDecoder for log entries), raw lines (TTY containers), the
// ExecSync output budget and newline-delimited JSON. Used for `docker logs` (log copier), exec
// output, pull progress and events.

import { StreamType } from '@kh/apimachinery';

// The frame decoder is shared with the test kit; this module adds what only the shim needs.
export { type Frame, FrameDecoder, FrameSplitter, StreamType } from '@kh/apimachinery';

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

/** An event's time: timeNano exceeds 2^53, so it is read from the raw JSON text, not the parsed number. */
export function eventTimeNanos(raw: string, fallbackSeconds: number | undefined): bigint {
  const m = /"timeNano":\s*(\d+)/.exec(raw);
  if (m?.[1]) return BigInt(m[1]);
  return BigInt(Math.trunc(fallbackSeconds ?? 0)) * 1_000_000_000n;
}
