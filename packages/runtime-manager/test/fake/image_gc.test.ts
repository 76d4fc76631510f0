import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ImageGCShortfallError } from '../../src/images/image_gc.js';
import { ctr, Harness, makePod } from './harness.js';

let h: Harness;
const MB = 1_000_000;
beforeEach(async () => {
  // The fake's image filesystem is not a real mount: capacity comes from its script.
  h = await Harness.start({
    podSandboxImage: 'kubelet-harness/pause:1',
    imageFsCapacity: async () => Number(h.fake.imageFs.capacityBytes ?? 0),
  });
});
afterEach(async () => {
  await h.stop();
});

const tags = async () => (await h.manager.listImages()).flatMap((i) => i.repoTags).sort();

describe('image GC over the runtime', () => {
  it('does nothing below imageGCHighThresholdPercent (85)', async () => {
    h.fake.addImage('old/a:1', 10 * MB);
    h.fake.setImageFs({ usedBytes: 84 * MB, capacityBytes: 100 * MB });
    h.advance(3 * 60_000);
    await h.manager.imageGC.detectImages();
    h.advance(3 * 60_000);
    const r = await h.manager.imageGC.garbageCollect();
    expect(r).toEqual({ freedBytes: 0, removed: [], usagePercentBefore: 84 });
  });

  it('frees least recently used images down to the low threshold, never in-use, pause or young images', async () => {
    h.fake.addImage('kubelet-harness/pause:1', 1 * MB);
    h.fake.addImage('old/a:1', 5 * MB);
    h.fake.addImage('old/b:1', 3 * MB);
    h.fake.addImage('busy/c:1', 3 * MB);
    await h.manager.imageGC.detectImages(); // first seen now
    h.advance(60_000);
    // b was used more recently than a (by a container that is gone again).
    const p = makePod('user-b', [ctr('app', { image: 'old/b:1' })]);
    await h.sync(p);
    await h.manager.imageGC.detectImages();
    await h.manager.killPod(p, (await h.manager.getPods(false))[0]!);
    await h.manager.garbageCollect({ minAgeMs: 0, maxPerPodContainer: 0, maxContainers: 0 }, true, true);
    // c stays in use by a running pod.
    await h.sync(makePod('user-c', [ctr('app', { image: 'busy/c:1' })]));
    h.advance(2 * 60_000);
    h.fake.addImage('young/d:1', 3 * MB); // detected below, too young to remove

    // 85% used: 5 MB must go. a (never used) goes before b (used a minute after detection).
    h.fake.setImageFs({ usedBytes: 85 * MB, capacityBytes: 100 * MB });
    const r = await h.manager.imageGC.garbageCollect();
    expect(r.usagePercentBefore).toBe(85);
    expect(r.freedBytes).toBe(5 * MB);
    const kept = [
      'docker.io/busy/c:1',
      'docker.io/kubelet-harness/pause:1',
      'docker.io/old/b:1',
      'docker.io/young/d:1',
    ];
    expect(await tags()).toEqual(kept.sort());
    // At 95%, b goes too, but still nothing in use, pinned to the sandbox, or young.
    h.fake.setImageFs({ usedBytes: 95 * MB, capacityBytes: 100 * MB });
    await expect(h.manager.imageGC.garbageCollect()).rejects.toThrow(/only found 3000000 bytes eligible/);
    expect(await tags()).toEqual(kept.filter((t) => t !== 'docker.io/old/b:1'));
  });

  it('reports when it cannot free enough, after freeing what it could', async () => {
    h.fake.addImage('old/a:1', 1 * MB);
    await h.manager.imageGC.detectImages();
    h.advance(3 * 60_000);
    h.fake.setImageFs({ usedBytes: 95 * MB, capacityBytes: 100 * MB });
    const err = await h.manager.imageGC.garbageCollect().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ImageGCShortfallError);
    expect((err as Error).message).toMatch(
      /Attempted to free 15000000 bytes, but only found 1000000 bytes eligible to free/,
    );
    expect((err as ImageGCShortfallError).result.removed).toHaveLength(1);
  });
});
