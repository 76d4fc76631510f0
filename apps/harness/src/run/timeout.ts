// The run's --timeout, as ginkgo's suite timeout: when it runs out no new cell starts, the running
// ones end as failed, the rest fail as not run, and the run still cleans up and writes its results.
// An outer limit (vitest's hook timeout, a CI job's) then never cuts a run off without a report.
import { formatDuration } from '@kh/node-agent';

/** Ginkgo's default suite timeout. */
export const DEFAULT_RUN_TIMEOUT_MS = 60 * 60_000;

/**
 * What the run may take after its timeout: the cut cells' clean-up (namespaces, log excerpts, the
 * runtime check of a failed cell), the nodes' and the world's stop, and the results. The nodes'
 * and world's stop took 8 s after the core matrix (trial t66b); the rest is the margin.
 */
export const RUN_CLEAN_UP_ALLOWANCE_MS = 10 * 60_000;

/** The longest delay a Node timer takes (2^31 - 1 ms); a longer one fires at once. */
export const MAX_TIMER_MS = 2_147_483_647;

/** The abort reason of a run whose --timeout ran out; cells name it as their reason. */
export class RunTimedOut extends Error {
  constructor(timeoutMs: number) {
    super(`the run's --timeout of ${formatDuration(timeoutMs)} ran out`);
    this.name = 'RunTimedOut';
  }
}

export interface RunTimeout {
  /** Aborts on `interrupt` (reason: its own) or when the timeout runs out (reason: RunTimedOut). */
  signal: AbortSignal;
  /** Stops the timer; the run is over. */
  clear(): void;
}

/** `timeoutMs` 0: no timeout. `onTimeout` hears of it once, when it runs out. */
export function runTimeout(
  timeoutMs: number,
  interrupt: AbortSignal | undefined,
  onTimeout: (reason: RunTimedOut) => void,
): RunTimeout {
  const timedOut = new AbortController();
  const timer =
    timeoutMs > 0
      ? setTimeout(() => {
          const reason = new RunTimedOut(timeoutMs);
          onTimeout(reason);
          timedOut.abort(reason);
        }, timeoutMs)
      : undefined;
  return {
    signal: interrupt ? AbortSignal.any([interrupt, timedOut.signal]) : timedOut.signal,
    clear: () => clearTimeout(timer),
  };
}

/** How long a whole run with this --timeout may take, clean-up included, for an outer limit. */
export const runDeadlineMs = (timeoutMs: number = DEFAULT_RUN_TIMEOUT_MS): number =>
  timeoutMs > 0 ? Math.min(timeoutMs + RUN_CLEAN_UP_ALLOWANCE_MS, MAX_TIMER_MS) : MAX_TIMER_MS;
