import { type FileHandle, mkdir, open, readdir } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { FailedPreconditionError } from '@kh/cri-api';
import type { DockerClient } from '../docker/client.js';
import { dockerStatusCode } from '../docker/errors.js';
import { FrameDecoder, LineDecoder, StreamType } from '../docker/stream.js';

// Docker keeps container output in its own log driver; kubelet reads the CRI log file at log_path.
// The shim bridges the two: for every started container it follows `docker logs` (with Docker's
// timestamps) and appends each entry to the CRI file in the CRI format:
//   <RFC3339Nano timestamp> <stdout|stderr> <P|F> <message>\n
// P marks a partial line (Docker splits long lines and we keep that split), F a full one.

export type LogStream = 'stdout' | 'stderr';

/** One Docker log entry as `docker logs --timestamps` sends it: "<timestamp> <message>". */
export function splitTimestamp(entry: Buffer): { timestamp: string; message: Buffer } {
  const space = entry.indexOf(0x20);
  if (space <= 0) throw new Error('docker log entry without timestamp');
  return { timestamp: entry.subarray(0, space).toString('latin1'), message: entry.subarray(space + 1) };
}

/** Formats one Docker log entry as one CRI log line. A message without trailing newline is partial. */
export function formatCriLogLine(timestamp: string, stream: LogStream, message: Buffer): Buffer {
  let body = message;
  let tag = 'P';
  if (body.length > 0 && body[body.length - 1] === 0x0a) {
    tag = 'F';
    body = body.subarray(0, body.length - 1);
    if (body.length > 0 && body[body.length - 1] === 0x0d) body = body.subarray(0, body.length - 1);
  }
  return Buffer.concat([Buffer.from(`${timestamp} ${stream} ${tag} `), body, Buffer.from('\n')]);
}

export interface CriLogEntry {
  timestamp: string;
  stream: LogStream;
  tag: 'P' | 'F';
  message: string;
}

/** Parses one CRI log line (used by tests and to resume after a restart). */
export function parseCriLogLine(line: string): CriLogEntry | undefined {
  const m = /^(\S+) (stdout|stderr) ([PF]) (.*)$/s.exec(line);
  if (!m) return undefined;
  return { timestamp: m[1] ?? '', stream: m[2] as LogStream, tag: m[3] as 'P' | 'F', message: m[4] ?? '' };
}

/** Docker's fixed-width UTC timestamps sort as strings; this turns one into the `since` query value. */
export function timestampToSince(timestamp: string): string {
  const m = /^(.*?)(?:\.(\d{1,9}))?Z$/.exec(timestamp);
  if (!m) return '0';
  const seconds = Math.floor(Date.parse(`${m[1]}Z`) / 1000);
  return `${seconds}.${(m[2] ?? '').padEnd(9, '0')}`;
}

const TAIL_BYTES = 64 * 1024;

/**
 * Where one stream's copy stands: its last entry's timestamp, and how many entries with that
 * timestamp were written. Docker stamps each stream's output in its own goroutine, so a stream's
 * entries come in timestamp order (the parts of a line it split share one timestamp), but stdout
 * and stderr may interleave out of order in its log: "after the last entry written" is only
 * well defined per stream.
 */
interface StreamMark {
  timestamp: string;
  count: number;
}

type LogMarks = Partial<Record<LogStream, StreamMark>>;

/** The marks after writing an entry of `stream` stamped `timestamp`. */
function advance(marks: LogMarks, stream: LogStream, timestamp: string): void {
  const mark = marks[stream];
  marks[stream] =
    mark?.timestamp === timestamp ? { timestamp, count: mark.count + 1 } : { timestamp, count: 1 };
}

/** Each stream's mark after the entries of a CRI log file's tail (after a shim restart). */
async function marksIn(path: string): Promise<LogMarks | undefined> {
  let lines: string[];
  try {
    const fh = await open(path, 'r');
    try {
      const { size } = await fh.stat();
      const start = Math.max(0, size - TAIL_BYTES);
      const buf = Buffer.alloc(size - start);
      await fh.read(buf, 0, buf.length, start);
      lines = buf.toString('utf8').split('\n');
      // A tail that starts inside the file starts inside a line.
      if (start > 0) lines.shift();
    } finally {
      await fh.close();
    }
  } catch {
    return undefined;
  }
  const marks: LogMarks = {};
  for (const line of lines) {
    const entry = parseCriLogLine(line);
    if (entry) advance(marks, entry.stream, entry.timestamp);
  }
  return marks;
}

/**
 * Where copying resumes after a shim restart: after each stream's last entries in the CRI file,
 * or in the newest rotated one (kubelet renames the file to `<file>.<timestamp>` to rotate it,
 * the newest left uncompressed) for a stream the current file has nothing of yet, so no line is
 * copied a second time.
 */
async function resumePoint(path: string): Promise<LogMarks> {
  const prefix = `${basename(path)}.`;
  const rotated = (await readdir(dirname(path)).catch(() => []))
    .filter((name) => name.startsWith(prefix) && !name.endsWith('.gz') && !name.endsWith('.tmp'))
    .sort();
  const newest = rotated[rotated.length - 1];
  return {
    ...(newest ? await marksIn(join(dirname(path), newest)) : {}),
    ...(await marksIn(path)),
  };
}

