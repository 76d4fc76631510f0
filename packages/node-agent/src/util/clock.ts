// The wait of the agent's periodic loops. Time itself is @kh/apimachinery's clock (realClock in
// production, FakeClock in tests), so status cadence, lease renewal and backoff are testable
// without sleeping.
import type { TimerClock } from '@kh/apimachinery';

/**
 * The wait of a periodic loop that can be woken early: wait() resolves after its period, on
 * kick(), or on abort, and at once when kick() came while nobody was waiting.
 */
export class Waker {
  private wakeUp: (() => void) | undefined;
  private pending = false;

  kick(): void {
    this.pending = true;
    this.wakeUp?.();
  }

  wait(clock: TimerClock, ms: number, signal: AbortSignal): Promise<void> {
    if (this.pending || signal.aborted) {
      this.pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        cancel();
        signal.removeEventListener('abort', done);
        this.wakeUp = undefined;
        this.pending = false;
        resolve();
      };
      const cancel = clock.setTimer(ms, done);
      signal.addEventListener('abort', done, { once: true });
      this.wakeUp = done;
    });
  }
}

/**
 * Waits for `work` at most `ms`: past that, what `timedOut` returns (or throws) settles the wait
 * instead, and `work` goes on unwatched (the kubelet's select on a channel and time.After).
 */
export async function untilDoneOr<T>(
  clock: TimerClock,
  ms: number,
  work: Promise<T>,
  timedOut: () => T,
): Promise<T> {
  let cancel = () => {};
  const deadline = new Promise<T>((resolve, reject) => {
    cancel = clock.setTimer(ms, () => {
      try {
        resolve(timedOut());
      } catch (err) {
        reject(err);
      }
    });
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    cancel();
  }
}
