// Why each container last failed to start (the kubelet's reasonCache): CrashLoopBackOff,
// ErrImagePull, ImagePullBackOff, CreateContainerConfigError, RunContainerError... keyed by pod
// UID and container name. Pod syncs record every start attempt here; status generation reads it,
// so a container that is not running keeps showing `waiting` with its reason between syncs
// instead of falling back to its last `terminated` state. A successful start clears the entry.
// The cache is an LRU: a node cannot grow it without bound however many pods churn through it.

import type { PodSyncResult } from '@kh/runtime-manager';

/** The kubelet's maxReasonCacheEntries. */
export const MAX_REASON_CACHE_ENTRIES = 1000;

export interface ContainerReason {
  reason: string;
  message: string;
}

/** What status generation needs of the cache. */
export interface ReasonLookup {
  get(podUid: string, containerName: string): ContainerReason | undefined;
}

interface Entry extends ContainerReason {
  podUid: string;
}

export class ReasonCache implements ReasonLookup {
  /** Map order is recency order: the first entry is the least recently used. */
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly maxEntries = MAX_REASON_CACHE_ENTRIES) {}

  /** Records the outcome of every container start the sync attempted. */
  update(podUid: string, result: PodSyncResult): void {
    for (const step of result.steps) {
      if (step.action !== 'StartContainer' && step.action !== 'InitContainer') continue;
      const key = cacheKey(podUid, step.target);
      this.entries.delete(key);
      if (!step.error) continue;
      this.entries.set(key, {
        podUid,
        reason: step.reason ?? step.error.name,
        message: step.message ?? step.error.message,
      });
      if (this.entries.size > this.maxEntries) {
        const oldest = this.entries.keys().next().value;
        if (oldest !== undefined) this.entries.delete(oldest);
      }
    }
  }

  get(podUid: string, containerName: string): ContainerReason | undefined {
    const key = cacheKey(podUid, containerName);
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    this.entries.set(key, entry);
    return { reason: entry.reason, message: entry.message };
  }

  /** Housekeeping: forgets the containers of pods no source lists any more. */
  removeOrphaned(desired: ReadonlySet<string>): void {
    for (const [key, entry] of this.entries) if (!desired.has(entry.podUid)) this.entries.delete(key);
  }
}

// Container names are DNS labels, so '/' cannot occur in them.
const cacheKey = (podUid: string, containerName: string) => `${podUid}/${containerName}`;
