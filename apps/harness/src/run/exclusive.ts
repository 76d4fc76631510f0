// Host resources that a cell holds alone. Runtimes run their cells side by side, which is right
// for everything a node owns (its memory limit, its runtime), but every node's filesystem is the
// host's disk: two disk-pressure cells at once would each see the other's hog, and each one's
// threshold, taken from the free space when it starts, would be off by the other's writes.
export class ExclusiveResources {
  private readonly tails = new Map<string, Promise<void>>();

  /** Runs `fn` once no other holder of any of `names` runs; holders of one name run in arrival order. */
  async hold<T>(
    names: readonly string[],
    fn: () => Promise<T>,
    waiting?: (names: string[]) => void,
  ): Promise<T> {
    // Names are taken in one sorted order so that two cells never wait for each other.
    const sorted = [...new Set(names)].sort();
    const releases: (() => void)[] = [];
    const busy = sorted.filter((n) => this.tails.has(n));
    if (busy.length > 0) waiting?.(busy);
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
      return await fn();
    } finally {
      for (const release of releases) release();
    }
  }
}
