// Token bucket for registry pulls (registryPullQPS / registryBurst). Like the kubelet, a pull
// over the limit is refused at once rather than queued: the pod then goes through the normal
// ErrImagePull -> ImagePullBackOff path instead of blocking its worker.

import { realClock } from '@kh/apimachinery';
import type { Clock } from '../container/runtime.js';

export class TokenBucket {
  #tokens: number;
  #last: number;

  /** qps <= 0 disables the limit. */
  constructor(
    readonly qps: number,
    readonly burst: number,
    private readonly clock: Clock = realClock,
  ) {
    if (qps > 0 && !(burst >= 1))
      throw new RangeError(`registryBurst must be >= 1 when registryPullQPS > 0, got ${burst}`);
    this.#tokens = burst;
    this.#last = clock.now();
  }

  /** Takes a token when one is available. */
  tryAccept(): boolean {
    if (this.qps <= 0) return true;
    const now = this.clock.now();
    this.#tokens = Math.min(this.burst, this.#tokens + ((now - this.#last) / 1000) * this.qps);
    this.#last = now;
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }
}
