// The one polling loop for waits no container start-up signal covers: a runtime answering on a
// socket, a process going away, an API object's state. (A container's own readiness is a
// testcontainers wait strategy on the container instead.) Every timeout says what it waited for
// and what it saw last.
import { setTimeout as sleep } from 'node:timers/promises';

/** One look at the world: the value waited for, or what was seen instead. */
export type Observation<T> = { done: true; value: T } | { done: false; saw: string };

export const done = <T>(value: T): Observation<T> => ({ done: true, value });
export const notYet = (saw: string): Observation<never> => ({ done: false, saw });

export interface UntilOptions {
  timeoutMs: number;
  /** Pause between looks; default 500 ms. */
  intervalMs?: number;
  /** What is awaited, as the timeout error names it: `node kh-1-fake Ready`. */
  describe: string;
}

export class UntilTimeoutError extends Error {
  constructor(
    readonly waitedFor: string,
    readonly timeoutMs: number,
    readonly lastSeen: string,
  ) {
    super(`timed out after ${timeoutMs} ms waiting for ${waitedFor}; last saw: ${lastSeen}`);
    this.name = 'UntilTimeoutError';
  }
}

/**
 * Looks at `condition` until it is done: at least once, and again every `intervalMs` until a look
 * that is not done comes after `timeoutMs`, which throws UntilTimeoutError. An error thrown by
 * `condition` ends the wait at once, so a condition that expects some (a socket not there yet)
 * catches them and returns notYet(message).
 */
export async function until<T>(
  condition: () => Promise<Observation<T>>,
  { timeoutMs, intervalMs = 500, describe }: UntilOptions,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  let seen = await condition();
  while (!seen.done) {
    if (performance.now() >= deadline) throw new UntilTimeoutError(describe, timeoutMs, seen.saw);
    await sleep(intervalMs);
    seen = await condition();
  }
  return seen.value;
}
