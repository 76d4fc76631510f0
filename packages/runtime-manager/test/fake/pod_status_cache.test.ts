// The manager's pod status cache (podStatusCacheTtlMs) over the fake runtime: which reads reach
// the runtime and which are served again, and what makes a served status go.
import { afterEach, describe, expect, it } from 'vitest';
import { ctr, Harness, IMAGE, makePod } from './harness.js';

let h: Harness;
afterEach(async () => {
  await h.stop();
});

async function start(podStatusCacheTtlMs?: number): Promise<Harness> {
  h = await Harness.start(podStatusCacheTtlMs === undefined ? {} : { podStatusCacheTtlMs });
  h.fake.addImage(IMAGE, 1000);
  return h;
}

/** CRI status reads (ListPodSandbox, ListContainers, *Status) made while `fn` ran. */
async function statusReads(fn: () => Promise<unknown>): Promise<number> {
  const mark = h.fake.calls.length;
  await fn();
  return h.callsSince(mark).filter((m) => /^List|Status$/.test(m)).length;
}

const stateOf = async (pod: ReturnType<typeof makePod>) =>
  (await h.status(pod)).containerStatuses.map((c) => c.state);

describe('pod status cache', () => {
  it('is off by default: every read goes to the runtime', async () => {
    await start();
    const pod = makePod('web', [ctr('app')]);
    await h.sync(pod);
    await h.status(pod);
    expect(await statusReads(() => h.status(pod))).toBeGreaterThan(0);
  });

  it('serves a repeated read of an unchanged pod without CRI calls, and re-reads after the TTL', async () => {
    await start(2_000);
    const pod = makePod('web', [ctr('app')]);
    await h.sync(pod);
    expect(await statusReads(() => h.status(pod))).toBe(4); // 2 lists, sandbox and container status
    expect(await statusReads(() => h.status(pod))).toBe(0);
    // A full listing that agrees with it keeps it.
    await h.manager.getPods(true);
    expect(await statusReads(() => h.status(pod))).toBe(0);
    h.advance(2_001);
    expect(await statusReads(() => h.status(pod))).toBe(4);
  });

  it('never serves a status read before the manager changed the pod', async () => {
    await start(60_000);
    const pod = makePod('web', [ctr('app')]);
    const before = await h.status(pod);
    expect(before.sandboxStatuses).toEqual([]);
    await h.manager.syncPod(pod, before, [], h.backoff);
    expect(await stateOf(pod)).toEqual(['running']);
    const status = await h.status(pod);
    await h.manager.killPod(pod, {
      uid: status.uid,
      name: status.name,
      namespace: status.namespace,
      sandboxes: status.sandboxStatuses.map((s) => ({ id: s.id, state: s.state })),
      containers: [],
    });
    expect(await stateOf(pod)).toEqual(['exited']);
  });

  it('keeps a status across a sync that had nothing to do', async () => {
    await start(60_000);
    const pod = makePod('web', [ctr('app')]);
    await h.sync(pod);
    const r = await h.sync(pod); // everything already runs
    expect(r.steps).toEqual([]);
    expect(await statusReads(() => h.status(pod))).toBe(0);
  });

  it('drops a status as soon as a full listing shows the runtime changed it on its own', async () => {
    await start(60_000);
    h.fake.script.containerExit('app', { afterMs: 1_000, exitCode: 3 });
    const pod = makePod('job', [ctr('app')]);
    await h.sync(pod);
    expect(await stateOf(pod)).toEqual(['running']);
    h.advance(1_000); // the container exits inside the runtime
    // Until the runtime is listed again, the pod is as last read (like the kubelet's PLEG cache).
    expect(await stateOf(pod)).toEqual(['running']);
    await h.manager.getPods(false); // a partial listing (running only) proves nothing
    expect(await stateOf(pod)).toEqual(['running']);
    await h.manager.getPods(true); // the PLEG's relist
    expect(await stateOf(pod)).toEqual(['exited']);
  });

  it('forgets everything after container GC removed containers', async () => {
    await start(60_000);
    const pod = makePod('web', [ctr('app')]);
    await h.sync(pod);
    await h.status(pod);
    await h.manager.garbageCollectWithReport(
      { minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1 },
      true,
      false,
    );
    expect(await statusReads(() => h.status(pod))).toBe(4);
  });
});
