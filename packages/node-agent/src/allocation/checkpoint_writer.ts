// A checkpoint file kept current without blocking the event loop: every change asks for a write,
// one write is in flight at a time, and the changes made meanwhile are written together once it
// is done, from the state as it is then. A burst of 30 admissions so costs two writes, not 30
// synchronous ones. Each write is crash-safe as before: a temporary file renamed over the
// checkpoint, so a reader finds the old state or the new one, never half of one.
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Coalescer } from '../util/coalescer.js';

/** The file operations a write needs (tests hold or fail them). */
export interface CheckpointFs {
  mkdir(path: string, opts: { recursive: true }): Promise<unknown>;
  writeFile(path: string, data: string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
}

const hostFs: CheckpointFs = { mkdir, writeFile, rename };

export class CheckpointWriter {
  private readonly writes = new Coalescer(() => this.write());
  /** The last write's failure, until a write succeeds. */
  private failure: Error | undefined;

  constructor(
    private readonly opts: {
      path: string;
      /** The file's content for the state as it is when the write begins. */
      serialize: () => string;
      /** A failed write; the next change (or flush) writes the whole state again. */
      onError: (err: Error) => void;
      fs?: CheckpointFs;
    },
  ) {}

  /** The state changed: it is written once the write in flight, if any, is done. */
  changed(): void {
    void this.writes.run();
  }

  /**
   * Resolves once the state as it is now is on disk (stop); a write that failed is tried again,
   * and its error rejects the flush when it fails again.
   */
  async flush(): Promise<void> {
    if (!this.writes.idle || this.failure) await this.writes.run();
    if (this.failure) throw this.failure;
  }

  /** Never rejects: a failure is kept and reported. */
  private async write(): Promise<void> {
    const { path, serialize, onError, fs = hostFs } = this.opts;
    const tmp = `${path}.tmp`;
    try {
      await fs.mkdir(dirname(path), { recursive: true });
      await fs.writeFile(tmp, serialize());
      await fs.rename(tmp, path);
      this.failure = undefined;
    } catch (err) {
      this.failure = err as Error;
      onError(this.failure);
    }
  }
}
