// imageMaximumGCAge over the fake runtime with a manual clock: unused images go once they have not
// been used for maxAge, whatever the disk usage; images in use and the pause image stay.
import { afterEach, describe, expect, it } from 'vitest';
import type { ImageGCPolicy } from '../../src/container/runtime.js';
import { DefaultImageGCPolicy, validateImageGCPolicy } from '../../src/images/image_gc.js';
import { ctr, Harness, makePod } from './harness.js';

const MB = 1_000_000;
const MAX_AGE = 60_000;
const policy = (maxAgeMs: number): ImageGCPolicy => ({
  highThresholdPercent: 85,
  lowThresholdPercent: 80,
  minAgeMs: 1_000,
  maxAgeMs,
});

let h: Harness;
async function start(maxAgeMs: number): Promise<Harness> {
  h = await Harness.start({
    podSandboxImage: 'kubelet-harness/pause:1',
    imageFsCapacity: async () => Number(h.fake.imageFs.capacityBytes ?? 0),
    imageGCPolicy: policy(maxAgeMs),
  });
  h.fake.addImage('kubelet-harness/pause:1', 1 * MB);
  // Far below imageGCHighThresholdPercent: the threshold pass never acts in these tests.
  h.fake.setImageFs({ usedBytes: 0, capacityBytes: 100 * MB });
  return h;
}
afterEach(async () => {
  await h?.stop();
});

const tags = async () => (await h.manager.listImages()).flatMap((i) => i.repoTags).sort();
const idOf = async (tag: string) =>
  (await h.manager.listImages()).find((i) => i.repoTags.includes(tag))?.id ?? '';

/** Runs a pod on `image` now, so the GC manager sees it in use, then removes it again. */
async function useOnce(image: string): Promise<void> {
  const p = makePod(`user-${image.replace(/[^a-z0-9]/g, '-')}`, [ctr('app', { image })]);
  await h.sync(p);
  await h.manager.imageGC.detectImages();
  await h.manager.killPod(p, (await h.manager.getPods(false))[0]!);
  await h.manager.garbageCollect({ minAgeMs: 0, maxPerPodContainer: 0, maxContainers: 0 }, true, true);
}

describe('image GC with imageMaximumGCAge', () => {
  it('removes an image unused for longer than maxAge at 0% disk usage', async () => {
    await start(MAX_AGE);
    h.fake.addImage('old/a:1', 5 * MB);
    await h.manager.imageGC.detectImages();
    h.advance(MAX_AGE + 1_000);
    const id = await idOf('docker.io/old/a:1');
    const r = await h.manager.imageGC.garbageCollect();
    expect(r).toEqual({ freedBytes: 5 * MB, removed: [id], removedForAge: [id], usagePercentBefore: 0 });
    expect(await tags()).toEqual(['docker.io/kubelet-harness/pause:1']);
  });

  it('keeps an image last used less than maxAge ago while an older one goes', async () => {
    await start(MAX_AGE);
    h.fake.addImage('old/a:1', 5 * MB);
    h.fake.addImage('recent/b:1', 3 * MB);
    await h.manager.imageGC.detectImages();
    h.advance(30_000);
    await useOnce('recent/b:1'); // b last seen in use at +30 s
    h.advance(40_000); // +70 s: a never used, b unused for 40 s
    const a = await idOf('docker.io/old/a:1');
    const r = await h.manager.imageGC.garbageCollect();
    expect(r.removedForAge).toEqual([a]);
    expect(await tags()).toEqual(['docker.io/kubelet-harness/pause:1', 'docker.io/recent/b:1']);
    // Once b too has been unused for longer than maxAge, it goes.
    h.advance(21_000);
    await h.manager.imageGC.garbageCollect();
    expect(await tags()).toEqual(['docker.io/kubelet-harness/pause:1']);
  });

  it('never removes an image in use (nor the pause image), however old', async () => {
    await start(MAX_AGE);
    h.fake.addImage('old/a:1', 5 * MB);
    h.fake.addImage('busy/c:1', 3 * MB);
    await h.sync(makePod('user-c', [ctr('app', { image: 'busy/c:1' })]));
    await h.manager.imageGC.detectImages();
    h.advance(10 * MAX_AGE);
    const r = await h.manager.imageGC.garbageCollect();
    expect(r.removed).toHaveLength(1);
    expect(await tags()).toEqual(['docker.io/busy/c:1', 'docker.io/kubelet-harness/pause:1']);
    h.advance(10 * MAX_AGE);
    await h.manager.imageGC.garbageCollect();
    expect(await tags()).toEqual(['docker.io/busy/c:1', 'docker.io/kubelet-harness/pause:1']);
  });

  it('waits until the manager has run for maxAge: nothing goes early after a (re)start', async () => {
    await start(MAX_AGE);
    h.fake.addImage('old/a:1', 5 * MB);
    h.advance(10 * MAX_AGE);
    // As after an agent restart: a new manager knows nothing of the image's earlier use.
    h.manager = await h.newManager({
      podSandboxImage: 'kubelet-harness/pause:1',
      imageFsCapacity: async () => Number(h.fake.imageFs.capacityBytes ?? 0),
      imageGCPolicy: policy(MAX_AGE),
    });
    const r = await h.manager.imageGC.garbageCollect();
    expect(r.removed).toEqual([]);
    h.advance(MAX_AGE);
    expect((await h.manager.imageGC.garbageCollect()).removed).toEqual([]);
    h.advance(1);
    expect((await h.manager.imageGC.garbageCollect()).removed).toHaveLength(1);
    expect(await tags()).toEqual(['docker.io/kubelet-harness/pause:1']);
  });

  it('maxAge 0 removes nothing however long images sit unused; the same set-up with a maxAge does', async () => {
    await start(0);
    h.fake.addImage('old/a:1', 5 * MB);
    await h.manager.imageGC.detectImages();
    h.advance(24 * 3_600_000);
    expect(await h.manager.imageGC.garbageCollect()).toEqual({
      freedBytes: 0,
      removed: [],
      usagePercentBefore: 0,
    });
    expect(await tags()).toContain('docker.io/old/a:1');
    h.manager = await h.newManager({
      podSandboxImage: 'kubelet-harness/pause:1',
      imageFsCapacity: async () => Number(h.fake.imageFs.capacityBytes ?? 0),
      imageGCPolicy: policy(MAX_AGE),
    });
    h.advance(MAX_AGE + 1);
    expect((await h.manager.imageGC.garbageCollect()).removedForAge).toHaveLength(1);
    expect(await tags()).not.toContain('docker.io/old/a:1');
  });

  it('is off by default and must exceed imageMinimumGCAge when set', () => {
    expect(DefaultImageGCPolicy.maxAgeMs).toBe(0);
    expect(() => validateImageGCPolicy({ ...policy(MAX_AGE), maxAgeMs: -1 })).toThrow(/>= 0/);
    expect(() => validateImageGCPolicy({ ...policy(MAX_AGE), minAgeMs: MAX_AGE })).toThrow(
      /must be greater than imageMinimumGCAge/,
    );
    expect(() => validateImageGCPolicy(policy(MAX_AGE))).not.toThrow();
  });
});
