// `kubelet-harness up` / `down`: the world the tests use (fake apiserver, registry with the
// workload images, one node per runtime running our agent), left running for a person or a tool
// to use with kubectl, like `kind create cluster` / `kind delete cluster`. Everything carries the
// cluster's kh.run label, so `down` removes it all by label, plus the temp dirs its containers
// mounted, whether or not `up` finished.
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { runId as processRunId } from '@kh/testkit';
import { selectBackends } from '../backends/registry.js';
import { nodeImagesOf, type RuntimeBackend } from '../backends/types.js';
import { startNode } from '../run/node.js';
import { list } from '../run/options.js';
import { errorMessage } from '../support/errors.js';
import type { Progress } from '../support/progress.js';
import { removeRunLeftovers } from '../world/leftovers.js';
import type { ReadyNode } from '../world/types.js';
import { HarnessWorld, nodeNameFor } from '../world/world.js';
import { type ClusterState, ClusterStateFile } from './state.js';

export const UP_USAGE = `Usage: kubelet-harness up [options]

Brings up the fake apiserver, a registry holding the pause, busybox, httpd, memhog and diskhog
images, and one node per runtime running our node agent; writes an admin kubeconfig and exits,
leaving it all running until \`kubelet-harness down\`.

Options:
  -r, --runtime <a,b>     runtimes, one node each, default containerd,docker
      --kubeconfig <path> where the admin kubeconfig goes, default <state dir>/kubeconfig
  -h, --help

State: $KH_CLUSTER_DIR (default $TMPDIR/kubelet-harness/cluster). One cluster at a time.`;

export const DOWN_USAGE = `Usage: kubelet-harness down

Removes the cluster \`up\` brought up: its containers, networks and volumes (by its kh.run label),
the temp dirs they mounted, its kubeconfig and its state.`;

export const DEFAULT_UP_RUNTIMES = ['containerd', 'docker'];

export interface ClusterIO {
  out: (s: string) => void;
  progress: Progress;
}

/** Seams for tests. */
export interface ClusterDeps {
  state?: ClusterStateFile;
  backends?: readonly RuntimeBackend[];
}

export async function clusterUp(argv: string[], io: ClusterIO, deps: ClusterDeps = {}): Promise<number> {
  let values: { runtime?: string; kubeconfig?: string; help?: boolean };
  let backends: RuntimeBackend[];
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        runtime: { type: 'string', short: 'r' },
        kubeconfig: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }));
    if (values.help) {
      io.out(`${UP_USAGE}\n`);
      return 0;
    }
    backends = selectBackends(list(values.runtime) ?? DEFAULT_UP_RUNTIMES, deps.backends);
  } catch (err) {
    io.out(`kubelet-harness up: ${errorMessage(err)}\n\n${UP_USAGE}\n`);
    return 2;
  }
  const state = deps.state ?? new ClusterStateFile();
  const existing = await state.read();
  if (existing) {
    io.progress.fail(
      `a cluster is already up (${existing.runId}, kubeconfig ${existing.kubeconfig}); run kubelet-harness down first`,
    );
    return 1;
  }
  // testcontainers' reaper would remove the containers when this process exits.
  process.env.TESTCONTAINERS_RYUK_DISABLED = 'true';
  // testkit labels every container it starts with its process run id (KH_RUN_ID when set), so the
  // world takes the same id and `down` finds them all.
  const runId = processRunId;
  const kubeconfig = resolve(values.kubeconfig ?? join(state.dir, 'kubeconfig'));
  const runtimes = backends.map((b) => b.name);
  // Written before anything exists, so that `down` finds a half-built cluster too.
  const record: ClusterState = {
    runId,
    runtimes,
    kubeconfig,
    nodes: [],
    images: {},
    createdAt: new Date().toISOString(),
  };
  await state.write(record);
  const { progress } = io;
  progress.step(`cluster ${runId}: ${runtimes.join(', ')}`);
  let world: HarnessWorld | undefined;
  try {
    world = await HarnessWorld.start({
      runId,
      nodes: runtimes.map((r) => nodeNameFor(runId, r)),
      images: nodeImagesOf(backends),
      progress,
    });
    const w = world;
    const nodes: ReadyNode[] = await Promise.all(
      backends.map((b) => startNode(w, b, progress.child(b.name))),
    );
    await mkdir(dirname(kubeconfig), { recursive: true });
    await writeFile(kubeconfig, `${w.kubeConfig.exportConfig()}\n`, { mode: 0o600 });
    await state.write({ ...record, nodes: nodes.map((n) => n.started.nodeName), images: { ...w.images } });
    w.detach();
    progress.ok(`cluster ${runId} is up`);
    io.out(
      [
        `kubeconfig (admin): ${kubeconfig}`,
        `nodes: ${nodes.map((n) => n.started.nodeName).join(', ')}`,
        'images in the registry (as pods name them):',
        ...Object.entries(w.images).map(([name, ref]) => `  ${name.padEnd(8)} ${ref}`),
        '',
        `  kubectl --kubeconfig ${kubeconfig} get nodes`,
        '  node apps/harness/dist/cli.js down',
        '',
      ].join('\n'),
    );
    return 0;
  } catch (err) {
    progress.fail(`up failed, removing what it created: ${errorMessage(err)}`);
    world?.detach();
    await removeCluster(record, state);
    return 1;
  }
}

export async function clusterDown(argv: string[], io: ClusterIO, deps: ClusterDeps = {}): Promise<number> {
  if (argv.includes('-h') || argv.includes('--help')) {
    io.out(`${DOWN_USAGE}\n`);
    return 0;
  }
  if (argv.length > 0) {
    io.out(`kubelet-harness down: unexpected arguments ${argv.join(' ')}\n\n${DOWN_USAGE}\n`);
    return 2;
  }
  const state = deps.state ?? new ClusterStateFile();
  const record = await state.read();
  if (!record) {
    io.progress.info('no cluster is up');
    return 0;
  }
  io.progress.step(`removing cluster ${record.runId}`);
  await removeCluster(record, state);
  io.progress.ok(`cluster ${record.runId} removed`);
  return 0;
}

/** Everything labelled with the cluster's run id, the temp dirs it mounted, its kubeconfig, its state. */
async function removeCluster(record: ClusterState, state: ClusterStateFile): Promise<void> {
  await removeRunLeftovers(record.runId);
  await rm(record.kubeconfig, { force: true });
  await state.remove();
}
