// `kubelet-harness churn`: sandboxes created and torn down in parallel, in a loop, against one
// column's runtime, until it hangs or the rounds run out. It reproduces what reddened CI: dockerd
// 20.10.24's libnetwork lock-order deadlock (moby/libnetwork#2649) after a probe suite deleted its
// 22 pods at once. When the runtime stops answering, its goroutine dump is written next to the
// summary and searched for the deadlock's two goroutines.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { CriClient } from '@kh/cri-api';
import { ensureImages, TestNetwork, WORKLOAD_IMAGES } from '@kh/testkit';
import { startedNode } from '../backends/started-node.js';
import type { BackendContext, RuntimeBackend, StartedBackend, StartedNode } from '../backends/types.js';
import { detectRuntimeHang } from '../run/runtime-hang.js';
import type { Progress } from '../support/progress.js';

export interface ChurnOptions {
  /** Pods per round, created together and torn down together. */
  pods: number;
  rounds: number;
  /** Per-call deadline: a call that takes longer is a hang suspect. */
  callTimeoutMs: number;
  /**
   * CRI Status asked this often meanwhile (0: never), as an agent's runtime health check and
   * relists ask while pods come and go: the dockershim answers it with Docker's network inspect,
   * which takes the lock a teardown holds.
   */
  statusEveryMs: number;
  outDir: string;
}

export interface ChurnRound {
  round: number;
  createMs: number;
  /** How long tearing the round's pods down took (it overlaps the next round's creation). */
  teardownMs?: number;
  errors: string[];
}

export interface ChurnSummary {
  column: string;
  runtimeName: string;
  runtimeVersion: string;
  nodeImage?: StartedNode['nodeImage'];
  pods: number;
  roundsPlanned: number;
  rounds: ChurnRound[];
  sandboxesTornDown: number;
  /** From the first round's start to the last teardown's end (or the hang's diagnosis), in ms. */
  roundsMs: number;
  /** The hang, when there was one: the reason, where the dump went, what it shows. */
  hang?: { afterRound: number; reason: string; stacksFile?: string; libnetworkDeadlock: boolean };
}

/** The node's pod CIDR, as the run's node IPAM would give a first node (10.244.0.0/16, /24s). */
const CHURN_POD_CIDR = '10.244.0.0/24';

/** The two sides of moby/libnetwork#2649 as a goroutine dump shows them. */
const DEADLOCK_FRAMES = [/processEndpointDelete/, /\(\*sandbox\)\.Delete|sbLeave/];

/** What a backend's node needs from the run: its images and a network (a seam for tests). */
export interface ChurnWorld {
  images: BackendContext['images'];
  network: BackendContext['network'];
  stop(): Promise<void>;
}

async function churnWorld(backend: RuntimeBackend, runId: string, progress: Progress): Promise<ChurnWorld> {
  progress.step(`images for ${backend.name}`);
  const images = await ensureImages(['node', ...WORKLOAD_IMAGES, ...(backend.images ?? [])], {
    progress: (l) => progress.info(l),
  });
  const network = await new TestNetwork().withName(runId).start();
  return { images, network, stop: () => network.stop() };
}