/**
 * How far before the oldest stream's mark a read starts: an entry of a stream with nothing
 * written yet may be stamped before another stream's entries that Docker logged ahead of it.
 */
const REREAD_SECONDS = 2;

/** Docker's `since` for a read after `marks`, or undefined to read from the start. */
function sinceFor(marks: LogMarks): string | undefined {
  const oldest = Object.values(marks)
    .flatMap((m) => (m ? [m.timestamp] : []))
    .sort()[0];
  if (oldest === undefined) return undefined;
  const [seconds = '0', nanos = ''] = timestampToSince(oldest).split('.');
  return `${Math.max(0, Number(seconds) - REREAD_SECONDS)}.${nanos}`;
}

/** Opens the CRI log file for appending, creating it and its directory when missing. */
async function openLogFile(path: string): Promise<FileHandle> {
  await mkdir(dirname(path), { recursive: true });
  return open(path, 'a', 0o640);
}

/** Creates the (empty) CRI log file, so it exists as soon as its container starts, however briefly it runs. */
export async function createLogFile(path: string): Promise<void> {
  await (await openLogFile(path)).close();
}

/** Splits a raw `docker logs` byte stream into entries: frames, or lines for a TTY container. */
async function* dockerLogEntries(
  chunks: AsyncIterable<Buffer> | Iterable<Buffer>,
  tty: boolean,
): AsyncGenerator<{ stream: LogStream; entry: Buffer }> {
  const frames = new FrameDecoder();
  const lines = new LineDecoder();
  for await (const chunk of chunks) {
    if (tty) {
      for (const entry of lines.push(chunk)) yield { stream: 'stdout', entry };
    } else {
      for (const f of frames.push(chunk)) {
        yield { stream: f.stream === StreamType.Stderr ? 'stderr' : 'stdout', entry: f.payload };
      }
    }
  }
  const rest = lines.flush();
  if (rest) yield { stream: 'stdout', entry: rest };
}

/** Reads of one kind (follow, catch-up) a copier makes before a failure on the way ends its copy. */
const READ_ATTEMPTS = 5;
/** The pause before the n-th attempt is n times this: a busy dockerd gets time to recover. */
const RETRY_DELAY_MS = 200;

/**
 * Whether a failed `docker logs` read may succeed if made again: the connection dropped or the
 * stream was cut (a Node error code), or dockerd failed (5xx). A 404 or 409 will not change.
 */
function retriable(err: unknown): boolean {
  const status = dockerStatusCode(err);
  if (status !== undefined) return status >= 500;
  return typeof (err as { code?: unknown } | undefined)?.code === 'string';
}

/** Follows one container's Docker log stream into its CRI log file until the container stops. */
export class ContainerLogCopier {
  private file: FileHandle | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private stream: Readable | undefined;
  private stopped = false;
  /** Whether the copy has ended, copied or failed. */
  finished = false;
  /** When drained() stops waiting (set by its first call, on the monotonic clock). */
  private drainDeadline: number | undefined;
  /** A drained() wait ran out: later calls return at once, and the shortfall was reported. */
  private drainTimedOut = false;
  /** Where each stream's copy stands: a later read resumes after it. */
  private marks: LogMarks = {};
  readonly done: Promise<void>;

  constructor(
    private readonly docker: DockerClient,
    private readonly id: string,
    readonly path: string,
    private readonly tty: boolean,
    private readonly onError: (err: unknown) => void,
    after?: Promise<unknown>,
  ) {
    this.done = this.run(after)
      .catch((err: unknown) => {
        if (!this.stopped) this.onError(err);
      })
      .finally(() => {
        this.finished = true;
      });
  }

  /** Serialises file operations so a reopen never interleaves with a write. */
  private locked<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async run(after: Promise<unknown> | undefined): Promise<void> {
    await after?.catch(() => undefined);
    if (this.stopped) return;
    // After a shim restart the file may already hold entries: resume after them.
    this.marks = await resumePoint(this.path);
    this.file = await openLogFile(this.path);
    try {
      // A follow cut on the way is made again from the last entry written: Docker's follow of a
      // container that has stopped meanwhile returns what is left and ends.
      await this.retrying('follow', () => this.copy(true));
      // Docker's follow mode sometimes ends before it delivers the last entries of a container that
      // just exited (measured: a final partial line, 3 times in 20). One plain read catches up.
      if (!this.stopped) await this.retrying('catch-up read', () => this.copy(false));
    } finally {
      await this.locked(async () => {
        await this.file?.close();
        this.file = undefined;
      });
    }
  }

