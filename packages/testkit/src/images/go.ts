import { createHash } from 'node:crypto';
import { access, mkdir, readdir, readFile, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheRoot } from '../util/cache-dir.js';
import { requireTool, run } from '../util/process.js';
import { formatSeconds, type Progress } from '../util/progress.js';

/**
 * Go programs of the images are built offline against the modules a cri-tools release vendors
 * (v1.33 carries google.golang.org/grpc with grpc_health_v1): no module proxy can be reached here.
 * The tarball is the one scripts/cri-tools.sh builds critest v1.33 from.
 */
export const GO_VENDOR_RELEASE = 'cri-tools-1.33.0';

/** The Go programs' sources: one main package per directory of packages/testkit/images. */
const SOURCES_DIR = fileURLToPath(new URL('../../images/', import.meta.url));

/** The vendored source tarball: KH_GO_VENDOR_SRC, else the steering repo's shared/tools beside this clone. */
export function goVendorSource(): string {
  return (
    process.env.KH_GO_VENDOR_SRC ||
    resolve(
      fileURLToPath(new URL('../../../../', import.meta.url)),
      `../shared/tools/${GO_VENDOR_RELEASE}.tar.gz`,
    )
  );
}

/** What a recipe's Go programs are made from, besides their directory names (the recipe's). */
export interface GoInputs {
  /** The go-trixie image's content-hashed reference: the toolchain. */
  toolchain: string;
  /** sha256 of the vendored source tarball. */
  vendorSha256: string;
  /** sha256 of each program directory's files, by directory. */
  sources: Record<string, string>;
}

/** The directory of the images' Go program <dir>. */
export function goSourceDir(dir: string): string {
  return join(SOURCES_DIR, dir);
}

/** sha256 over a program directory's files, names and contents, in name order. */
export async function goSourceDigest(root: string): Promise<string> {
  const names = (await readdir(root)).sort();
  if (!names.some((n) => n.endsWith('.go'))) throw new Error(`${root} holds no Go source`);
  const hash = createHash('sha256');
  for (const name of names)
    hash
      .update(`${name}\0`)
      .update(await readFile(join(root, name)))
      .update('\0');
  return hash.digest('hex');
}

/** The static binary of the Go program in images/<dir>, built (or found cached) by buildGoProgram. */
export function goProgram(dir: string, inputs: GoInputs, progress: Progress): Promise<string> {
  const source = inputs.sources[dir];
  if (!source) throw new Error(`no source digest for Go program ${dir}`);
  return buildGoProgram(dir, goSourceDir(dir), { ...inputs, source }, progress);
}

/**
 * The static binary `dir` of the Go program in `root`, built once per content: the toolchain, the
 * vendored tarball and the source decide the cache entry, like scripts/cri-tools.sh's key. The
 * build runs in the go-trixie image with no network, the program copied into the extracted
 * cri-tools tree so that its vendor directory resolves the imports.
 */
export async function buildGoProgram(
  dir: string,
  root: string,
  inputs: { toolchain: string; vendorSha256: string; source: string },
  progress: Progress,
): Promise<string> {
  const { source } = inputs;
  const key = createHash('sha256')
    .update(JSON.stringify([inputs.toolchain, inputs.vendorSha256, source]))
    .digest('hex')
    .slice(0, 12);
  const cacheDir = join(cacheRoot(), 'go-programs', `${dir}-${key}`);
  const binary = join(cacheDir, dir);
  if (
    await access(binary).then(
      () => true,
      () => false,
    )
  ) {
    progress(`go ${dir}: ${binary} (cached)`);
    return binary;
  }
  const docker = await requireTool('docker', 'docker.io');
  await mkdir(cacheDir, { recursive: true });
  await rm(`${binary}.new`, { force: true });
  progress(`go ${dir}: building offline in ${inputs.toolchain} (1-3 min on 2 cores)`);
  const started = performance.now();
  const build = `mkdir /build && tar -C /build -xzf /vendor.tar.gz
cd /build/cri-tools-*
mkdir cmd/kh-${dir} && cp /program/*.go cmd/kh-${dir}/
go build -ldflags=-s -o /out/${dir}.new ./cmd/kh-${dir}`;
  await run(docker, [
    'run',
    '--rm',
    '--network',
    'none',
    '-v',
    `${goVendorSource()}:/vendor.tar.gz:ro`,
    '-v',
    `${root}:/program:ro`,
    '-v',
    `${cacheDir}:/out`,
    '-e',
    'GOFLAGS=-mod=vendor -trimpath',
    '-e',
    'GOPROXY=off',
    '-e',
    'GOTOOLCHAIN=local',
    '-e',
    'CGO_ENABLED=0',
    inputs.toolchain,
    'bash',
    '-ec',
    build,
  ]);
  await rename(`${binary}.new`, binary);
  progress(`go ${dir}: built ${binary} in ${formatSeconds(performance.now() - started)}`);
  return binary;
}
