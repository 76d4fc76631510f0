// Host resources that a cell holds alone. Runtimes run their cells side by side, which is right
// for everything a node owns (its memory limit, its runtime), but every node's filesystem is the
// host's disk: two disk-pressure cells at once would each see the other's hog, and each one's
// threshold, taken from the free space when it starts, would be off by the other's writes.
//
// The disk is shared by every process on the machine (two CI jobs, two shards) and by every
// Docker engine on it, so a held name is also a lock file in a directory all of them see
// (`KH_LOCK_DIR`, default `$TMPDIR/kubelet-harness/locks`), not an object on one engine.
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { withFileLock } from '@kh/testkit';

export const defaultLockDir = (env: NodeJS.ProcessEnv = process.env): string =>
  env.KH_LOCK_DIR ?? join(tmpdir(), 'kubelet-harness', 'locks');

export class ExclusiveResources {
  private readonly tails = new Map<string, Promise<void>>();

  constructor(private readonly lockDir = defaultLockDir()) {}

  /**
   * Runs `fn` once no other holder of any of `names`, in this process or another, runs; holders
   * in this process go in arrival order. `waiting` hears who holds a name it has to wait for.
   */
  async hold<T>(
    names: readonly string[],
    fn: () => Promise<T>,
    waiting?: (holders: string[]) => void,
  ): Promise<T> {
    // Names are taken in one sorted order so that two cells never wait for each other.
    const sorted = [...new Set(names)].sort();
    const releases: (() => void)[] = [];
    const busy = sorted.filter((n) => this.tails.has(n));
    if (busy.length > 0) waiting?.(busy.map((n) => `${n} (another runtime's cell)`));
    try {
      for (const name of sorted) {
        const before = this.tails.get(name) ?? Promise.resolve();
        let release!: () => void;
        const mine = new Promise<void>((r) => {
          release = r;
        });
        const tail = before.then(() => mine);
        this.tails.set(name, tail);
        releases.push(() => {
          release();
          if (this.tails.get(name) === tail) this.tails.delete(name);
        });
        await before;
      }
      if (sorted.length > 0) await mkdir(this.lockDir, { recursive: true });
      const locked = sorted.reduceRight<() => Promise<T>>(
        (inner, name) => () =>
          withFileLock(join(this.lockDir, `${name}.lock`), inner, (pid, host) =>
            waiting?.([`${name} (process ${pid} on ${host})`]),
          ),
        fn,
      );
      return await locked();
    } finally {
      for (const release of releases) release();
    }
  }
}
