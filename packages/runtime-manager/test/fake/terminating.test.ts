// Races between a pod's termination and the runtime manager: a sync whose signal fires while a
// liveness kill is in flight, and the order in which a pod's containers get SIGTERM (KEP-753).
// StopContainer calls are held open by the test, so every ordering is deterministic.

import { flushMicrotasks } from '@kh/apimachinery';
import type { CriClient, StopContainerRequest } from '@kh/cri-api';
import { describe, expect, it, vi } from 'vitest';
import { ctr, type Harness, harnessPerTest, makePod } from './harness.js';

/** Real gRPC to the in-memory runtime: generous on a loaded machine. */
const eventually = (check: () => void) => vi.waitFor(check, { timeout: 10_000, interval: 5 });

let h: Harness;
harnessPerTest((started) => {
  h = started;
});

/** StopContainer calls, each held until the test releases it; all of them are recorded. */
interface HeldStops extends Array<{ req: StopContainerRequest; release: () => void }> {
  /** Later calls go straight through (they are still recorded). */
  passThrough?: boolean;
}

async function managerWithHeldStops(failedLiveness: Set<string> = new Set()): Promise<HeldStops> {
  const cri = h.clients[0]!;
  const held: HeldStops = [];
  // The client's calls are read-only own properties; an object inheriting from it can shadow one.
  const gated: CriClient = Object.create(cri, {
    stopContainer: {
      value: async (req: StopContainerRequest, opts?: Parameters<CriClient['stopContainer']>[1]) => {
        await new Promise<void>((release) => {
          held.push({ req, release });
          if (held.passThrough) release();
        });
        return cri.stopContainer(req, opts);
      },
    },
  });
  h.manager = await h.newManager({
    cri: gated,
    probeResults: {
      liveness: (id) => (failedLiveness.has(id) ? 'failure' : undefined),
      startup: () => undefined,
    },
  });
  return held;
}

const creates = () =>
  h.fake.callLog
    .filter((c) => c.method === 'CreateContainer')
    .map((c) => (c.request as { config?: { metadata?: { name: string } } }).config?.metadata?.name);

describe('a sync whose pod starts terminating', { timeout: 30_000 }, () => {
  it('kills and starts nothing more once its signal fires, even for a liveness failure it already saw', async () => {
    const failed = new Set<string>();
    const held = await managerWithHeldStops(failed);
    const probe = { livenessProbe: { exec: { command: ['true'] } } };
    const pod = makePod('abort', [ctr('a', probe), ctr('b', probe)]);
    await h.sync(pod);
    const st = await h.status(pod);
    for (const c of st.containerStatuses) failed.add(c.id.id);
    const abort = new AbortController();
    const sync = h.manager.syncPod(pod, st, [], h.backoff, abort.signal);
    await eventually(() => expect(held).toHaveLength(1));
    // The deletion arrives while the first liveness kill is under way.
    abort.abort();
    held.passThrough = true;
    held[0]!.release();
    const result = await sync;
    expect(result.aborted).toBe(true);
    expect(result.steps.map((s) => `${s.action} ${s.target}`)).toEqual(['KillContainer a']);
    expect(held).toHaveLength(1); // b was not killed
    expect(creates()).toEqual(['a', 'b']); // nothing was restarted
  });

  it('does nothing when the signal fired before the sync began', async () => {
    const failed = new Set<string>();
    const held = await managerWithHeldStops(failed);
    held.passThrough = true;
    const pod = makePod('pre-aborted', [ctr('a', { livenessProbe: { exec: { command: ['true'] } } })]);
    await h.sync(pod);
    const st = await h.status(pod);
    failed.add(st.containerStatuses[0]!.id.id);
    const result = await h.manager.syncPod(pod, st, [], h.backoff, AbortSignal.abort());
    expect(result).toEqual({ steps: [], aborted: true });
    expect(held).toHaveLength(0);
  });
});

describe('killPod with sidecars', { timeout: 30_000 }, () => {
  it('stops app containers first, then sidecars in reverse order, out of one grace period', async () => {
    const pod = makePod('order', [ctr('app1'), ctr('app2')], {
      terminationGracePeriodSeconds: 30,
      initContainers: [
        ctr('first', { restartPolicy: 'Always', lifecycle: { preStop: { exec: { command: ['drain'] } } } }),
        ctr('second', { restartPolicy: 'Always' }),
      ],
    });
    for (let i = 0; i < 3; i++) await h.sync(pod);
    const st = await h.status(pod);
    expect(st.containerStatuses.map((c) => c.state)).toEqual(['running', 'running', 'running', 'running']);
    const nameOf = (id: string) => st.containerStatuses.find((c) => c.id.id === id)?.name;
    const running = (await h.manager.getPods(false)).find((p) => p.uid === pod.metadata!.uid)!;
    const stops = await managerWithHeldStops();
    const kill = h.manager.killPod(pod, running);
    const stopped = () => stops.map((s) => `${nameOf(s.req.containerId)}:${s.req.timeout}`);

    await eventually(() => expect(stopped()).toHaveLength(2));
    // The sidecar's preStop hook has run already; only its SIGTERM waits for the app containers.
    await eventually(() =>
      expect(h.requests<{ cmd: string[] }>('ExecSync').map((e) => e.cmd)).toEqual([['drain']]),
    );
    expect(stopped().sort()).toEqual(['app1:30', 'app2:30']);
    h.advance(25_000); // the app containers take 25 s to exit
    stops[0]!.release();
    await eventually(() => expect(h.fake.calls.filter((c) => c === 'StopContainer')).toHaveLength(1));
    await flushMicrotasks();
    expect(stops).toHaveLength(2); // one app container is still running
    stops[1]!.release();
    // The last sidecar goes first, with what is left of the pod's grace period.
    await eventually(() => expect(stopped()).toEqual([expect.any(String), expect.any(String), 'second:5']));
    h.advance(4_000);
    stops[2]!.release();
    // Then the first one, with at least the minimum 2 s.
    await eventually(() => expect(stopped()[3]).toBe('first:2'));
    stops[3]!.release();
    await kill;
    expect((await h.status(pod)).containerStatuses.every((c) => c.state === 'exited')).toBe(true);
  });
});
