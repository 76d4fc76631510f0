import { randomBytes } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { NODE_BINARY_IN_NODE, type StartedNodeContainer } from '@kh/testkit';
import { type SuiteCliOptions, suiteCliArgs } from '../suite/cli-args.js';
import type { SuiteResult } from '../suite/runner.js';
import { cliInNode, conformanceCli } from './checkout.js';
import { shellQuote } from './shell.js';

// Our suite run *inside* a kind-style node, next to the runtime, as `critest-nodes` runs critest:
// the `cri-conformance` command on the host's Node.js from the checkout (a node built
// withCheckout). It dials the in-node CRI socket, reaches the streaming server on the node's
// loopback, and makes its shared mounts in the runtime's mount namespace, so no case has to skip
// for where the suite runs.

export interface NodeSuiteRun {
  /** The command's exit code: 0 nothing failed, 1 a case failed, 2 it could not run. */
  exitCode: number;
  /** Its stdout: the summary. */
  stdout: string;
  /** Its stderr: a progress line per case, and why it stopped. */
  stderr: string;
  /** Its --json output (undefined when it wrote none). */
  result?: SuiteResult;
  /** Its --junit output. */
  junit?: string;
  /** What the command left in its TMPDIR (its own log directory, kept when a case failed). */
  leftInTmpdir: string[];
}

/**
 * `cri-conformance` in a started node built withCheckout, on the node's CRI endpoint unless the
 * options name another (as the command in the node dials it). Without a log directory the command
 * makes its own, in a TMPDIR of its own in the node's filesystem. The JSON and JUnit reports come
 * back through the node's shared directory.
 */
export async function runConformanceInNode(
  node: StartedNodeContainer,
  options: Omit<SuiteCliOptions, 'endpoint'> & { endpoint?: string },
): Promise<NodeSuiteRun> {
  const id = `conformance-${randomBytes(4).toString('hex')}`;
  const dir = { local: join(node.sharedDirOnHost, id), inNode: `${node.sharedDirInNode}/${id}` };
  await mkdir(dir.local);
  const tmp = `/tmp/${id}`;
  const argv = [
    NODE_BINARY_IN_NODE,
    cliInNode(conformanceCli()),
    ...suiteCliArgs({ ...options, endpoint: options.endpoint ?? node.criEndpointInNode }),
    `--json=${dir.inNode}/result.json`,
    `--junit=${dir.inNode}/junit.xml`,
  ];
  const { exitCode, stdout, stderr } = await node.exec(
    ['sh', '-c', `mkdir -p "$TMPDIR" && exec ${argv.map(shellQuote).join(' ')}`],
    { env: { TMPDIR: tmp } },
  );
  const read = (name: string) => readFile(join(dir.local, name), 'utf8').catch(() => undefined);
  const json = await read('result.json');
  const left = await node.exec(['ls', '-A', tmp]);
  return {
    exitCode,
    stdout,
    stderr,
    result: json === undefined ? undefined : (JSON.parse(json) as SuiteResult),
    junit: await read('junit.xml'),
    leftInTmpdir: left.stdout.split('\n').filter(Boolean),
  };
}