export async function runChurn(
  backend: RuntimeBackend,
  opts: ChurnOptions,
  progress: Progress,
  signal?: AbortSignal,
  startWorld: typeof churnWorld = churnWorld,
): Promise<ChurnSummary> {
  const runId = `kh-churn-${Date.now().toString(36)}`;
  const { images, network, stop } = await startWorld(backend, runId, progress);
  let fromBackend: StartedBackend | undefined;
  try {
    progress.step(`node ${runId}-${backend.name}`);
    const ctx = {
      runId,
      network,
      images,
      nodeName: `${runId}-${backend.name}`,
      progress: (m: string) => progress.info(m),
    };
    fromBackend = await backend.start(ctx);
    const started = await startedNode(backend, fromBackend, ctx);
    const summary: ChurnSummary = {
      column: backend.name,
      runtimeName: started.runtimeName,
      runtimeVersion: started.runtimeVersion,
      ...(started.nodeImage ? { nodeImage: started.nodeImage } : {}),
      pods: opts.pods,
      roundsPlanned: opts.rounds,
      rounds: [],
      sandboxesTornDown: 0,
      roundsMs: 0,
    };
    progress.ok(
      `${started.runtimeName} ${started.runtimeVersion}: ${opts.rounds} rounds of ${opts.pods} pods`,
    );
    const client = await CriClient.connect(started.hostCriEndpoint, { timeoutMs: opts.callTimeoutMs });
    // No agent here to pass on a Node's pod CIDR: do it as one would, so CNI has its config.
    await client.updateRuntimeConfig({ runtimeConfig: { networkConfig: { podCidr: CHURN_POD_CIDR } } });
    // Round n's pods are torn down while round n+1's start, as when a suite's pods are deleted
    // while the next cell's pods start: that overlap is what reddened CI.
    let tearing: Promise<Teardown> | undefined;
    const polling = new AbortController();
    const poller = pollStatus(client, opts.statusEveryMs, polling.signal);
    const finish = async (teardown: Promise<Teardown> | undefined) => {
      const done = await teardown;
      if (!done) return;
      const round = summary.rounds[done.round - 1]!;
      round.teardownMs = done.ms;
      round.errors.push(...done.errors);
      summary.sandboxesTornDown += done.removed;
    };
    const roundsStart = Date.now();
    try {
      for (let round = 1; round <= opts.rounds && !signal?.aborted; round++) {
        const previous = tearing;
        const [created] = await Promise.all([
          createPods(client, started, round, opts.pods, runId),
          finish(previous),
        ]);
        summary.rounds.push({ round, createMs: created.ms, errors: created.errors });
        tearing = tearDown(client, round, created.sandboxes);
        const last = summary.rounds[round - 2];
        const errs = created.errors.length ? `, ${created.errors.length} errors: ${created.errors[0]}` : '';
        progress.info(
          `round ${round}: ${opts.pods} pods up in ${created.ms} ms` +
            `${last?.teardownMs !== undefined ? `, round ${round - 1}'s down in ${last.teardownMs} ms` : ''}${errs}`,
        );
        const hang = await detectRuntimeHang(started);
        if (!hang) continue;
        progress.fail(hang.reason);
        await mkdir(opts.outDir, { recursive: true });
        const stacksFile = hang.stacks ? join(opts.outDir, `${backend.name}-stacks.log`) : undefined;
        if (stacksFile && hang.stacks) await writeFile(stacksFile, `${hang.stacks.join('\n')}\n`);
        const dump = hang.stacks?.join('\n') ?? '';
        summary.hang = {
          afterRound: round,
          reason: hang.reason,
          ...(stacksFile ? { stacksFile } : {}),
          libnetworkDeadlock: DEADLOCK_FRAMES.every((frame) => frame.test(dump)),
        };
        tearing = undefined; // a hung runtime would never answer it
        break;
      }
      await finish(tearing);
      summary.roundsMs = Date.now() - roundsStart;
    } finally {
      polling.abort();
      await poller;
      client.close();
    }
    return summary;
  } finally {
    // A hung dockerd cannot stop its containers; the node goes with the engine's force removal.
    await fromBackend
      ?.stop()
      .catch((err: unknown) => progress.warn(`node clean-up: ${(err as Error).message}`));
    await stop().catch(() => {});
  }
}

/** Status every `everyMs` until aborted; its answers do not matter, only the calls' company. */
async function pollStatus(client: CriClient, everyMs: number, signal: AbortSignal): Promise<void> {
  while (everyMs > 0 && !signal.aborted) {
    await client.status({}, { signal }).catch(() => {});
    await delay(everyMs, undefined, { signal }).catch(() => {});
  }
}

interface Created {
  sandboxes: (string | undefined)[];
  ms: number;
  errors: string[];
}

interface Teardown {
  round: number;
  removed: number;
  ms: number;
  errors: string[];
}

/** `pods` sandboxes with one container each, all at once. */
async function createPods(
  client: CriClient,
  started: StartedNode,
  round: number,
  pods: number,
  runId: string,
): Promise<Created> {
  const errors: string[] = [];
  const t0 = Date.now();
  const sandboxes = await Promise.all(
    Array.from({ length: pods }, async (_, i) => {
      const uid = `${runId}-${round}-${i}`;
      const config = {
        metadata: { name: `churn-${round}-${i}`, namespace: 'kh-churn', uid, attempt: 0 },
        ...(started.cgroupParent ? { linux: { cgroupParent: started.cgroupParent } } : {}),
      };
      try {
        const { podSandboxId } = await client.runPodSandbox({ config });
        const { containerId } = await client.createContainer({
          podSandboxId,
          config: { metadata: { name: 'sleep', attempt: 0 }, image: { image: started.sandboxImage } },
          sandboxConfig: config,
        });
        await client.startContainer({ containerId });
        return podSandboxId;
      } catch (err) {
        errors.push((err as Error).message);
        return undefined;
      }
    }),
  );
  return { sandboxes, ms: Date.now() - t0, errors };
}

/** Every sandbox of a round stopped and removed at once, as a mass delete with grace 0 does. */
async function tearDown(
  client: CriClient,
  round: number,
  sandboxes: (string | undefined)[],
): Promise<Teardown> {
  const errors: string[] = [];
  let removed = 0;
  const t0 = Date.now();
  await Promise.all(
    sandboxes.map(async (podSandboxId) => {
      if (!podSandboxId) return;
      try {
        await client.stopPodSandbox({ podSandboxId });
        await client.removePodSandbox({ podSandboxId });
        removed++;
      } catch (err) {
        errors.push((err as Error).message);
      }
    }),
  );
  return { round, removed, ms: Date.now() - t0, errors };
}
