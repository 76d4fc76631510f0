import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { MissingToolError, requireFile, requireTool, run } from '../util/process.js';
import { debianMirror } from './apt-sources.js';
import { type GoInputs, goSourceDigest, goSourceDir, goVendorSource } from './go.js';
import { type BusyboxRecipe, IMAGE_REPOSITORY_PREFIX, RECIPES, type Recipe } from './recipes.js';

/**
 * Bump when the way recipes are turned into images changes (build.ts), so every image is rebuilt
 * even though no recipe changed.
 */
export const BUILDER_VERSION = 1;

export const BUSYBOX_PATH = '/bin/busybox';

/**
 * What a recipe's static programs are made with: the compiler's version line and the C library
 * they link in (libc.a), so that a new gcc or glibc on the host builds a new image.
 */
export interface CompilerInputs {
  gcc: string;
  libcSha256: string;
  /** The static libraries the programs link besides libc (lib<name>.a), by name. */
  libsSha256?: Record<string, string>;
}

/** What a recipe's content depends on besides the recipe itself, resolved on this machine. */
export type RecipeInputs =
  | { kind: 'busybox'; busyboxSha256: string; compiler?: CompilerInputs; go?: GoInputs }
  | { kind: 'debootstrap'; mirror: string };

export async function resolveInputs(recipe: Recipe): Promise<RecipeInputs> {
  if (recipe.kind === 'busybox') {
    const busyboxSha256 = await sha256File(await requireFile(BUSYBOX_PATH, 'busybox-static'));
    // Only recipes with programs depend on a compiler: the others keep their hashes without one.
    return {
      kind: 'busybox',
      busyboxSha256,
      ...(Object.keys(recipe.programs ?? {}).length > 0 ? { compiler: await compilerInputs(recipe) } : {}),
      ...(Object.keys(recipe.goPrograms ?? {}).length > 0 ? { go: await goInputs(recipe) } : {}),
    };
  }
  return { kind: 'debootstrap', mirror: await debianMirror(recipe.suite) };
}

async function compilerInputs(recipe: BusyboxRecipe): Promise<CompilerInputs> {
  const gcc = await requireTool('gcc', 'gcc');
  const version = (await run(gcc, ['--version'])).stdout.split('\n')[0]?.trim() ?? '';
  // gcc prints the bare name back when it finds no such file in its search path.
  const archive = async (name: string, pkg: string) => {
    const path = (await run(gcc, [`-print-file-name=lib${name}.a`])).stdout.trim();
    if (!path.startsWith('/')) throw new MissingToolError(`lib${name}.a`, pkg);
    return sha256File(await requireFile(path, pkg));
  };
  const libs = Object.assign({}, ...Object.values(recipe.programs ?? {}).map((p) => p.libs ?? {})) as Record<
    string,
    string
  >;
  const libsSha256: Record<string, string> = {};
  for (const [name, pkg] of Object.entries(libs)) libsSha256[name] = await archive(name, pkg);
  return {
    gcc: version,
    libcSha256: await archive('c', 'libc6-dev'),
    ...(Object.keys(libs).length > 0 ? { libsSha256 } : {}),
  };
}

/**
 * What a recipe's Go programs are made with: the go-trixie image by its content reference (so it
 * need not exist to name the recipe's tag), the vendored tarball and each program's source.
 */
async function goInputs(recipe: BusyboxRecipe): Promise<GoInputs> {
  const toolchain = RECIPES['go-trixie'];
  const sources: Record<string, string> = {};
  for (const { dir } of Object.values(recipe.goPrograms ?? {}))
    sources[dir] = await goSourceDigest(goSourceDir(dir));
  return {
    toolchain: imageRef(toolchain, recipeHash(toolchain, await resolveInputs(toolchain))),
    vendorSha256: await goVendorSha256(),
    sources,
  };
}

/** sha256 of the tarball whose vendored modules Go programs build against (go.ts). */
export async function goVendorSha256(): Promise<string> {
  const vendor = goVendorSource();
  return sha256File(vendor).catch(() => {
    throw new Error(
      `${vendor} is missing: Go programs build against its vendored modules (set KH_GO_VENDOR_SRC to a cri-tools v1.33.0 source tarball)`,
    );
  });
}

/** A 12-hex-digit content hash of the recipe, its inputs and the builder version. */
export function recipeHash(recipe: Recipe, inputs: RecipeInputs): string {
  const material = canonicalJson({ builder: BUILDER_VERSION, recipe, inputs });
  return createHash('sha256').update(material).digest('hex').slice(0, 12);
}

export function imageRef(recipe: Recipe, hash: string): string {
  return `${IMAGE_REPOSITORY_PREFIX}/${recipe.name}:${hash}`;
}

/** JSON with object keys sorted at every level, so equal data always hashes the same. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

export function sha256File(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    createReadStream(path)
      .on('error', reject)
      .on('data', (chunk) => hash.update(chunk))
      .on('end', () => resolve(hash.digest('hex')));
  });
}
