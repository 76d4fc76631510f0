import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { docker, explainEngineError, isNotFound } from '../util/docker.js';
import { withFileLock } from '../util/lock.js';
import { formatSeconds, type Progress, silent } from '../util/progress.js';
import { buildImage, RECIPE_LABEL } from './build.js';
import { imageRef, recipeHash, resolveInputs } from './hash.js';
import { DEFAULT_IMAGES, IMAGE_NAMES, type ImageName, RECIPES } from './recipes.js';

export type ImageRefs<N extends ImageName = ImageName> = { [K in N]: string };

export interface EnsureImagesOptions {
  progress?: Progress;
  /** Rebuild even when an image with the recipe's hash exists (e.g. to pick up a Debian point release). */
  force?: boolean;
}

/** The content-addressed reference a recipe builds to on this machine, without building it. */
export async function imageRefFor(name: ImageName): Promise<string> {
  const recipe = RECIPES[name];
  return imageRef(recipe, recipeHash(recipe, await resolveInputs(recipe)));
}

async function imageExists(ref: string): Promise<boolean> {
  try {
    await docker().getImage(ref).inspect();
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw explainEngineError(err);
  }
}

/**
 * Makes sure the host engine has an image for each named recipe, building only those whose
 * content hash has no image yet, and returns their references.
 */
export async function ensureImages<const N extends ImageName>(
  names: readonly N[] = DEFAULT_IMAGES as readonly N[],
  options: EnsureImagesOptions = {},
): Promise<ImageRefs<N>> {
  const progress = options.progress ?? silent;
  const refs = {} as ImageRefs<N>;
  for (const name of [...new Set(names)]) {
    const recipe = RECIPES[name];
    if (!recipe) throw new Error(`Unknown image "${name}". Known images: ${IMAGE_NAMES.join(', ')}`);
    const inputs = await resolveInputs(recipe);
    const hash = recipeHash(recipe, inputs);
    const ref = imageRef(recipe, hash);
    refs[name] = ref;
    if (!options.force && (await imageExists(ref))) {
      progress(`${name}: ${ref} (cached)`);
      continue;
    }
    // By recipe name: `node` and the default release's `node-<release>` are one image.
    const lock = join(tmpdir(), `kh-image-${recipe.name}-${hash}.lock`);
    await withFileLock(
      lock,
      async () => {
        // Another process may have built it while we waited for the lock.
        if (!options.force && (await imageExists(ref))) {
          progress(`${name}: ${ref} (built by another process)`);
          return;
        }
        // Go programs build in the go-trixie image (go.ts), which the tag names but does not make.
        if (recipe.kind === 'busybox' && recipe.goPrograms) await ensureImages(['go-trixie'], { progress });
        const started = performance.now();
        progress(`${name}: building ${ref}`);
        await buildImage(recipe, inputs, ref, hash, progress);
        progress(`${name}: built ${ref} in ${formatSeconds(performance.now() - started)}`);
        await removeOutdated(recipe.name, ref, progress);
      },
      (pid) => progress(`${name}: waiting for process ${pid}, which is building ${ref}`),
    );
  }
  return refs;
}

/**
 * Removes the other images of a recipe: earlier versions, and the one a forced rebuild
 * replaced. An image still used by a container stays.
 */
async function removeOutdated(name: ImageName, current: string, progress: Progress): Promise<void> {
  const currentId = (await docker().getImage(current).inspect()).Id;
  const images = await docker().listImages({ filters: { label: [`${RECIPE_LABEL}=${name}`] } });
  for (const image of images) {
    if (image.Id === currentId) continue;
    try {
      await docker().getImage(image.Id).remove();
      progress(`${name}: removed outdated image ${image.RepoTags?.join(', ') || image.Id}`);
    } catch {
      // still in use or already gone: keep it
    }
  }
}
