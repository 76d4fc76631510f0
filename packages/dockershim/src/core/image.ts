import { InvalidImageNameError, parseImageReference, registryHostOf } from '@kh/apimachinery';
import {
  type AuthConfig,
  type Image,
  type ImageStatusRequest,
  type ImageStatusResponse,
  InvalidArgumentError,
  type ListImagesRequest,
  type ListImagesResponse,
  NotFoundError,
  type PullImageRequest,
  type PullImageResponse,
  type RemoveImageRequest,
  type RemoveImageResponse,
  UnauthenticatedError,
  UnknownCriError,
} from '@kh/cri-api';
import type { ImageInspect, ImageSummary } from '../docker/client.js';
import { isDockerNotFound } from '../docker/errors.js';
import { jsonLines } from '../docker/stream.js';
import type { ShimContext } from './context.js';
import { imageUser, splitImageRef } from './convert.js';
import { docker, required, toCriError } from './errors.js';

const NONE_TAG = '<none>:<none>';
const NONE_DIGEST = '<none>@<none>';

/** The Engine's X-Registry-Auth body from a CRI AuthConfig ("auth" is base64 user:password). */
export function toDockerAuth(auth: AuthConfig, ref: string): Record<string, string> {
  let { username, password } = auth;
  if (!username && auth.auth) {
    const decoded = Buffer.from(auth.auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    username = colon >= 0 ? decoded.slice(0, colon) : decoded;
    password = colon >= 0 ? decoded.slice(colon + 1) : '';
  }
  const out: Record<string, string> = { serveraddress: auth.serverAddress || registryHostOf(ref) };
  if (username) out.username = username;
  if (password) out.password = password;
  if (auth.identityToken) out.identitytoken = auth.identityToken;
  if (auth.registryToken) out.registrytoken = auth.registryToken;
  return out;
}

/** Maps a pull failure the Engine reports inside its progress stream to a gRPC status. */
export function pullError(ref: string, message: string): Error {
  const text = `pull image ${JSON.stringify(ref)}: ${message}`;
  if (
    /unauthorized|authentication required|no basic auth credentials|incorrect username or password/i.test(
      message,
    )
  ) {
    return new UnauthenticatedError(text);
  }
  if (/not found|manifest unknown|does not exist/i.test(message)) return new NotFoundError(text);
  return new UnknownCriError(text);
}

export function imageFromInspect(info: ImageInspect, pinnedRef: string): Image {
  const { uid, username } = imageUser(info.Config?.User);
  const repoTags = (info.RepoTags ?? []).filter((t) => t !== NONE_TAG);
  return {
    id: info.Id,
    repoTags,
    repoDigests: (info.RepoDigests ?? []).filter((d) => d !== NONE_DIGEST),
    size: BigInt(info.Size),
    uid: uid === undefined ? undefined : { value: uid },
    username,
    spec: { image: info.Id, annotations: {}, userSpecifiedImage: '', runtimeHandler: '', imageRef: info.Id },
    pinned: repoTags.includes(pinnedRef),
  };
}

function imageFromListItem(item: ImageSummary, pinnedRef: string): Image {
  const repoTags = (item.RepoTags ?? []).filter((t) => t !== NONE_TAG);
  return {
    id: item.Id,
    repoTags,
    repoDigests: (item.RepoDigests ?? []).filter((d) => d !== NONE_DIGEST),
    size: BigInt(item.Size),
    uid: undefined,
    username: '',
    spec: { image: item.Id, annotations: {}, userSpecifiedImage: '', runtimeHandler: '', imageRef: item.Id },
    pinned: repoTags.includes(pinnedRef),
  };
}

/** Inspects an image by tag, digest reference or id; undefined when Docker does not have it. */
/**
 * An invalid name never reaches the Engine: in its URL path, "../x" or "/x" draws a redirect that
 * docker-modem follows to a host named by the path, spaces or control bytes fail as INTERNAL, and
 * a pull of "a:b:c" goes to Docker Hub.
 */
function checkReference(ref: string): void {
  try {
    parseImageReference(ref);
  } catch (err) {
    if (err instanceof InvalidImageNameError) throw new InvalidArgumentError(err.message);
    throw err;
  }
}

export async function inspectImage(ctx: ShimContext, ref: string): Promise<ImageInspect | undefined> {
  checkReference(ref);
  try {
    return await ctx.images.inspect(ref);
  } catch (err) {
    throw toCriError(err, `inspect image ${JSON.stringify(ref)}`);
  }
}

/** Pulls through the Engine and returns the image id. Errors arrive inside the progress stream. */
async function pull(ctx: ShimContext, ref: string, auth: AuthConfig | undefined): Promise<string> {
  checkReference(ref);
  const { repository, tag } = splitImageRef(ref);
  const stream = await docker(`pull image ${JSON.stringify(ref)}`, () =>
    ctx.docker.pullImage({ repository, tag, ...(auth ? { auth: toDockerAuth(auth, ref) } : {}) }),
  );
  try {
    for await (const { value } of jsonLines<{ error?: string; errorDetail?: { message?: string } }>(stream)) {
      if (value.error) throw pullError(ref, value.errorDetail?.message ?? value.error);
    }
  } finally {
    // `ref` may name another image now; Docker's event saying so can come after this returns.
    ctx.images.changed();
  }
  const info = await inspectImage(ctx, ref);
  if (!info) throw new NotFoundError(`pull image ${JSON.stringify(ref)}: not present after pull`);
  return info.Id;
}

/** Makes sure an image is present, pulling it (without credentials) only if missing. */
export async function ensureImage(ctx: ShimContext, ref: string): Promise<void> {
  if (await inspectImage(ctx, ref)) return;
  await pull(ctx, ref, undefined).catch((err: unknown) => {
    throw new NotFoundError(
      `image ${JSON.stringify(ref)} is not present and could not be pulled: ${err instanceof Error ? err.message : err}`,
    );
  });
}

export async function pullImage(
  ctx: ShimContext,
  req: PullImageRequest,
): Promise<Partial<PullImageResponse>> {
  const ref = required(req.image?.image, 'image.image');
  return { imageRef: await pull(ctx, ref, req.auth) };
}

/** ImageStatus: an absent image is an empty answer, not an error. */
export async function imageStatus(
  ctx: ShimContext,
  req: ImageStatusRequest,
): Promise<Partial<ImageStatusResponse>> {
  const ref = required(req.image?.image, 'image.image');
  const info = await inspectImage(ctx, ref);
  if (!info) return {};
  const extra: Record<string, string> = {};
  if (req.verbose) {
    extra.info = JSON.stringify({
      config: info.Config,
      architecture: info.Architecture,
      os: info.Os,
      created: info.Created,
    });
  }
  return { image: imageFromInspect(info, ctx.config.podInfraContainerImage), info: extra };
}

export async function listImages(
  ctx: ShimContext,
  req: ListImagesRequest,
): Promise<Partial<ListImagesResponse>> {
  const pinned = ctx.config.podInfraContainerImage;
  const wanted = req.filter?.image?.image;
  if (wanted) {
    const info = await inspectImage(ctx, wanted);
    return { images: info ? [imageFromInspect(info, pinned)] : [] };
  }
  const items = await docker('list images', () => ctx.docker.listImages());
  return { images: items.map((i) => imageFromListItem(i, pinned)) };
}

/**
 * RemoveImage: removes the image with all its tags, whichever tag, digest or id names it. Idempotent:
 * an absent image is not an error. An image a container still uses cannot go: FAILED_PRECONDITION.
 */
export async function removeImage(
  ctx: ShimContext,
  req: RemoveImageRequest,
): Promise<Partial<RemoveImageResponse>> {
  const ref = required(req.image?.image, 'image.image');
  const info = await inspectImage(ctx, ref);
  if (!info) return {};
  const what = `remove image ${JSON.stringify(ref)}`;
  const ignoreGone = (err: unknown) => (isDockerNotFound(err) ? undefined : Promise.reject(err));
  // Each removal changes what the image cache holds before Docker's event says so.
  const remove = (name: string) =>
    docker(what, () => ctx.docker.removeImage(name).catch(ignoreGone)).finally(() => ctx.images.changed());
  for (const tag of (info.RepoTags ?? []).filter((t) => t !== NONE_TAG)) await remove(tag);
  if (await inspectImage(ctx, info.Id)) await remove(info.Id);
  return {};
}
