// Pending streaming requests, by single-use token: what the kubelet's streaming requestCache is.
// A token is valid for one connection within the TTL; at most maxInFlight wait at once.
import { randomBytes } from 'node:crypto';
import { ResourceExhaustedError } from '@kh/cri-api';

export const DEFAULT_REQUEST_TTL_MS = 60_000;
export const DEFAULT_MAX_IN_FLIGHT = 1000;

export class RequestCache<T> {
  // Insertion order is expiry order (one TTL for all), so expired entries are at the front.
  private readonly entries = new Map<string, { value: T; expires: number }>();

  constructor(
    private readonly ttlMs = DEFAULT_REQUEST_TTL_MS,
    private readonly maxInFlight = DEFAULT_MAX_IN_FLIGHT,
    private readonly now: () => number = Date.now,
  ) {}

  /** Stores `value` under a new random token; ResourceExhaustedError when too many are pending. */
  insert(value: T): string {
    this.evictExpired();
    if (this.entries.size >= this.maxInFlight) {
      throw new ResourceExhaustedError(
        `maximum number of in-flight streaming requests exceeded (${this.maxInFlight} pending, each valid for ${this.ttlMs / 1000} s)`,
      );
    }
    const token = randomBytes(16).toString('base64url');
    this.entries.set(token, { value, expires: this.now() + this.ttlMs });
    return token;
  }

  /** Takes the value out: a token works once, and not after it expired. */
  consume(token: string): T | undefined {
    const entry = this.entries.get(token);
    if (!entry) return undefined;
    this.entries.delete(token);
    return entry.expires > this.now() ? entry.value : undefined;
  }

  get size(): number {
    this.evictExpired();
    return this.entries.size;
  }

  private evictExpired(): void {
    const now = this.now();
    for (const [token, entry] of this.entries) {
      if (entry.expires > now) break;
      this.entries.delete(token);
    }
  }
}
