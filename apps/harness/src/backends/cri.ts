// Helpers every backend needs around its CRI endpoint.
import { setTimeout as sleep } from 'node:timers/promises';
import { CriClient } from '@kh/cri-api';

/** Waits until the endpoint answers CRI Version; returns the runtime's name and version. */
export async function waitForCri(
  endpoint: string,
  timeoutMs: number,
  describe: () => Promise<string> = async () => '',
): Promise<{ runtimeName: string; runtimeVersion: string }> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    let client: CriClient | undefined;
    try {
      client = await CriClient.connect(endpoint, { timeoutMs: 5_000, connectTimeoutMs: 2_000 });
      const v = await client.version({});
      return { runtimeName: v.runtimeName, runtimeVersion: v.runtimeVersion };
    } catch (err) {
      last = (err as Error).message;
    } finally {
      client?.close();
    }
    if (Date.now() > deadline) {
      const more = await describe().catch(() => '');
      throw new Error(
        `CRI at ${endpoint} did not answer within ${timeoutMs} ms (${last})${more ? `:\n${more}` : ''}`,
      );
    }
    await sleep(200);
  }
}

/** The pid of the one process named `name` in a node (`pgrep -x`), or an error naming what was found. */
export async function pidOf(
  exec: (cmd: string[]) => Promise<{ exitCode: number; output: string }>,
  name: string,
): Promise<number> {
  const r = await exec(['pgrep', '-x', name]);
  const pids = r.output
    .split('\n')
    .map((l) => Number(l.trim()))
    .filter((n) => n > 0);
  if (pids.length !== 1)
    throw new Error(`expected one ${name} process in the node, found ${pids.length}: ${r.output}`);
  return pids[0]!;
}
