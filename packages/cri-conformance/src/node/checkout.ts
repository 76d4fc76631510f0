import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import type { NodeContainer } from '@kh/testkit';

// Our commands run inside a node from this checkout, on the host's Node.js: nothing is baked into
// the node image, so a rebuild is what the next node runs.

/** Where the checkout is mounted (read-only) in a node. */
export const PROJECT_IN_NODE = '/opt/kh';

/** A workspace package's built command (its dist/cli.js) and the checkout that holds it. */
function builtCli(pkg: string): { root: string; cli: string } {
  let entry: string;
  try {
    entry = realpathSync(createRequire(import.meta.url).resolve(pkg));
  } catch {
    throw new Error(`${pkg} is not installed here: run \`npm ci\` in the kubelet-harness checkout`);
  }
  const cli = join(dirname(entry), 'cli.js');
  if (!existsSync(cli)) throw new Error(`${cli} is missing: run \`npx turbo run build\` first`);
  for (let dir = dirname(cli); dir !== dirname(dir); dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && 'workspaces' in JSON.parse(readFileSync(manifest, 'utf8')))
      return { root: dir, cli };
  }
  throw new Error(`no npm workspace root above ${cli}`);
}

/** The dockershim's CLI and the checkout that holds it (its dependencies resolve inside). */
export const dockershimCli = (): { root: string; cli: string } => builtCli('@kh/dockershim');

/** This package's `cri-conformance` command and the checkout that holds it. */
export const conformanceCli = (): { root: string; cli: string } => builtCli('@kh/cri-conformance');

/** Where a command of the checkout is in a node built withCheckout. */
export function cliInNode(command: { root: string; cli: string }): string {
  return `${PROJECT_IN_NODE}/${relative(command.root, command.cli)}`;
}

/** Mounts the host's Node.js and the checkout (read-only) into the node, to run our commands there. */
export function withCheckout(builder: NodeContainer, root = conformanceCli().root): NodeContainer {
  return builder.withHostNode().withBindMounts([{ source: root, target: PROJECT_IN_NODE, mode: 'ro' }]);
}
