import { parseArgs } from 'node:util';
import { DEFAULT_CRI_TOOLS_VERSION, DEFAULT_NODE_RELEASE, isNodeRelease, NODE_RELEASES } from '@kh/testkit';
import { writeOut } from '../framework/output.js';
import { compareSides, formatComparison } from '../suite/compare.js';
import { CRITEST_RUN_OPTIONS, critestExitCode, critestSides, flakeAttemptsOf } from './cli.js';
import {
  DEFAULT_NODE_SIDES,
  NODE_SIDES,
  type NodeCritestRun,
  type NodeSide,
  runCritestInNodes,
} from './nodes.js';

export const CRITEST_NODES_USAGE = `Usage: cri-conformance critest-nodes [--release <r>] [--critest <version|path>] [options] [-- <dockershim flags>]

Runs upstream critest inside kind-style node containers of one Debian release: first in a node
running containerd (its own CRI, the reference), then in a node running dockerd with our dockershim
next to it (started from this checkout, on the host's Node.js), pods on CNI from the node's pod CIDR
(side \`dockershim\`, cri-dockerd's default) or on Docker's bridge (side \`dockershim-docker\`). critest dials the node's CRI socket
from inside the node, so streaming URLs on the node's loopback and host paths work as on a real
node. Both sides get the same local test images, images file and skips. Prints one table of specs,
where the sides differ first. Exit code 1 when the dockershim fails a spec containerd passes (with
one side: when a spec failed), 2 when critest could not run.

Options:
  --release <r>              node image: ${NODE_RELEASES.join(', ')} (default ${DEFAULT_NODE_RELEASE})
  --critest <version|path>   cri-tools release built by \`bash scripts/cri-tools.sh <version>\`
                             (default ${DEFAULT_CRI_TOOLS_VERSION}), or a static critest binary
  --side <side>              ${NODE_SIDES.join(', ')} (repeatable, run in the order given;
                             default ${DEFAULT_NODE_SIDES.join(', ')})
  --focus <regex>            --ginkgo.focus (Go regexp; repeatable)
  --skip <regex>             --ginkgo.skip, added to the built-in list (repeatable)
  --flake-attempts <n>       runs per spec before it fails (default 1); a later pass shows as flaky
  --json <file>              write the release, node image packages, every side's specs and the comparison
  --timeout <minutes>        per critest run (default 20)
  -h, --help
Everything after \`--\` is passed to the dockershim, after its side's networking flags.

Example: cri-conformance critest-nodes --release forky --critest 1.33.0`;

/** The table's header: what ran where. */
export function formatNodeRun(run: NodeCritestRun): string {
  const packages = Object.entries(run.nodeImage.packages)
    .map(([pkg, version]) => `${pkg} ${version}`)
    .join(', ');
  const versions = [...new Set(run.results.map((r) => r.critestVersion))].join(', ');
  return [
    `Debian ${run.release} node image ${run.nodeImage.ref}: ${packages}`,
    `critest ${versions} (${run.critest})${run.shimArgs.length ? `; dockershim ${run.shimArgs.join(' ')}` : ''}`,
  ].join('\n');
}

export async function critestNodesMain(argv: string[]): Promise<number> {
  const split = argv.indexOf('--');
  const args = split < 0 ? argv : argv.slice(0, split);
  const shimArgs = split < 0 ? [] : argv.slice(split + 1);
  const { values } = parseArgs({
    args,
    options: {
      release: { type: 'string', default: DEFAULT_NODE_RELEASE },
      critest: { type: 'string', default: DEFAULT_CRI_TOOLS_VERSION },
      side: { type: 'string', multiple: true },
      ...CRITEST_RUN_OPTIONS,
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${CRITEST_NODES_USAGE}\n`);
    return 0;
  }
  const usageError = (message: string) => {
    process.stderr.write(`cri-conformance critest-nodes: ${message}\n\n${CRITEST_NODES_USAGE}\n`);
    return 2;
  };
  if (!isNodeRelease(values.release)) return usageError(`unknown --release ${values.release}`);
  const sides = values.side ?? [...DEFAULT_NODE_SIDES];
  const unknownSide = sides.find((s) => !(NODE_SIDES as readonly string[]).includes(s));
  if (unknownSide) return usageError(`unknown --side ${unknownSide}`);
  const timeout = Number(values.timeout);
  if (!(timeout > 0)) return usageError(`--timeout must be a positive number of minutes`);
  const flakeAttempts = flakeAttemptsOf(values['flake-attempts']);
  if (flakeAttempts === undefined) return usageError(`--flake-attempts must be a whole number of at least 1`);
  const isVersion = /^\d+\.\d+\.\d+$/.test(values.critest);

  const run = await runCritestInNodes({
    release: values.release,
    ...(isVersion ? { critestVersion: values.critest } : { critest: values.critest }),
    sides: sides as NodeSide[],
    shimArgs,
    focus: values.focus,
    skip: values.skip,
    flakeAttempts,
    timeoutMs: timeout * 60_000,
    progress: (line) => process.stderr.write(`${line}\n`),
  });
  const comparison = compareSides(critestSides(run.results));
  process.stdout.write(`\n${formatNodeRun(run)}\n\n${formatComparison(comparison)}\n`);
  if (values.json) await writeOut(values.json, `${JSON.stringify({ ...run, comparison }, null, 2)}\n`);
  return critestExitCode(run.results, comparison);
}
