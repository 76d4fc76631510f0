/** Waits for every check to finish (so each one is recorded), then fails with the first failure. */
export async function allChecks(checks: Promise<unknown>[]): Promise<void> {
  const settled = await Promise.allSettled(checks);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
}
