import { expectEqual, expectFailure, expectTrue } from '../framework/assert.js';
import { type CaseContext, defineGroup, Skip } from '../framework/framework.js';

function registry(ctx: CaseContext) {
  const r = ctx.options.registry;
  if (!r) throw new Skip('no registry configured (--registry)');
  const ref = `${r.address}/${r.image}`;
  const repo = ref.replace(/:[^/:]+$/, '');
  const auth = r.auth && { ...r.auth, serverAddress: `http://${r.address}` };
  return { ref, repo, auth, hasAuth: r.auth !== undefined };
}

async function expectAbsent(ctx: CaseContext, ref: string, what: string): Promise<void> {
  expectEqual((await ctx.client.imageStatus({ image: { image: ref } })).image, undefined, what);
}

export const image = defineGroup('image', {
  'ImageStatus describes a present image, by tag and by id': async (ctx) => {
    const { image } = await ctx.client.imageStatus({ image: { image: ctx.options.images.busybox } });
    expectTrue(image, `ImageStatus(${ctx.options.images.busybox}) returned no image`);
    expectTrue(image.id, 'image id is empty');
    expectTrue(image.size > 0n, 'image size is 0');
    const byId = await ctx.client.imageStatus({ image: { image: image.id } });
    expectEqual(byId.image?.id, image.id, 'ImageStatus by image id');
    expectTrue(image.repoTags.length > 0, 'a tagged image has no repo tags');
  },

  'ImageStatus of an absent image is empty, not an error': async (ctx) => {
    await expectAbsent(ctx, `kh-conformance/absent-${ctx.uid}:none`, 'ImageStatus of an absent image');
  },

  'ListImages includes the test image': async (ctx) => {
    const { image } = await ctx.client.imageStatus({ image: { image: ctx.options.images.busybox } });
    const list = await ctx.client.listImages({});
    expectTrue(
      list.images.some((i) => i.id === image?.id),
      'busybox image missing from ListImages',
    );
  },

  'ImageFsInfo reports the image filesystem': async (ctx) => {
    const info = await ctx.client.imageFsInfo({});
    const fs = info.imageFilesystems[0];
    expectTrue(fs?.fsId?.mountpoint, 'image filesystem has no mountpoint');
    expectTrue((fs?.usedBytes?.value ?? 0n) > 0n, 'image filesystem used bytes is 0');
  },

  'PullImage by tag, then status, list and remove': async (ctx) => {
    const { ref, auth } = registry(ctx);
    const { imageRef } = await ctx.client.pullImage({ image: { image: ref }, auth });
    expectTrue(imageRef, 'PullImage returned no image_ref');
    const { image } = await ctx.client.imageStatus({ image: { image: ref } });
    expectTrue(
      image?.repoTags.some((t) => t.endsWith(ctx.options.registry?.image ?? '')),
      `repo tags ${image?.repoTags}`,
    );
    const list = await ctx.client.listImages({});
    expectTrue(
      list.images.some((i) => i.id === image?.id),
      'pulled image missing from ListImages',
    );
    await ctx.client.removeImage({ image: { image: ref } });
    await expectAbsent(ctx, ref, 'ImageStatus after RemoveImage');
  },

  'PullImage by digest, then remove by digest': async (ctx) => {
    const { ref, repo, auth } = registry(ctx);
    await ctx.client.pullImage({ image: { image: ref }, auth });
    const { image } = await ctx.client.imageStatus({ image: { image: ref } });
    const digest = image?.repoDigests.find((d) => d.includes('@sha256:'))?.split('@')[1];
    expectTrue(digest, `no repo digest after a registry pull: ${image?.repoDigests}`);
    await ctx.client.removeImage({ image: { image: ref } });
    const byDigest = `${repo}@${digest}`;
    await ctx.client.pullImage({ image: { image: byDigest }, auth });
    const pulled = await ctx.client.imageStatus({ image: { image: byDigest } });
    expectTrue(
      pulled.image?.repoDigests.some((d) => d.endsWith(digest)),
      'digest pull not visible in ImageStatus',
    );
    await ctx.client.removeImage({ image: { image: byDigest } });
    await expectAbsent(ctx, byDigest, 'ImageStatus after RemoveImage by digest');
  },

  'PullImage needs the registry credentials when the registry asks for them': async (ctx) => {
    const { ref, auth, hasAuth } = registry(ctx);
    if (!hasAuth) throw new Skip('the registry has no basic auth configured');
    await expectFailure(ctx.client.pullImage({ image: { image: ref } }), 'pull without credentials');
    await expectFailure(
      ctx.client.pullImage({ image: { image: ref }, auth: { ...auth, password: 'wrong-password' } }),
      'pull with a wrong password',
    );
    await ctx.client.pullImage({ image: { image: ref }, auth });
    await ctx.client.removeImage({ image: { image: ref } });
  },

  'PullImage of a missing tag is NOT_FOUND': async (ctx) => {
    const { repo, auth } = registry(ctx);
    await expectFailure(
      ctx.client.pullImage({ image: { image: `${repo}:missing-${ctx.uid}` }, auth }),
      'pull of a tag the registry does not have',
      'NOT_FOUND',
    );
  },
});
