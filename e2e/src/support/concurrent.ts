/** Waits for every check to finish (so each one is recorded), then fails with the first failure. */
export async function allChecks(checks: Promise<unknown>[]): Promise<void> {
  const settled = await Promise.allSettled(checks);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
}

/**
 * A gate that lets at most `limit` tasks run at once, the others starting in turn as one ends:
 * many pods at once on a 2-core node make every one of them slow, while each check's timeout is
 * about its own pod.
 */
export function limiter(limit: number): <T>(task: () => Promise<T>) => Promise<T> {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async (task) => {
    // A task that ends hands its place to the next one waiting, so `running` stays the same.
    if (running < limit) running++;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await task();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else running--;
    }
  };
}

/** allChecks over tasks started at most `limit` at a time (see limiter). */
export async function allChecksLimited(limit: number, tasks: (() => Promise<unknown>)[]): Promise<void> {
  const gate = limiter(limit);
  await allChecks(tasks.map((task) => gate(task)));
}
