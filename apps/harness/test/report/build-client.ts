// vitest global setup: compiles the report's browser script (tsconfig.client.build.json), so the
// report tests never inline a stale dist/ copy.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export default async function buildClient(): Promise<void> {
  const pkg = fileURLToPath(new URL('../..', import.meta.url));
  const tsc = fileURLToPath(new URL('../../../../node_modules/typescript/bin/tsc', import.meta.url));
  await promisify(execFile)(process.execPath, [tsc, '-p', 'tsconfig.client.build.json'], { cwd: pkg });
}
