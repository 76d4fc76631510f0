/** Waits for every check to finish (so each one is recorded), then fails with the first failure. */
export async function allChecks(checks: Promise<unknown>[]): Promise<void> {
  const settled = await Promise.allSettled(checks);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
}

/**
 * allChecks over tasks started at most `limit` at a time: many pods at once on a 2-core node make
 * every one of them slow, while each check's timeout is about its own pod.
 */
export async function allChecksLimited(limit: number, tasks: (() => Promise<unknown>)[]): Promise<void> {
  const queue = [...tasks];
  const started: Promise<unknown>[] = [];
  const runner = async () => {
    for (let task = queue.shift(); task; task = queue.shift()) {
      const run = task();
      started.push(run);
      await run.catch(() => undefined);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, queue.length) }, runner));
  await allChecks(started);
}
