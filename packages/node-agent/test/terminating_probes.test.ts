// The upstream case "should mark readiness on pods to false and disable liveness probes while pod
// is in progress of terminating", sidecar layout, through the whole pod layer (newPodLayer with
// the prober) and the real runtime manager on the in-memory CRI runtime, on a fake clock. The
// race a loaded node exposed: a liveness failure's sync is killing the sidecar when the deletion
// arrives. StopContainer is held open by the test, so the ordering is deterministic. The agent's
// PLEG relists every 10 ms of real time, feeding the pod cache and syncing the pod on its events.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '@kh/apimachinery';
import { ContainerState, CriClient, FakeRuntime, type StopContainerRequest } from '@kh/cri-api';
import { type GenericPLEG, KubeGenericRuntimeManager, PodCache } from '@kh/runtime-manager';
import type { V1Pod } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { PodLayer } from '../src/main_kubelet.js';
import { ProbeResultsStore } from '../src/prober/results.js';
import type { ProbeRequest } from '../src/prober/worker.js';
import { podLayerPleg } from './helpers/pleg.js';
import { testPodLayer } from './helpers/pod_layer.js';

/** Real gRPC to the in-memory runtime: generous on a loaded machine. */
const eventually = (check: () => void) => vi.waitFor(check, { timeout: 10_000, interval: 5 });

const UID = 'uid-terminating';

const pod: V1Pod = {
  metadata: { name: 'terminating-liveness', namespace: 'default', uid: UID },
  spec: {
    nodeName: 'node-a',
    terminationGracePeriodSeconds: 30,
    initContainers: [
      {
        name: 'probed',
        image: 'busybox',
        restartPolicy: 'Always',
        readinessProbe: { exec: { command: ['cat', '/tmp/ready'] }, periodSeconds: 2, failureThreshold: 1 },
        livenessProbe: { exec: { command: ['cat', '/tmp/liveness'] }, periodSeconds: 1, failureThreshold: 1 },
      },
    ],
    containers: [{ name: 'main', image: 'busybox', command: ['sleep', '600'] }],
  },
};

const deleted: V1Pod = {
  ...pod,
  metadata: { ...pod.metadata, deletionTimestamp: new Date(0), deletionGracePeriodSeconds: 30 },
};

let clock: FakeClock;
let fake: FakeRuntime;
let cri: CriClient;
let layer: PodLayer;
let pleg: GenericPLEG;
let events: string[];
/** Probe types run, in order. */
let probed: string[];
/** Whether the liveness probe fails (the sidecar removed /tmp/liveness). */
let livenessFails: boolean;
/** While set, StopContainer calls wait here until the test releases them. */
let holdStops: boolean;
let held: { req: StopContainerRequest; release: () => void }[];

beforeEach(async () => {
  clock = new FakeClock();
  fake = await FakeRuntime.start({ clock });
  fake.addImage('busybox', 1000);
  cri = await CriClient.connect(fake.endpoint);
  [events, probed, held, livenessFails, holdStops] = [[], [], [], false, false];
  // The client's calls are read-only own properties; an object inheriting from it can shadow one.
  const gated: CriClient = Object.create(cri, {
    stopContainer: {
      value: async (req: StopContainerRequest, opts?: Parameters<CriClient['stopContainer']>[1]) => {
        if (holdStops) await new Promise<void>((release) => held.push({ req, release }));
        return cri.stopContainer(req, opts);
      },
    },
  });
  const results = new ProbeResultsStore();
  const dir = mkdtempSync(join(tmpdir(), 'kh-terminating-'));
  const runtime = await KubeGenericRuntimeManager.create({
    cri: gated,
    clock,
    recorder: { event: (_pod, _type, reason, message) => events.push(`${reason}: ${message}`) },
    probeResults: results.forRuntime,
    podLogsRootDir: join(dir, 'logs'),
    podsDir: join(dir, 'pods'),
  });
  const podCache = new PodCache(clock);
  pleg = podLayerPleg(runtime, () => layer, { clock, cache: podCache, relistPeriodMs: 10 });
  layer = testPodLayer({
    runtime,
    podCache,
    clock,
    probing: {
      runtime,
      results,
      runner: async ({ spec }: ProbeRequest) => {
        probed.push(spec.type);
        return spec.type === 'liveness' && livenessFails
          ? { result: 'failure', output: 'cat: /tmp/liveness: No such file or directory' }
          : { result: 'success', output: '' };
      },
    },
  });
  pleg.start();
});

afterEach(async () => {
  await pleg.stop();
  layer.prober?.stop();
  cri.close();
  await fake.stop();
});

async function advance(ms: number): Promise<void> {
  await clock.advance(ms);
  await layer.prober?.idle();
}

const creates = (name: string) =>
  fake.callLog.filter(
    (c) =>
      c.method === 'CreateContainer' &&
      (c.request as { config?: { metadata?: { name: string } } }).config?.metadata?.name === name,
  ).length;

// Each pass is real gRPC to the in-memory runtime: generous timeouts for a loaded machine.
describe('a sidecar with a liveness probe, while its pod terminates', { timeout: 30_000 }, () => {
  it('is not restarted by a liveness kill that was under way when the deletion arrived', async () => {
    await layer.lifecycle.handlePodAdditions([pod]);
    const status = () => layer.statusManager.getPodStatus(UID);
    // The sidecar, then the main container once the PLEG saw the sidecar run.
    await eventually(() => {
      expect(status()?.initContainerStatuses?.[0]?.state?.running).toBeDefined();
      expect(status()?.containerStatuses?.[0]?.state?.running).toBeDefined();
    });
    await advance(1_000);
    expect(probed).toContain('liveness');

    // The liveness probe fails (under load, a timed-out exec); its sync kills the sidecar.
    holdStops = true;
    livenessFails = true;
    await advance(1_000);
    await eventually(() => expect(held).toHaveLength(1));
    expect(events).toContain('Killing: Init container probed failed liveness probe, will be restarted');

    // The deletion arrives while that kill waits for the sidecar to exit.
    await layer.lifecycle.handlePodUpdates([deleted]);
    holdStops = false;
    held[0]?.release();
    await layer.workers.settle();

    // The in-flight pass started nothing again; the terminating pass stopped the rest.
    expect(creates('probed')).toBe(1);
    expect(status()?.initContainerStatuses?.[0]?.restartCount).toBe(0);
    expect(fake.containers().filter((c) => c.state === ContainerState.CONTAINER_RUNNING)).toEqual([]);
    expect(events.filter((e) => e.includes('failed liveness probe'))).toHaveLength(1);

    // Nor does liveness run again while the pod is terminating.
    probed.length = 0;
    await advance(10_000);
    expect(probed).not.toContain('liveness');
  });
});
