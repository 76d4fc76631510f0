// A crash-looping container through the whole pod layer (newPodLayer) and the real runtime manager
// on the in-memory CRI runtime, on a fake clock, with the agent's PLEG feeding the pod cache and
// syncing the pod on its events; the test says when it relists. Nothing here drives the sync
// loop's periodic resync, so every restart after a back-off must come from the pod worker's own
// retry; and every status the pod sync reports is recorded, to show the container does not flap
// between waiting and terminated while it waits.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '@kh/apimachinery';
import { CriClient, FakeRuntime } from '@kh/cri-api';
import { type GenericPLEG, KubeGenericRuntimeManager, PodCache } from '@kh/runtime-manager';
import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PodLayer } from '../src/main_kubelet.js';
import { BACKOFF_EXPIRY_SLACK_MS } from '../src/pods/pod_workers.js';
import { podLayerPleg } from './helpers/pleg.js';
import { testPodLayer } from './helpers/pod_layer.js';

/** How long the crashing container runs before it exits 1. */
const RUN_MS = 1_000;

const pod: V1Pod = {
  metadata: { name: 'web', namespace: 'default', uid: 'uid-web' },
  spec: {
    nodeName: 'node-a',
    restartPolicy: 'Always',
    containers: [{ name: 'crash', image: 'busybox', command: ['false'] }],
  },
};

let clock: FakeClock;
let fake: FakeRuntime;
let cri: CriClient;
let layer: PodLayer;
let runtime: KubeGenericRuntimeManager;
let pleg: GenericPLEG;
/** The state of "crash" in every status the pod sync reported, in order. */
let reported: V1ContainerStatus[];

beforeEach(async () => {
  clock = new FakeClock();
  fake = await FakeRuntime.start({ clock });
  fake.addImage('busybox', 1000);
  fake.script.containerExit('crash', { afterMs: RUN_MS, exitCode: 1 });
  cri = await CriClient.connect(fake.endpoint);
  const dir = mkdtempSync(join(tmpdir(), 'kh-crashloop-'));
  runtime = await KubeGenericRuntimeManager.create({
    cri,
    clock,
    podLogsRootDir: join(dir, 'logs'),
    podsDir: join(dir, 'pods'),
  });
  const podCache = new PodCache(clock);
  pleg = podLayerPleg(runtime, () => layer, { clock, cache: podCache });
  await pleg.relist();
  layer = testPodLayer({
    runtime,
    podCache,
    clock,
  });
  reported = [];
  const set = layer.statusManager.setPodStatus.bind(layer.statusManager);
  layer.statusManager.setPodStatus = (p, status) => {
    const s = status.containerStatuses?.find((c) => c.name === 'crash');
    if (s) reported.push(s);
    set(p, status);
  };
});

afterEach(async () => {
  cri.close();
  await fake.stop();
});

const starts = () => fake.calls.filter((c) => c === 'StartContainer').length;
const current = () => layer.statusManager.getPodStatus('uid-web')?.containerStatuses?.[0];

/** One relist of the PLEG: the passes waiting for it, and those its events start, run to the end. */
async function relist(): Promise<void> {
  await pleg.relist();
  await layer.workers.settle();
  await layer.lifecycle.containerDeletor.idle();
}

/** Moves the fake clock on, then the PLEG relists. */
async function advance(ms: number): Promise<void> {
  await clock.advance(ms);
  await relist();
}

/** The container exits after its run; the PLEG sees it die, and its ContainerDied syncs the pod. */
async function crash(): Promise<void> {
  await clock.advance(RUN_MS);
  const [newest] = (await runtime.getPodStatus('uid-web', 'web', 'default')).containerStatuses;
  expect(newest?.state).toBe('exited');
  await relist();
}

// Each pass is real gRPC to the in-memory runtime: generous timeouts for a loaded machine.
describe('a container in CrashLoopBackOff', { timeout: 30_000 }, () => {
  it('is restarted by its pod worker when each back-off expires, without the periodic resync', async () => {
    await layer.lifecycle.handlePodAdditions([pod]);
    await layer.workers.settle();
    expect(starts()).toBe(1);
    // The first exit restarts at once (no back-off yet); it starts the 10 s back-off.
    await crash();
    expect(starts()).toBe(2);

    for (const [n, delayS] of [10, 20, 40].entries()) {
      await crash();
      expect(current()?.state).toEqual({
        waiting: {
          reason: 'CrashLoopBackOff',
          message: `back-off ${delayS}s restarting failed container=crash pod=web_default(uid-web)`,
        },
      });
      expect(current()?.lastState?.terminated).toMatchObject({ exitCode: 1, reason: 'Error' });
      await advance(delayS * 1000 - 1_000);
      expect(starts()).toBe(n + 2); // still backing off
      await advance(1_000 + BACKOFF_EXPIRY_SLACK_MS);
      expect(starts()).toBe(n + 3);
      await relist(); // the PLEG sees it run, and its ContainerStarted reports it
      expect(current()?.state?.running).toBeDefined();
    }
  });

  it('stays waiting with its reason between syncs until it runs again', async () => {
    await layer.lifecycle.handlePodAdditions([pod]);
    await layer.workers.settle();
    await crash();
    await crash();
    const waitingFrom = reported.findIndex((s) => s.state?.waiting?.reason === 'CrashLoopBackOff');
    expect(waitingFrom).toBeGreaterThan(0);
    // A pass during the back-off (the periodic resync) and the pass that restarts it.
    await layer.lifecycle.handlePodSyncs([pod]);
    await relist();
    await advance(10_000 + BACKOFF_EXPIRY_SLACK_MS);
    expect(starts()).toBe(3);
    await relist();
    const afterwards = reported.slice(waitingFrom);
    const runningAt = afterwards.findIndex((s) => s.state?.running);
    expect(runningAt).toBeGreaterThan(2);
    for (const s of afterwards.slice(0, runningAt)) {
      expect(s.state?.waiting?.reason).toBe('CrashLoopBackOff');
      expect(s.lastState?.terminated?.exitCode).toBe(1);
    }
  });
});
