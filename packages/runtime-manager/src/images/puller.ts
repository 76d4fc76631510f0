// How pulls share the runtime: one at a time (serializeImagePulls, the kubelet default) or in
// parallel, optionally capped by maxParallelImagePulls.

export interface ImagePuller {
  /** Runs `pull` when the policy allows; resolves with its result and the time spent waiting. */
  run<T>(pull: () => Promise<T>): Promise<{ value: T; waitedMs: number }>;
  readonly kind: 'serial' | 'parallel';
}

/** A counting semaphore; `limit` Infinity never blocks. */
class Slots {
  #free: number;
  readonly #waiters: (() => void)[] = [];
  constructor(limit: number) {
    this.#free = limit;
  }
  async acquire(): Promise<void> {
    if (this.#free > 0) {
      this.#free--;
      return;
    }
    await new Promise<void>((resolve) => this.#waiters.push(resolve));
  }
  release(): void {
    const next = this.#waiters.shift();
    if (next) next();
    else this.#free++;
  }
}

class LimitedPuller implements ImagePuller {
  readonly #slots: Slots;
  constructor(
    limit: number,
    readonly kind: 'serial' | 'parallel',
  ) {
    this.#slots = new Slots(limit);
  }
  async run<T>(pull: () => Promise<T>): Promise<{ value: T; waitedMs: number }> {
    const queued = performance.now();
    await this.#slots.acquire();
    const waitedMs = performance.now() - queued;
    try {
      return { value: await pull(), waitedMs };
    } finally {
      this.#slots.release();
    }
  }
}

export interface PullerOptions {
  serializeImagePulls: boolean;
  /** Only with serializeImagePulls false; undefined or 0 means no cap. */
  maxParallelImagePulls?: number;
}

export function newImagePuller(opts: PullerOptions): ImagePuller {
  if (opts.serializeImagePulls) {
    if (opts.maxParallelImagePulls !== undefined && opts.maxParallelImagePulls > 1) {
      throw new RangeError('maxParallelImagePulls needs serializeImagePulls: false');
    }
    return new LimitedPuller(1, 'serial');
  }
  const max = opts.maxParallelImagePulls;
  if (max !== undefined && max < 0) throw new RangeError(`maxParallelImagePulls must be >= 0, got ${max}`);
  return new LimitedPuller(max ? max : Number.POSITIVE_INFINITY, 'parallel');
}
