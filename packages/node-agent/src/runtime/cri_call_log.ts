// Harness extension, not a kubelet feature: a record of every CRI call the agent makes, one JSON
// line per call, so the test harness can show the agent's own runtime traffic (RunPodSandbox,
// CreateContainer, the PLEG's List calls...) in its report. The agent may make hundreds of calls a
// second, so lines are buffered and written in batches without fsync (a crash loses at most one
// flush interval), and the file is rotated to `<path>.1` so it never grows without bound.
import { closeSync, fstatSync, mkdirSync, openSync, renameSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import type { CriCallEvent } from '@kh/cri-api';

/** One line of the file. `time` is when the call started; `code` is the gRPC status code name. */
export interface CriCallRecord {
  time: string;
  method: string;
  durationMs: number;
  code: string;
  error?: string;
}

export interface CriCallLogOptions {
  /** Rotate to `<path>.1` (replacing it) before the file would grow past this. Default 32 MiB. */
  maxBytes?: number;
  /** Buffered lines are written at least this often. Default 250 ms. */
  flushIntervalMs?: number;
  /** ...and as soon as this many bytes are buffered. Default 64 KiB. */
  maxBufferBytes?: number;
  /** Epoch milliseconds; injected by tests. */
  now?: () => number;
  /** Told once when a write fails; lines are dropped while writes fail, the agent goes on. */
  onError?: (err: Error) => void;
}

export const DEFAULT_CRI_CALL_LOG_MAX_BYTES = 32 * 1024 * 1024;

export class CriCallLog {
  private fd: number;
  private size: number;
  private buffer: string[] = [];
  private bufferedBytes = 0;
  private timer: NodeJS.Timeout | undefined;
  private failed = false;
  private closed = false;
  private readonly maxBytes: number;
  private readonly flushIntervalMs: number;
  private readonly maxBufferBytes: number;
  private readonly now: () => number;
  private readonly onExit = () => this.close();

  private constructor(
    readonly path: string,
    private readonly options: CriCallLogOptions,
  ) {
    this.maxBytes = options.maxBytes ?? DEFAULT_CRI_CALL_LOG_MAX_BYTES;
    this.flushIntervalMs = options.flushIntervalMs ?? 250;
    this.maxBufferBytes = options.maxBufferBytes ?? 64 * 1024;
    this.now = options.now ?? Date.now;
    this.fd = openSync(path, 'a', 0o640);
    this.size = fstatSync(this.fd).size;
    // The agent ends with process.exit after SIGTERM: write what is buffered on the way out.
    process.once('exit', this.onExit);
  }

  /** Opens (appending to) the file, creating its directory. Throws with the path when it cannot. */
  static open(path: string, options: CriCallLogOptions = {}): CriCallLog {
    try {
      mkdirSync(dirname(path), { recursive: true });
      return new CriCallLog(path, options);
    } catch (err) {
      throw new Error(`--cri-call-log ${path}: ${(err as Error).message}`);
    }
  }

  record(e: CriCallEvent): void {
    if (this.closed) return;
    const rec: CriCallRecord = {
      time: new Date(this.now() - e.durationMs).toISOString(),
      method: e.method,
      durationMs: Math.round(e.durationMs * 1000) / 1000,
      code: e.error ? e.error.codeName : 'OK',
    };
    if (e.error) rec.error = e.error.details;
    // ASCII only (JSON \u escapes): one byte per character, so a reader can count offsets in
    // characters and a line cut between two reads never splits a character.
    const line = `${JSON.stringify(rec).replace(NON_ASCII, escapeChar)}\n`;
    this.buffer.push(line);
    this.bufferedBytes += line.length;
    if (this.bufferedBytes >= this.maxBufferBytes) this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), this.flushIntervalMs);
      this.timer.unref();
    }
  }

  /** Writes the buffered lines now. */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.buffer.length === 0) return;
    const chunk = Buffer.from(this.buffer.join(''));
    this.buffer = [];
    this.bufferedBytes = 0;
    try {
      if (this.size > 0 && this.size + chunk.length > this.maxBytes) this.rotate();
      let written = 0;
      while (written < chunk.length) written += writeSync(this.fd, chunk, written);
      this.size += chunk.length;
    } catch (err) {
      if (!this.failed) (this.options.onError ?? warn)(err as Error);
      this.failed = true;
    }
  }

  close(): void {
    if (this.closed) return;
    this.flush();
    this.closed = true;
    process.removeListener('exit', this.onExit);
    closeSync(this.fd);
  }

  private rotate(): void {
    closeSync(this.fd);
    renameSync(this.path, `${this.path}.1`);
    this.fd = openSync(this.path, 'a', 0o640);
    this.size = 0;
  }
}

const NON_ASCII = /[^\x20-\x7e]/g;
const escapeChar = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

function warn(err: Error): void {
  process.stderr.write(`W cri call log: ${err.message}; calls are dropped while writes fail\n`);
}

/**
 * The CRI client's onCall observer: the kubelet's metrics, plus the call log when a path is given
 * (`--cri-call-log`).
 */
export function criCallObserver(
  metrics: { recordCriCall(e: CriCallEvent): void },
  logPath?: string,
  options?: CriCallLogOptions,
): (e: CriCallEvent) => void {
  if (!logPath) return (e) => metrics.recordCriCall(e);
  const log = CriCallLog.open(logPath, options);
  return (e) => {
    metrics.recordCriCall(e);
    log.record(e);
  };
}
