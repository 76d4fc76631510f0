import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  cleanUpOnInterrupt,
  criToolsDir,
  DEFAULT_CRI_TOOLS_VERSION,
  DEFAULT_NODE_RELEASE,
  DOCKERSHIM_CNI_FLAGS,
  ensureImages,
  NodeContainer,
  type NodeImageInfo,
  type NodeRelease,
  nodeImageInfo,
  nodeImageName,
  POD_SUBNET,
  type StartedNodeContainer,
} from '@kh/testkit';
import { dockershimCli, withCheckout } from '../node/checkout.js';
import { startDockershim } from '../node/dockershim.js';
import { shellQuote } from '../node/shell.js';
import { runtimeLogLines, type SpecResult, troubledSpecs } from './report.js';
import { type CritestOptions, type CritestResult, type CritestSite, critestAt, runtimeOf } from './run.js';

// Upstream critest run *inside* a kind-style node (testkit's NodeContainer), next to the runtime:
// critest dials the in-node CRI socket, reaches the streaming server on the node's loopback, and
// its host paths (log dirs, mount propagation, seccomp profiles) are paths the runtime sees. One
// node per side, one side at a time, so two runtimes of one Debian release are judged alike.

/**
 * The sides of a release: containerd's own CRI, and Docker behind our dockershim, with pods on CNI
 * (`dockershim`, cri-dockerd's default) or on Docker's bridge (`dockershim-docker`).
 */
export const NODE_SIDES = ['containerd', 'dockershim', 'dockershim-docker'] as const;
export type NodeSide = (typeof NODE_SIDES)[number];
/** containerd, the reference, then the dockershim as cri-dockerd is deployed. */
export const DEFAULT_NODE_SIDES: readonly NodeSide[] = ['containerd', 'dockershim'];

/** Each dockershim side's networking flags. */
const SHIM_NETWORK: Partial<Record<NodeSide, readonly string[]>> = {
  dockershim: DOCKERSHIM_CNI_FLAGS,
  'dockershim-docker': ['--network-plugin=docker'],
};

/** Where the static critest binary is mounted (read-only) in a node. */
const CRITEST_IN_NODE = '/usr/local/bin/critest';
/** How much of the runtime's log (the node's output) a failed spec's lines are looked up in. */
const RUNTIME_LOG_LINES = 100_000;

export interface NodeCritestOptions
  extends Pick<CritestOptions, 'focus' | 'skip' | 'skips' | 'flakeAttempts' | 'timeoutMs' | 'progress'> {
  /** The Debian release whose node image both sides run (default trixie). */
  release?: NodeRelease;
  /** The cri-tools release built by `scripts/cri-tools.sh <version>` (default 1.26.0). */
  critestVersion?: string;
  /** A critest binary instead (static: it runs inside the node). */
  critest?: string;
  /** Which sides, in this order (default DEFAULT_NODE_SIDES: containerd, the reference, first). */
  sides?: readonly NodeSide[];
  /** More dockershim flags, after the side's networking ones. */
  shimArgs?: readonly string[];
}

export interface NodeCritestRun {
  release: NodeRelease;
  nodeImage: NodeImageInfo;
  critest: string;
  shimArgs: string[];
  /** One result per side, in the order of `sides`. */
  results: CritestResult[];
}

/**
 * critest inside a started node, against the node's CRI socket. The images file and report go
 * through the node's shared directory; critest's TMPDIR is a fresh directory in the node's own
 * filesystem. `timeout` (coreutils, in every node image) kills a critest that hangs.
 */
