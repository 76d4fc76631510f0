// Image garbage collection: when the image filesystem is at or above the high threshold, remove
// the least recently used images until usage is back at the low threshold. Images in use by any
// container (running or not), pinned images, the sandbox (pause) image, and images first seen
// less than imageMinimumGCAge ago are never removed.
//
// With imageMaximumGCAge set (maxAgeMs > 0), every pass first removes the images no container
// uses that were last seen in use more than maxAgeMs ago (never seen in use counts as long ago),
// whatever the disk usage, as the kubelet's freeOldImages does. Like the kubelet, it waits until
// the manager itself has run for maxAgeMs: use before its start is unknown to it.

import { parseImageReference, realClock } from '@kh/apimachinery';
import type { Clock, Image, ImageGCPolicy, ImageGCResult } from '../container/runtime.js';

export const DefaultImageGCPolicy: ImageGCPolicy = {
  highThresholdPercent: 85,
  lowThresholdPercent: 80,
  minAgeMs: 120_000,
  maxAgeMs: 0,
};

export interface ImageRecord {
  id: string;
  size: number;
  firstDetected: number;
  lastUsed: number;
  pinned: boolean;
}

const leastRecentlyUsedFirst = (a: ImageRecord, b: ImageRecord) =>
  a.lastUsed - b.lastUsed || a.firstDetected - b.firstDetected;

/** Least recently used first; equally recent images go in order of first detection. */
export function selectImagesToFree(
  records: ImageRecord[],
  inUse: ReadonlySet<string>,
  bytesToFree: number,
  now: number,
  minAgeMs: number,
): ImageRecord[] {
  const candidates = records
    .filter((r) => !inUse.has(r.id) && !r.pinned && now - r.firstDetected >= minAgeMs)
    .sort(leastRecentlyUsedFirst);
  const chosen: ImageRecord[] = [];
  let freed = 0;
  for (const r of candidates) {
    if (freed >= bytesToFree) break;
    chosen.push(r);
    freed += r.size;
  }
  return chosen;
}

/**
 * The max-age pass: images not in use and not pinned whose last use is more than maxAgeMs before
 * `now` (lastUsed 0, never seen in use, always is). maxAgeMs 0 selects nothing. imageMinimumGCAge
 * does not apply here, as in the kubelet.
 */
export function selectImagesPastMaxAge(
  records: ImageRecord[],
  inUse: ReadonlySet<string>,
  now: number,
  maxAgeMs: number,
): ImageRecord[] {
  if (!(maxAgeMs > 0)) return [];
  return records
    .filter((r) => !inUse.has(r.id) && !r.pinned && now - r.lastUsed > maxAgeMs)
    .sort(leastRecentlyUsedFirst);
}

/** Percent used, rounded up like the kubelet's integer arithmetic on available bytes. */
export function usagePercent(usedBytes: number, capacityBytes: number): number {
  const available = Math.max(0, capacityBytes - usedBytes);
  return 100 - Math.floor((available * 100) / capacityBytes);
}

/** Bytes to free to reach the low threshold. */
export function bytesToFree(usedBytes: number, capacityBytes: number, lowThresholdPercent: number): number {
  const available = Math.max(0, capacityBytes - usedBytes);
  return Math.max(0, Math.floor((capacityBytes * (100 - lowThresholdPercent)) / 100) - available);
}

export function validateImageGCPolicy(p: ImageGCPolicy): void {
  const ok = (n: number) => Number.isInteger(n) && n >= 0 && n <= 100;
  if (!ok(p.highThresholdPercent)) {
    throw new RangeError(`imageGCHighThresholdPercent must be 0..100, got ${p.highThresholdPercent}`);
  }
  if (!ok(p.lowThresholdPercent)) {
    throw new RangeError(`imageGCLowThresholdPercent must be 0..100, got ${p.lowThresholdPercent}`);
  }
  if (p.lowThresholdPercent > p.highThresholdPercent) {
    throw new RangeError(
      `imageGCLowThresholdPercent (${p.lowThresholdPercent}) must not exceed imageGCHighThresholdPercent (${p.highThresholdPercent})`,
    );
  }
  const maxAge = p.maxAgeMs ?? 0;
  if (!(Number.isFinite(maxAge) && maxAge >= 0)) {
    throw new RangeError(`imageMaximumGCAge must be >= 0, got ${maxAge}ms`);
  }
  if (maxAge > 0 && maxAge <= p.minAgeMs) {
    throw new RangeError(
      `imageMaximumGCAge (${maxAge}ms) must be greater than imageMinimumGCAge (${p.minAgeMs}ms)`,
    );
  }
}

/** What image GC needs from the runtime. */
export interface ImageGCDeps {
  listImages(): Promise<Image[]>;
  /** Image ids, refs and names used by any container the runtime still has. */
  imagesInUse(): Promise<Set<string>>;
  imageFsUsage(): Promise<{ usedBytes: number; capacityBytes: number }>;
  removeImage(id: string): Promise<void>;
}

function normalizedName(name: string): string {
  try {
    const r = parseImageReference(name);
    return `${r.domain}/${r.path}${r.tag ? `:${r.tag}` : ''}${r.digest ? `@${r.digest}` : ''}`;
  } catch {
    return name;
  }
}

