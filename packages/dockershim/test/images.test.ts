import { InvalidArgumentError, NotFoundError } from '@kh/cri-api';
import { describe, expect, it } from 'vitest';
import { fakeShim } from './harness.js';

// The ImageService on the fake Engine: status, listing, removal of every tag, pulls and their errors.
const { fake, h } = fakeShim();

describe('images', () => {
  it('reports status, lists with a filter, and removes every tag idempotently', async () => {
    const tag = 'kh-test/img:one';
    const other = 'kh-test/img:two';
    const id = fake.addImage([tag, other], { Config: { User: '0' } });
    const { image } = await h.client.imageStatus({ image: { image: tag } });
    expect(image?.id).toBe(id);
    expect(image?.repoTags.sort()).toEqual([tag, other].sort());
    expect(image?.uid?.value).toBe(0n);
    expect(image?.size).toBeGreaterThan(0n);
    const listed = await h.client.listImages({ filter: { image: { image: other } } });
    expect(listed.images.map((i) => i.id)).toEqual([id]);
    expect(
      (await h.client.listImages({})).images.find((i) => i.repoTags.includes(h.images.pause))?.pinned,
    ).toBe(true);

    // Removing by one tag removes the image with all its tags; again is fine.
    await h.client.removeImage({ image: { image: tag } });
    await h.client.removeImage({ image: { image: tag } });
    expect((await h.client.imageStatus({ image: { image: other } })).image).toBeUndefined();
    expect((await h.client.imageStatus({ image: { image: id } })).image).toBeUndefined();
  });

  it("answers from the shim's own pulls and removals before Docker's image events arrive", async () => {
    const ref = 'registry.kh.test/moving:1';
    fake.registry.set(ref, { Id: 'sha256:moving1', RepoTags: [ref], Size: 10 });
    fake.holdEvents((filters) => filters.type?.includes('image') ?? false);
    try {
      expect((await h.client.imageStatus({ image: { image: ref } })).image).toBeUndefined();
      await h.client.pullImage({ image: { image: ref } });
      expect((await h.client.imageStatus({ image: { image: ref } })).image?.id).toBe('sha256:moving1');
      await h.client.removeImage({ image: { image: ref } });
      expect((await h.client.imageStatus({ image: { image: ref } })).image).toBeUndefined();
    } finally {
      fake.releaseEvents();
    }
  });

  it('pulls through the Engine and answers the image id', async () => {
    const ref = 'registry.kh.test/app:1';
    fake.registry.set(ref, { Id: 'sha256:app1', RepoTags: [ref], Size: 10 });
    const { imageRef } = await h.client.pullImage({ image: { image: ref } });
    expect(imageRef).toBe('sha256:app1');
  });

  it("maps the Engine's pull errors, and refuses invalid names before asking it", async () => {
    await expect(h.client.pullImage({ image: { image: 'registry.kh.test/missing:1' } })).rejects.toSatisfy(
      (err: unknown) =>
        err instanceof NotFoundError && /pull image "registry.kh.test\/missing:1"/.test(err.message),
    );
    const calls = fake.calls.length;
    await expect(h.client.pullImage({ image: { image: 'a:b:c' } })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
    await expect(h.client.imageStatus({ image: { image: '../x' } })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
    expect(fake.calls.slice(calls)).toEqual([]);
  });

  it("reports the image filesystem from the Engine's data root", async () => {
    const { imageFilesystems } = await h.client.imageFsInfo({});
    expect(imageFilesystems[0]?.fsId?.mountpoint).toBe(fake.rootDir);
    expect(imageFilesystems[0]?.usedBytes?.value).toBeGreaterThan(0n);
  });
});