  /**
   * Makes a read again, from the last entry written, when it fails in a way a retry may cure: a
   * lost read would leave the CRI file short for good, and the kubelet reads it once the container
   * has exited. Each failure is reported; the last one ends the copy.
   */
  private async retrying(what: string, read: () => Promise<void>): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await read();
        return;
      } catch (err) {
        if (this.stopped || attempt >= READ_ATTEMPTS || !retriable(err)) throw err;
        this.onError(
          new Error(
            `docker logs ${what} failed (attempt ${attempt} of ${READ_ATTEMPTS}), reading again: ${String(err)}`,
          ),
        );
        await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS * attempt));
      }
    }
  }

  /**
   * One `docker logs` read from where the copy stands. Docker's `since` is inclusive and starts a
   * little earlier (sinceFor): an entry at or before its stream's mark was written already.
   */
  private async copy(follow: boolean): Promise<void> {
    const marks = { ...this.marks };
    const since = sinceFor(marks);
    const result = await this.docker.containerLogs(this.id, { follow, ...(since ? { since } : {}) });
    this.stream = result;
    // stop() may have run while the logs request was in flight.
    if (this.stopped) result.destroy();
    const chunks = result as AsyncIterable<Buffer>;
    const atMark: Partial<Record<LogStream, number>> = {};
    for await (const { stream, entry } of dockerLogEntries(chunks, this.tty)) {
      const { timestamp, message } = splitTimestamp(entry);
      const mark = marks[stream];
      if (mark && timestamp < mark.timestamp) continue;
      if (mark?.timestamp === timestamp) {
        const seen = (atMark[stream] ?? 0) + 1;
        atMark[stream] = seen;
        if (seen <= mark.count) continue;
      }
      // A stopped copier never writes, even if its stream outlives stop(): after a shim restart
      // the new shim's copier owns the file, and two writers would duplicate every line.
      if (this.stopped) return;
      advance(this.marks, stream, timestamp);
      await this.locked(async () => {
        await this.file?.write(formatCriLogLine(timestamp, stream, message));
      });
    }
  }

  /** Closes and reopens the file at the same path: kubelet renamed it away to rotate it. */
  reopen(): Promise<void> {
    return this.locked(async () => {
      if (!this.file)
        throw new FailedPreconditionError(`log of container is not being written (container not running)`);
      await this.file.close();
      this.file = await openLogFile(this.path);
    });
  }

  get active(): boolean {
    return this.file !== undefined;
  }

  /**
   * Waits until the copy is done, for at most `timeoutMs` in all: the bound starts at the first
   * call, so a copier whose Docker stream hangs delays one ContainerStatus, not every one after it.
   */
  async drained(timeoutMs: number): Promise<void> {
    if (this.drainTimedOut) return;
    this.drainDeadline ??= performance.now() + timeoutMs;
    const left = this.drainDeadline - performance.now();
    if (left <= 0) return;
    let timer: NodeJS.Timeout | undefined;
    const copied = await Promise.race([
      this.done.then(() => true),
      new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), left);
      }),
    ]);
    clearTimeout(timer);
    // Said once, when the bound runs out: a client may now read a log that is still short. A flag,
    // not the clock: a timer may fire a millisecond before the deadline by another clock, and
    // two statuses may wait at once.
    if (!copied && !this.drainTimedOut) {
      this.drainTimedOut = true;
      this.onError(
        new Error(`the log is not complete ${timeoutMs} ms after a status first found the container stopped`),
      );
    }
  }

  /** Stops following (the container is being removed). */
  stop(): void {
    this.stopped = true;
    this.stream?.destroy();
  }
}

/** The set of log copiers, keyed by container id. */
export class LogManager {
  private readonly copiers = new Map<string, ContainerLogCopier>();

  constructor(
    private readonly docker: DockerClient,
    private readonly onError: (id: string, err: unknown) => void = () => undefined,
  ) {}

  /**
   * Starts copying a container's output, unless a copier for it is already live; given `after`,
   * the copier is there at once (drained() waits on it) but reads only once `after` settles.
   */
  follow(id: string, path: string, tty: boolean, after?: Promise<unknown>): ContainerLogCopier {
    const existing = this.copiers.get(id);
    if (existing && !existing.finished) return existing;
    const copier = new ContainerLogCopier(this.docker, id, path, tty, (err) => this.onError(id, err), after);
    // A finished copier stays in the map until the container is removed: drained() waits on it.
    this.copiers.set(id, copier);
    return copier;
  }

  async reopen(id: string): Promise<void> {
    const copier = this.copiers.get(id);
    if (!copier?.active) {
      throw new FailedPreconditionError(
        `container ${JSON.stringify(id)} is not running: its log cannot be reopened`,
      );
    }
    await copier.reopen();
  }

  /** Waits until everything Docker logged for an exited container is in the CRI file (see ContainerLogCopier.drained). */
  async drained(id: string, timeoutMs: number): Promise<void> {
    await this.copiers.get(id)?.drained(timeoutMs);
  }

  forget(id: string): void {
    this.copiers.get(id)?.stop();
    this.copiers.delete(id);
  }

  /** Stops every copier; waits for them at most `timeoutMs` so a shutdown never hangs. */
  async close(timeoutMs = 5_000): Promise<void> {
    const all = [...this.copiers.values()];
    for (const c of all) c.stop();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled(all.map((c) => c.done)),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
      }),
    ]);
    clearTimeout(timer);
    this.copiers.clear();
  }
}
