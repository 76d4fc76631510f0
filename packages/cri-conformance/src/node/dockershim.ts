import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { done, NODE_BINARY_IN_NODE, notYet, type StartedNodeContainer, until } from '@kh/testkit';
import { cliInNode, dockershimCli } from './checkout.js';
import { shellQuote } from './shell.js';

/** The dockershim's argv in a docker node: serve CRI where the node's CRI endpoint points. */
export function dockershimCommand(
  node: Pick<StartedNodeContainer, 'criEndpointInNode' | 'runtimeEndpointInNode'>,
  o: { cliInNode: string; pauseImage: string; shimArgs?: readonly string[] },
): string[] {
  return [
    NODE_BINARY_IN_NODE,
    o.cliInNode,
    `--listen=${node.criEndpointInNode}`,
    `--docker-endpoint=${node.runtimeEndpointInNode}`,
    `--pod-infra-container-image=${o.pauseImage}`,
    // The node lacks CAP_SYS_RESOURCE (PLATFORM.md): a negative oom_score_adj would fail.
    '--restrict-oom-score-adj',
    ...(o.shimArgs ?? []),
  ];
}

/**
 * Starts the dockershim in a docker node built withCheckout, in the background, and waits until it
 * answers CRI. Its output goes to dockershim.log in the node's shared directory.
 */
export async function startDockershim(
  node: StartedNodeContainer,
  o: { pauseImage: string; shimArgs: readonly string[] },
): Promise<void> {
  const log = `${node.sharedDirInNode}/dockershim.log`;
  const argv = dockershimCommand(node, { ...o, cliInNode: cliInNode(dockershimCli()) });
  await node.execOk(['sh', '-c', `setsid ${argv.map(shellQuote).join(' ')} > ${log} 2>&1 < /dev/null &`]);
  await until(
    async () => {
      try {
        return done(await node.criVersion());
      } catch (err) {
        const tail = await readFile(join(node.sharedDirOnHost, 'dockershim.log'), 'utf8').catch(() => '');
        return notYet(
          `${(err as Error).message}; dockershim.log: ${tail.trim().split('\n').slice(-5).join(' | ')}`,
        );
      }
    },
    { timeoutMs: 30_000, intervalMs: 200, describe: 'the dockershim in the node to answer CRI' },
  );
}
