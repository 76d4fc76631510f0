import {
  chmodSync,
  closeSync,
  constants,
  existsSync,
  fchmodSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  write,
  writeSync,
} from 'node:fs';
import { open, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { KObject } from '../meta/object.js';
import { toJson } from './json.js';

const writeAsync = promisify(write);

export interface WalRecord {
  rv: number;
  op: 'put' | 'del';
  r: string;
  ns: string;
  name: string;
  o?: KObject;
}

/** A point-in-time copy: objects are immutable, so holding references is enough. */
export interface Snapshot {
  rv: number;
  objects: { resource: string; obj: KObject }[];
}

const WAL = 'wal.jsonl';
/** The log segment being folded into a snapshot. */
const WAL_PREV = 'wal.prev.jsonl';
const SNAPSHOT = 'snapshot.jsonl';
/** Snapshot bytes written between two fdatasyncs of the snapshot file. */
const SNAPSHOT_SYNC_BYTES = 1024 * 1024;

/**
 * How a snapshot yields the disk to the log after each fdatasync: by default it waits as long as
 * that sync took. A snapshot is the whole state (170 MB at 5k nodes, about 2 s of this machine's
 * writeback) and each of the log's O_DSYNC commits waits for the journal, and so for the
 * snapshot's dirty pages: written flat out, the commits queued behind it for most of a second.
 * Paced, a commit waits behind one slice's writeback at most, as a database rate-limits its
 * compaction so that foreground commits keep their latency.
 */
export type SnapshotPace = (syncMs: number) => Promise<void>;
const yieldDisk: SnapshotPace = (syncMs) => new Promise((resolve) => setTimeout(resolve, syncMs));

function readLog(path: string, afterRv: number, into: WalRecord[]) {
  // Only a regular file holds records (a device such as /dev/full would read forever).
  if (!existsSync(path) || !statSync(path).isFile()) return;
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (line === '') continue;
    let rec: WalRecord;
    try {
      rec = JSON.parse(line) as WalRecord;
    } catch {
      // A torn final line from a crash mid-write was never acknowledged: drop it.
      break;
    }
    if (rec.rv > afterRv) into.push(rec);
  }
}

/**
 * The log and snapshots hold every object, Secrets included: owner-only, like etcd's data files.
 * A file left by an older version with a wider mode is narrowed when it is opened again.
 */
export const DATA_FILE_MODE = 0o600;

function openPrivate(path: string, flags: 'a' | 'w' | number): number {
  const fd = openSync(path, flags, DATA_FILE_MODE);
  fchmodSync(fd, DATA_FILE_MODE);
  return fd;
}

/**
 * The log is opened O_DSYNC: a group commit is one write that returns once its data is on disk
 * (write and fdatasync in one call). Each call is a trip through the thread pool and back on a
 * later event loop turn, and each turn may carry a LIST's slice and a watch flush: one trip
 * instead of two halves what a commit waits behind them.
 */
function openLog(path: string, truncate = false): number {
  const { O_WRONLY, O_CREAT, O_APPEND, O_DSYNC, O_TRUNC } = constants;
  return openPrivate(path, O_WRONLY | O_CREAT | O_APPEND | O_DSYNC | (truncate ? O_TRUNC : 0));
}

const snapshotLine = ({ resource, obj }: Snapshot['objects'][number]) =>
  `{"resource":${JSON.stringify(resource)},"obj":${toJson(obj)}}\n`;

function fsyncDir(dir: string) {
  const fd = openSync(dir, 'r');
  fsyncSync(fd);
  closeSync(fd);
}

/**
 * Durable storage: an append-only log of JSON lines, fsynced in group commits, plus a snapshot.
 * A snapshot rotates the log first (wal.jsonl -> wal.prev.jsonl), is then written in the
 * background to a temp file, fsynced and renamed, and only then is the old segment removed, so a
 * crash at any point leaves snapshot + segments that replay to everything acknowledged.
 */
export class WriteAheadLog {
  private fd: number;
  private pending: string[] = [];
  private waiters: { resolve: () => void; reject: (e: Error) => void }[] = [];
  /** Set once a write or fsync failed: from then on nothing is acknowledged (fail-stop). */
  failure: Error | undefined;
  private flushing = false;
  private bytes = 0;
  /** Length of the last snapshot written or read at open, counted as the log's `bytes` are. */
  private lastSnapshotLength = 0;
  private snapshotting = false;

  private constructor(
    private readonly dir: string,
    private readonly pace: SnapshotPace,
  ) {
    this.fd = openLog(join(dir, WAL));
  }

  static open(
    dir: string,
    pace: SnapshotPace = yieldDisk,
  ): {
    wal: WriteAheadLog;
    snapshot: Snapshot | undefined;
    records: WalRecord[];
    /** A snapshot was interrupted: compact before taking new ones. */
    interrupted: boolean;
  } {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    for (const f of [SNAPSHOT, WAL_PREV]) {
      if (existsSync(join(dir, f)) && statSync(join(dir, f)).isFile())
        chmodSync(join(dir, f), DATA_FILE_MODE);
    }
    let snapshot: Snapshot | undefined;
    let snapshotLength = 0;
    const snapPath = join(dir, SNAPSHOT);
    if (existsSync(snapPath)) {
      const text = readFileSync(snapPath, 'utf8');
      snapshotLength = text.length;
      const lines = text.split('\n').filter((l) => l !== '');
      const head = JSON.parse(lines[0]!) as { rv: number };
      snapshot = {
        rv: head.rv,
        objects: lines.slice(1).map((l) => JSON.parse(l) as { resource: string; obj: KObject }),
      };
    }
    const records: WalRecord[] = [];
    const after = snapshot?.rv ?? 0;
    readLog(join(dir, WAL_PREV), after, records);
    readLog(join(dir, WAL), after, records);
    const wal = new WriteAheadLog(dir, pace);
    wal.lastSnapshotLength = snapshotLength;
    return { wal, snapshot, records, interrupted: existsSync(join(dir, WAL_PREV)) };
  }