export class ImageGCManager {
  readonly #records = new Map<string, ImageRecord>();
  readonly #clock: Clock;
  readonly #sandboxImage: string | undefined;
  /** When this manager started: the max-age pass waits until maxAgeMs have passed since. */
  readonly #startedAt: number;

  constructor(
    private readonly deps: ImageGCDeps,
    readonly policy: ImageGCPolicy = DefaultImageGCPolicy,
    opts: { clock?: Clock; sandboxImage?: string } = {},
  ) {
    validateImageGCPolicy(policy);
    this.#clock = opts.clock ?? realClock;
    this.#startedAt = this.#clock.now();
    this.#sandboxImage = opts.sandboxImage ? normalizedName(opts.sandboxImage) : undefined;
  }

  /** Updates first-seen and last-used times; returns the ids of images in use now. */
  async detectImages(): Promise<Set<string>> {
    const now = this.#clock.now();
    const [images, used] = await Promise.all([this.deps.listImages(), this.deps.imagesInUse()]);
    const usedNames = new Set([...used].map(normalizedName));
    const inUse = new Set<string>();
    const seen = new Set<string>();
    for (const img of images) {
      seen.add(img.id);
      const names = [...img.repoTags, ...img.repoDigests];
      const isSandbox =
        this.#sandboxImage !== undefined && names.some((n) => normalizedName(n) === this.#sandboxImage);
      if (used.has(img.id) || names.some((n) => usedNames.has(normalizedName(n))) || isSandbox)
        inUse.add(img.id);
      let rec = this.#records.get(img.id);
      if (!rec) {
        rec = { id: img.id, size: img.size, firstDetected: now, lastUsed: 0, pinned: img.pinned };
        this.#records.set(img.id, rec);
      }
      rec.size = img.size;
      rec.pinned = img.pinned;
      if (inUse.has(img.id)) rec.lastUsed = now;
    }
    for (const id of this.#records.keys()) if (!seen.has(id)) this.#records.delete(id);
    return inUse;
  }

  records(): ImageRecord[] {
    return [...this.#records.values()].map((r) => ({ ...r }));
  }

  /**
   * One pass: first the max-age pass (when maxAgeMs > 0), then, on the usage measured after it,
   * the threshold pass. A failed removal in the max-age pass fails the pass before the thresholds
   * are looked at, as in the kubelet.
   */
  async garbageCollect(): Promise<ImageGCResult> {
    const inUse = await this.detectImages();
    const now = this.#clock.now();
    const aged = await this.#freeOldImages(inUse, now);
    const { usedBytes, capacityBytes } = await this.deps.imageFsUsage();
    if (!(capacityBytes > 0)) throw new Error(`invalid capacity ${capacityBytes} on image filesystem`);
    const before = usagePercent(usedBytes, capacityBytes);
    const result: ImageGCResult = {
      freedBytes: aged.reduce((n, r) => n + r.size, 0),
      removed: aged.map((r) => r.id),
      usagePercentBefore: before,
    };
    if (aged.length > 0) result.removedForAge = aged.map((r) => r.id);
    if (before < this.policy.highThresholdPercent) return result;
    const want = bytesToFree(usedBytes, capacityBytes, this.policy.lowThresholdPercent);
    const failures: string[] = [];
    let freed = 0;
    for (const r of selectImagesToFree(this.records(), inUse, want, now, this.policy.minAgeMs)) {
      try {
        await this.deps.removeImage(r.id);
        this.#records.delete(r.id);
        result.removed.push(r.id);
        result.freedBytes += r.size;
        freed += r.size;
      } catch (err) {
        failures.push(`${r.id}: ${(err as Error).message}`);
      }
    }
    if (freed < want) {
      const why = failures.length ? ` (removal failed: ${failures.join('; ')})` : '';
      throw new ImageGCShortfallError(
        `Failed to garbage collect required amount of images. Attempted to free ${want} bytes, but only found ${freed} bytes eligible to free${why}`,
        result,
      );
    }
    return result;
  }

  /** Removes the images unused for longer than maxAgeMs; returns those it removed. */
  async #freeOldImages(inUse: ReadonlySet<string>, now: number): Promise<ImageRecord[]> {
    const maxAge = this.policy.maxAgeMs ?? 0;
    // Right after a start every image's last use is unknown (0): wait until maxAge has passed.
    if (!(maxAge > 0) || now - this.#startedAt <= maxAge) return [];
    const removed: ImageRecord[] = [];
    const failures: string[] = [];
    for (const r of selectImagesPastMaxAge(this.records(), inUse, now, maxAge)) {
      try {
        await this.deps.removeImage(r.id);
        this.#records.delete(r.id);
        removed.push(r);
      } catch (err) {
        failures.push(`${r.id}: ${(err as Error).message}`);
      }
    }
    if (failures.length > 0) {
      throw new Error(
        `wanted to free images older than ${maxAge}ms, encountered errors in image deletion: ${failures.join('; ')}`,
      );
    }
    return removed;
  }
}

/** Image GC ran but could not reach the low threshold; `result` says what it did free. */
export class ImageGCShortfallError extends Error {
  constructor(
    message: string,
    readonly result: ImageGCResult,
  ) {
    super(message);
    this.name = 'ImageGCShortfallError';
  }
}
