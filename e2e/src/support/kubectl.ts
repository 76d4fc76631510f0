import type { KubectlProcess, ScenarioContext } from '@kh/harness';

/** Waits until a running kubectl has written `pattern` to stdout; records what it wrote on timeout. */
export async function waitForOutput(ctx: ScenarioContext, name: string, p: KubectlProcess, pattern: RegExp) {
  return ctx.check.eventually(
    name,
    async () => ({ stdout: p.stdout(), stderr: p.stderr() }),
    (o) => pattern.test(o.stdout),
    { timeoutMs: 20_000, intervalMs: 200, expected: `stdout matching ${pattern}` },
  );
}