export async function runCritestInNode(
  node: StartedNodeContainer,
  critestInNode: string,
  opts: Omit<CritestOptions, 'endpoint' | 'critest'>,
): Promise<CritestResult> {
  const id = `critest-${randomBytes(4).toString('hex')}`;
  const dir = { local: join(node.sharedDirOnHost, id), critest: `${node.sharedDirInNode}/${id}` };
  await mkdir(dir.local);
  const log = `${dir.critest}/critest.log`;
  const site: CritestSite = {
    endpoint: node.criEndpointInNode,
    dir,
    run: async (args, timeoutMs) => {
      const script =
        `mkdir -p "$TMPDIR" && exec timeout -s KILL ${Math.ceil(timeoutMs / 1000)} ` +
        `${[critestInNode, ...args].map(shellQuote).join(' ')} > ${log} 2>&1`;
      const { exitCode } = await node.exec(['sh', '-c', script], { env: { TMPDIR: `/tmp/${id}` } });
      const output = await readFile(join(dir.local, 'critest.log'), 'utf8').catch(() => '');
      if (exitCode === 137)
        throw new Error(`critest did not finish within ${timeoutMs / 1000} s in node ${node.name}`);
      return { code: exitCode, output };
    },
  };
  const result = await critestAt(site, await runtimeOf(node.criEndpointOnHost), opts);
  return { ...result, specs: await withRuntimeLog(node, result.specs) };
}

/** Each failed or flaky spec with what the node's runtime logged about its sandboxes and containers. */
export async function withRuntimeLog(
  node: Pick<StartedNodeContainer, 'logs'>,
  specs: SpecResult[],
): Promise<SpecResult[]> {
  const troubled = new Set(troubledSpecs(specs));
  if (troubled.size === 0) return specs;
  const log = await node.logs(RUNTIME_LOG_LINES);
  return specs.map((s) => {
    const lines = troubled.has(s) ? runtimeLogLines(log, s.objectIds ?? []) : [];
    return lines.length > 0 ? { ...s, runtimeLog: lines } : s;
  });
}

/**
 * critest on each side of a Debian release, each in its own node: containerd's CRI, and dockerd
 * behind our dockershim (started in the node from this checkout, as the harness's docker column
 * runs it). Both get the same local images, the same images file and the same skips.
 */
export async function runCritestInNodes(opts: NodeCritestOptions = {}): Promise<NodeCritestRun> {
  const progress = opts.progress ?? (() => undefined);
  const release = opts.release ?? DEFAULT_NODE_RELEASE;
  const critest =
    opts.critest ?? join(criToolsDir(opts.critestVersion ?? DEFAULT_CRI_TOOLS_VERSION), 'critest');
  if (!existsSync(critest))
    throw new Error(
      `${critest} is missing: build it with \`bash scripts/cri-tools.sh ${opts.critestVersion ?? DEFAULT_CRI_TOOLS_VERSION}\``,
    );
  const shimArgs = [...(opts.shimArgs ?? [])];
  const sides = opts.sides ?? DEFAULT_NODE_SIDES;
  const nodeImage = nodeImageName(release);
  const refs = await ensureImages(['pause', 'busybox', 'httpd', nodeImage], { progress });
  const results: CritestResult[] = [];
  for (const side of sides) {
    const builder = new NodeContainer(refs[nodeImage])
      .withRuntime(side === 'containerd' ? 'containerd' : 'docker')
      .withPauseImage(refs.pause)
      .withBindMounts([{ source: critest, target: CRITEST_IN_NODE, mode: 'ro' }])
      .withProgress(progress);
    const shimNetwork = SHIM_NETWORK[side];
    if (shimNetwork) withCheckout(builder, dockershimCli().root);
    const node = await builder.start();
    // Ctrl-C during a run of several minutes removes the node too.
    const stopNode = cleanUpOnInterrupt(() => node.stop());
    try {
      // The runtime's own names for the images (containerd's normalised ones; Docker resolves them alike).
      const [busybox = '', httpd = ''] = await node.loadImages([refs.busybox, refs.httpd]);
      if (shimNetwork) {
        await node.loadImages([refs.pause]);
        await startDockershim(node, { pauseImage: refs.pause, shimArgs: [...shimNetwork, ...shimArgs] });
        // As a kubelet passes on its Node's pod CIDR: the shim writes the node's CNI config from it.
        if (side === 'dockershim') await node.updatePodCidr(POD_SUBNET);
      }
      const result = await runCritestInNode(node, CRITEST_IN_NODE, { ...opts, images: { busybox, httpd } });
      results.push({ ...result, side });
    } finally {
      await stopNode();
    }
  }
  return { release, nodeImage: await nodeImageInfo(refs[nodeImage]), critest, shimArgs, results };
}