  /** Bytes logged since the last snapshot. */
  get size(): number {
    return this.bytes;
  }

  /** Bytes of the last snapshot: the state's size on disk. */
  get lastSnapshotSize(): number {
    return this.lastSnapshotLength;
  }

  append(rec: WalRecord): void {
    const { o, ...rest } = rec;
    // The object's JSON is already made for its watchers and response: splice it in.
    const line =
      o === undefined
        ? `${JSON.stringify(rec)}\n`
        : `${JSON.stringify(rest).slice(0, -1)},"o":${toJson(o)}}\n`;
    this.pending.push(line);
    this.bytes += line.length;
  }

  /** Resolves once everything appended so far is on disk. */
  commit(): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.failure !== undefined) {
        reject(this.failure);
        return;
      }
      this.waiters.push({ resolve, reject });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    while (this.waiters.length > 0) {
      const lines = this.pending;
      const waiters = this.waiters;
      this.pending = [];
      this.waiters = [];
      try {
        if (lines.length > 0) {
          await writeAsync(this.fd, lines.join(''));
        }
      } catch (e) {
        this.failure = new Error(
          `write-ahead log failed, writes are refused from now on: ${(e as Error).message}`,
        );
        for (const w of [...waiters, ...this.waiters]) w.reject(this.failure);
        this.waiters = [];
        break;
      }
      for (const w of waiters) w.resolve();
    }
    this.flushing = false;
  }

  /**
   * Starts a background snapshot of `take()` (called right after the log is rotated, so it
   * covers everything in the old segment). Returns false when one is already running.
   */
  snapshotInBackground(take: () => Snapshot): boolean {
    if (this.snapshotting || this.flushing || existsSync(join(this.dir, WAL_PREV))) return false;
    this.snapshotting = true;
    // Rotate while no flush is running: everything flushed so far is in the old segment.
    closeSync(this.fd);
    renameSync(join(this.dir, WAL), join(this.dir, WAL_PREV));
    this.fd = openLog(join(this.dir, WAL));
    fsyncDir(this.dir);
    this.bytes = 0;
    const snap = take();
    void this.writeSnapshot(snap)
      .then(() => rm(join(this.dir, WAL_PREV), { force: true }))
      .catch((e: Error) => console.error(`fake-apiserver: snapshot failed (the log is kept): ${e.message}`))
      .finally(() => {
        this.snapshotting = false;
      });
    return true;
  }

  private async writeSnapshot(snap: Snapshot): Promise<void> {
    const tmp = join(this.dir, `${SNAPSHOT}.tmp`);
    const fh = await open(tmp, 'w', DATA_FILE_MODE);
    let written = 0;
    try {
      await fh.chmod(DATA_FILE_MODE);
      await fh.write(`${JSON.stringify({ rv: snap.rv })}\n`);
      // Serialised in slices so that request handling keeps going meanwhile, and synced as it
      // goes, paced (SnapshotPace): hundreds of MB left dirty would stall the log's commits
      // behind their writeback.
      let unsynced = 0;
      for (let i = 0; i < snap.objects.length; i += 500) {
        const chunk = snap.objects
          .slice(i, i + 500)
          .map(snapshotLine)
          .join('');
        await fh.write(chunk);
        unsynced += chunk.length;
        written += chunk.length;
        if (unsynced >= SNAPSHOT_SYNC_BYTES) {
          const synced = performance.now();
          await fh.datasync();
          unsynced = 0;
          await this.pace(performance.now() - synced);
        }
      }
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, join(this.dir, SNAPSHOT));
    fsyncDir(this.dir);
    this.lastSnapshotLength = written;
  }

  /** Synchronous snapshot at shutdown: the whole state, then an empty log. */
  snapshotNow(snap: Snapshot): void {
    const tmp = join(this.dir, `${SNAPSHOT}.tmp`);
    const fd = openPrivate(tmp, 'w');
    writeSync(fd, `${JSON.stringify({ rv: snap.rv })}\n`);
    for (const o of snap.objects) writeSync(fd, snapshotLine(o));
    fsyncSync(fd);
    closeSync(fd);
    renameSync(tmp, join(this.dir, SNAPSHOT));
    fsyncDir(this.dir);
    closeSync(this.fd);
    rmSync(join(this.dir, WAL_PREV), { force: true });
    this.fd = openLog(join(this.dir, WAL), true);
    fsyncSync(this.fd);
    this.pending = [];
    this.bytes = 0;
  }

  /** Flushes what is pending. The caller snapshots first when it wants a compact directory. */
  close(): void {
    if (this.pending.length > 0 && this.failure === undefined) {
      writeSync(this.fd, this.pending.join(''));
      fsyncSync(this.fd);
      this.pending = [];
    }
    closeSync(this.fd);
  }

  get busy(): boolean {
    return this.snapshotting || this.flushing;
  }
}
