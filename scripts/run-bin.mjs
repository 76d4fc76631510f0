// What every workspace bin runs (packages/*/bin/*.js, apps/harness/bin/kubelet-harness.js). npm
// links a workspace's bins at `npm ci`, but only to files that exist then, and dist/ does not
// before the first build: a bin pointing into dist/ is never linked and `npx <bin>` fails with
// "could not determine executable to run". So the bins are these committed shims, which load the
// build when it is there and otherwise say how to make it.
import { existsSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Runs `target` (relative to the shim) as if node had been started on it. */
export async function runBuilt(shimUrl, target) {
  const entry = fileURLToPath(new URL(target, shimUrl));
  if (!existsSync(entry)) {
    const name = fileURLToPath(shimUrl).split('/').pop().replace(/\.js$/, '');
    process.stderr.write(
      `${name}: ${relative(process.cwd(), entry)} is not built yet; run \`npm run build\` at the repository root first\n`,
    );
    process.exit(1);
  }
  // Entry points that check whether they are the main module compare it with argv[1].
  process.argv[1] = entry;
  await import(new URL(target, shimUrl).href);
}
