// Where the built project lives, on the host and inside containers. Nodes and the apiserver
// container run our packages from the host checkout, bind-mounted read-only, on the host's Node 22:
// nothing is baked into an image, so a rebuild is picked up by the next run without new images.
import { existsSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FAKE_CRI_COMMAND } from '@kh/cri-api/fake-command';
import { DOCKERSHIM_COMMAND } from '@kh/dockershim/command';
import { FAKE_APISERVER_COMMAND } from '@kh/fake-apiserver/command';
import { NODE_AGENT_COMMAND } from '@kh/node-agent/command';
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

/**
 * The project's commands, as each package exports its own entry point (a path on this machine, in
 * the checkout): the harness never restates another package's build layout.
 */
export const COMMANDS = {
  nodeAgent: NODE_AGENT_COMMAND,
  dockershim: DOCKERSHIM_COMMAND,
  fakeCri: FAKE_CRI_COMMAND,
  fakeApiserver: FAKE_APISERVER_COMMAND,
} as const;

export type ProjectCommand = keyof typeof COMMANDS;

/** argv that runs one of our commands inside a container with the project mounted. */
export function inContainer(command: ProjectCommand, args: string[], root = projectRoot()): string[] {
  return [NODE_BINARY_IN_NODE, join(PROJECT_IN_CONTAINER, relative(root, COMMANDS[command])), ...args];
}

/** argv that runs one of our commands on this machine, from the checkout, on the project's Node 22. */
export function onHost(command: ProjectCommand, args: string[]): string[] {
  return [defaultHostNodeBinary(), COMMANDS[command], ...args];
}

/** The read-only mounts a container needs to run our commands: Node 22 and the checkout. */
export function projectMounts(root = projectRoot()): BindMount[] {
  return [
    { source: defaultHostNodeBinary(), target: NODE_BINARY_IN_NODE, mode: 'ro' },
    { source: root, target: PROJECT_IN_CONTAINER, mode: 'ro' },
  ];
}
