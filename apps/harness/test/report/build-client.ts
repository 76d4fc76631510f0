// vitest global setup: bundles the report's browser script (scripts/bundle-client.mjs), so the
// report tests never inline a stale dist/ copy.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export default async function buildClient(): Promise<void> {
  const script = fileURLToPath(new URL('../../scripts/bundle-client.mjs', import.meta.url));
  await promisify(execFile)(process.execPath, [script]);
}
