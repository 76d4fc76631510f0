// Where the built project lives, on the host and inside containers. Nodes and the apiserver
// container run our packages from the host checkout, bind-mounted read-only, on the host's Node 22:
// nothing is baked into an image, so a rebuild is picked up by the next run without new images.
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BindMount, defaultHostNodeBinary, NODE_BINARY_IN_NODE } from '@kh/testkit';

/** Where the checkout is mounted inside every container of a run. */
export const PROJECT_IN_CONTAINER = '/opt/kh';

/** The repository root: the directory holding the workspace package.json above this file. */
export function projectRoot(from = dirname(fileURLToPath(import.meta.url))): string {
  let dir = resolve(from);
  while (!(existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'packages')))) {
    const up = dirname(dir);
    if (up === dir) throw new Error(`cannot find the kubelet-harness checkout above ${from}`);
    dir = up;
  }
  return dir;
}

/** The project's commands as paths relative to the checkout (their built dist/ entry points). */
export const COMMANDS = {
  nodeAgent: 'packages/node-agent/dist/bundle/node-agent.mjs',
  dockershim: 'packages/dockershim/dist/cli.js',
  fakeCri: 'packages/cri-api/dist/fake/cli.js',
  fakeApiserver: 'packages/fake-apiserver/dist/cli.js',
} as const;

export type ProjectCommand = keyof typeof COMMANDS;

/** Fails early, naming the build to run, when a command's dist/ is missing. */
export function requireBuilt(root: string, ...commands: ProjectCommand[]): void {
  const missing = commands.filter((c) => !existsSync(join(root, COMMANDS[c])));
  if (missing.length > 0) {
    throw new Error(
      `not built: ${missing.map((c) => COMMANDS[c]).join(', ')}; run \`npx turbo run build\` first`,
    );
  }
}

/** argv that runs one of our commands inside a container with the project mounted. */
export function inContainer(command: ProjectCommand, args: string[]): string[] {
  return [NODE_BINARY_IN_NODE, `${PROJECT_IN_CONTAINER}/${COMMANDS[command]}`, ...args];
}

/** argv that runs one of our commands on this machine, from the checkout, on the project's Node 22. */
export function onHost(command: ProjectCommand, args: string[], root = projectRoot()): string[] {
  return [defaultHostNodeBinary(), join(root, COMMANDS[command]), ...args];
}

/** The read-only mounts a container needs to run our commands: Node 22 and the checkout. */
export function projectMounts(root = projectRoot()): BindMount[] {
  return [
    { source: defaultHostNodeBinary(), target: NODE_BINARY_IN_NODE, mode: 'ro' },
    { source: root, target: PROJECT_IN_CONTAINER, mode: 'ro' },
  ];
}
