// --image-service-endpoint: image calls go to their own CRI client, runtime calls stay on the
// runtime's. Two fakes stand in for the two endpoints.
import { CriClient, FakeRuntime } from '@kh/cri-api';
import { afterEach, describe, expect, it } from 'vitest';
import { ctr, Harness, makePod } from './harness.js';

let h: Harness;
let imageService: FakeRuntime;
let imageCri: CriClient;
afterEach(async () => {
  imageCri.close();
  await imageService.stop();
  await h.stop();
});

const IMAGE_CALLS = ['PullImage', 'ImageStatus', 'ListImages', 'RemoveImage', 'ImageFsInfo'];

describe('a separate image service endpoint', () => {
  it('sends pulls, image status, lists, removals and ImageFsInfo to the image client only', async () => {
    imageService = await FakeRuntime.start();
    imageCri = await CriClient.connect(imageService.endpoint, { timeoutMs: 10_000 });
    h = await Harness.start({ imageCri, imageFsCapacity: async () => 1_000_000 });
    imageService.script.registryImage('registry:5000/app:v1', 100);
    // The runtime fake must hold the image to create the container, as a runtime sharing the
    // image store with its image service would.
    h.fake.addImage('registry:5000/app:v1', 100);
    const runtimeMark = h.fake.calls.length;

    const pod = makePod('split', [ctr('app', { image: 'registry:5000/app:v1' })]);
    const result = await h.sync(pod);
    expect(result.steps.find((s) => s.target === 'app')?.error).toBeUndefined();
    expect(imageService.calls).toContain('PullImage');
    expect((await h.manager.listImages()).flatMap((i) => i.repoTags)).toEqual(['registry:5000/app:v1']);
    imageService.addImage('local/unused:1', 10);
    await h.manager.removeImage('local/unused:1');
    expect((await h.manager.listImages()).flatMap((i) => i.repoTags)).not.toContain('local/unused:1');
    // Image GC reads usage from ImageFsInfo and in-use images from the runtime's containers.
    await h.manager.imageGC.garbageCollect();

    const runtimeCalls = h.callsSince(runtimeMark);
    expect(runtimeCalls.filter((c) => IMAGE_CALLS.includes(c))).toEqual([]);
    expect(runtimeCalls).toContain('CreateContainer');
    expect(imageService.calls.filter((c) => !IMAGE_CALLS.includes(c))).toEqual([]);
    expect(imageService.calls).toEqual(
      expect.arrayContaining(['ImageStatus', 'ListImages', 'RemoveImage', 'ImageFsInfo']),
    );
    expect(runtimeCalls).toContain('ListContainers');
  });
});
