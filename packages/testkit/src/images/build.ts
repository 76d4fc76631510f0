import { spawn } from 'node:child_process';
import {
  chmod,
  copyFile,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { docker, followProgress } from '../util/docker.js';
import { requireTool, run } from '../util/process.js';
import { type Progress, timed } from '../util/progress.js';
import { goProgram } from './go.js';
import type { RecipeInputs } from './hash.js';
import { BUSYBOX_PATH } from './hash.js';
import {
  BUSYBOX_GROUP,
  BUSYBOX_PASSWD,
  type BusyboxRecipe,
  type DebootstrapRecipe,
  type ImageConfig,
  type Recipe,
} from './recipes.js';

export const RECIPE_LABEL = 'kh.recipe';
export const RECIPE_HASH_LABEL = 'kh.recipe.hash';
/** A debootstrap image's Debian release, as a label. */
export const RELEASE_LABEL = 'kh.debian.release';
/** Prefix of the labels that record a debootstrap image's package versions (`kh.pkg.containerd`). */
export const PACKAGE_LABEL_PREFIX = 'kh.pkg.';
/** The same record inside the image, for whoever only sees the node's filesystem. */
export const PACKAGES_FILE = '/etc/kh-node-packages';

/** Builds `recipe` into the host engine as `ref`, in a temporary directory that is always removed. */
export async function buildImage(
  recipe: Recipe,
  inputs: RecipeInputs,
  ref: string,
  hash: string,
  progress: Progress,
): Promise<void> {
  await requireTool('tar', 'tar');
  const prefix = `kh-image-${recipe.name}-${hash}-`;
  await removeStaleBuildDirs(prefix);
  const root = await mkdtemp(join(tmpdir(), prefix));
  try {
    let labels: Record<string, string> = {};
    if (recipe.kind === 'busybox') {
      await timed(progress, `${recipe.name}: assemble busybox rootfs`, () => busyboxRootfs(recipe, root));
      await addGoPrograms(recipe, inputs, root, progress);
    } else if (inputs.kind === 'debootstrap')
      labels = await debootstrapRootfs(recipe, inputs.mirror, root, progress);
    await timed(progress, `${recipe.name}: import as ${ref}`, () =>
      importRootfs(
        root,
        ref,
        changes(recipe.config, { ...labels, ...recipeLabels(recipe, hash) }),
        // A busybox image's files all belong to root, whoever builds it (a setuid program must).
        recipe.kind === 'busybox',
      ),
    );
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

/**
 * Removes build directories an interrupted build of the same recipe version left behind (a
 * killed process never reaches its finally), unmounting what debootstrap had mounted in them.
 * Only called under that recipe version's build lock, so no live build owns them.
 */
export async function removeStaleBuildDirs(prefix: string): Promise<void> {
  const stale = (await readdir(tmpdir())).filter((n) => n.startsWith(prefix)).map((n) => join(tmpdir(), n));
  if (stale.length === 0) return;
  const mounts = (await readFile('/proc/self/mounts', 'utf8').catch(() => ''))
    .split('\n')
    .map((line) => line.split(' ')[1] ?? '')
    .filter((point) => stale.some((dir) => point.startsWith(`${dir}/`)))
    .sort((a, b) => b.length - a.length);
  for (const point of mounts) await run('umount', ['-l', point]).catch(() => {});
  for (const dir of stale) await rm(dir, { recursive: true, force: true });
}

async function busyboxRootfs(recipe: BusyboxRecipe, root: string): Promise<void> {
  const { stdout } = await run(BUSYBOX_PATH, ['--list']);
  const applets = stdout.split('\n').filter((a) => a && a !== 'busybox');
  await mkdir(join(root, 'bin'), { recursive: true });
  for (const dir of ['etc', 'root', 'proc', 'sys', 'dev', 'var', 'tmp']) await mkdir(join(root, dir));
  await chmod(join(root, 'tmp'), 0o1777);
  await copyFile(BUSYBOX_PATH, join(root, 'bin/busybox'));
  await chmod(join(root, 'bin/busybox'), 0o755);
  for (const applet of applets) await symlink('busybox', join(root, 'bin', applet));
  await writeFile(join(root, 'etc/passwd'), BUSYBOX_PASSWD);
  await writeFile(join(root, 'etc/group'), BUSYBOX_GROUP);
  for (const [path, file] of Object.entries(recipe.files)) {
    const target = join(root, path);
    await mkdir(dirname(target), { recursive: true });
    await rm(target, { force: true }); // a recipe file may replace an applet link of the same name
    await writeFile(target, file.content, { mode: file.mode });
    await chmod(target, file.mode);
  }
  await compilePrograms(recipe, root);
}

/** Compiles the recipe's C programs into the root filesystem, static and stripped. */
async function compilePrograms(recipe: BusyboxRecipe, root: string): Promise<void> {
  const programs = Object.entries(recipe.programs ?? {});
  if (programs.length === 0) return;
  const gcc = await requireTool('gcc', 'gcc');
  for (const [path, program] of programs) {
    const target = join(root, path);
    await mkdir(dirname(target), { recursive: true });
    await rm(target, { force: true });
    const source = `${target}.c`;
    await writeFile(source, program.source);
    try {
      await run(gcc, [
        '-static',
        '-Os',
        '-s',
        '-o',
        target,
        source,
        ...Object.keys(program.libs ?? {}).map((l) => `-l${l}`),
      ]);
    } finally {
      await rm(source, { force: true });
    }
    // After the build: gcc writes 0755, and chmod is what sets the setuid bit.
    await chmod(target, program.mode);
  }
}

/** Copies the recipe's Go programs, each built (or found in its cache) by go.ts, into the root filesystem. */
async function addGoPrograms(
  recipe: BusyboxRecipe,
  inputs: RecipeInputs,
  root: string,
  progress: Progress,
): Promise<void> {
  for (const [path, program] of Object.entries(recipe.goPrograms ?? {})) {
    if (inputs.kind !== 'busybox' || !inputs.go) throw new Error(`${recipe.name}: no Go inputs for ${path}`);
    const target = join(root, path);
    await mkdir(dirname(target), { recursive: true });
    await rm(target, { force: true });
    await copyFile(await goProgram(program.dir, inputs.go, progress), target);
    await chmod(target, program.mode);
  }
}

/** debootstrap's per-package lines ("I: Retrieving libc6 2.36-9", "I: Extracting bash...") would flood the output. */
const PER_PACKAGE_LINE = /^I: (Retrieving|Validating|Extracting|Unpacking|Configuring) \S+( \S+|\.\.\.)$/;

/** Builds the root filesystem; returns the labels that record its release and package versions. */
async function debootstrapRootfs(
  recipe: DebootstrapRecipe,
  mirror: string,
  root: string,
  progress: Progress,
): Promise<Record<string, string>> {
  const debootstrap = await requireTool('debootstrap', 'debootstrap');
  const args = [
    `--variant=${recipe.variant}`,
    `--include=${recipe.packages.join(',')}`,
    recipe.suite,
    root,
    mirror,
    ...(recipe.script ? [recipe.script] : []),
  ];
  await timed(progress, `${recipe.name}: debootstrap ${recipe.suite} from ${mirror}`, () =>
    run(debootstrap, args, {
      onLine: (line) => {
        if (line.startsWith('I: ') && !PER_PACKAGE_LINE.test(line))
          progress(`${recipe.name}:   ${line.slice(3)}`);
      },
    }),
  );
  await aptInstall(recipe, root, progress);
  await makeLinks(root, recipe.links ?? {});
  // Downloaded .debs and apt lists are half the size and never used inside a node.
  await rm(join(root, 'var/cache/apt/archives'), { recursive: true, force: true });
  await rm(join(root, 'var/lib/apt/lists'), { recursive: true, force: true });
  await mkdir(join(root, 'var/cache/apt/archives/partial'), { recursive: true });
  await mkdir(join(root, 'var/lib/apt/lists/partial'), { recursive: true });
  // A testing release changes under us while the recipe hash stays: record what this build got.
  const versions = await installedVersions(root, recipe.recordVersions);
  await writeFile(
    join(root, PACKAGES_FILE.slice(1)),
    Object.entries(versions)
      .map(([pkg, version]) => `${pkg} ${version}\n`)
      .join(''),
  );
  progress(
    `${recipe.name}: ${Object.entries(versions)
      .map(([pkg, version]) => `${pkg} ${version}`)
      .join(', ')}`,
  );
  return {
    [RELEASE_LABEL]: recipe.suite,
    ...Object.fromEntries(Object.entries(versions).map(([pkg, v]) => [`${PACKAGE_LABEL_PREFIX}${pkg}`, v])),
  };
}

/**
 * policy-rc.d's "action forbidden": packages' maintainer scripts start no daemon in the chroot
 * (there is no init to run them, and a started one would keep the build directory busy).
 */
const NO_DAEMONS = '#!/bin/sh\nexit 101\n';

/** The recipe's aptPackages, installed by the root filesystem's own apt from debootstrap's mirror. */
async function aptInstall(recipe: DebootstrapRecipe, root: string, progress: Progress): Promise<void> {
  const packages = recipe.aptPackages ?? [];
  if (packages.length === 0) return;
  const chroot = await requireTool('chroot', 'coreutils');
  const policy = join(root, 'usr/sbin/policy-rc.d');
  await writeFile(policy, NO_DAEMONS, { mode: 0o755 });
  const env = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', DEBIAN_FRONTEND: 'noninteractive', LC_ALL: 'C' };
  // A testing release's Release file expires within weeks; debootstrap, which installed the rest
  // from the same archive, does not look at Valid-Until either.
  const apt = ['apt-get', '-q', '-o', 'Acquire::Check-Valid-Until=false'];
  try {
    await timed(progress, `${recipe.name}: apt-get install ${packages.join(' ')}`, async () => {
      await run(chroot, [root, ...apt, 'update'], { env });
      await run(chroot, [root, ...apt, 'install', '-y', '--no-install-recommends', ...packages], { env });
    });
  } finally {
    await rm(policy, { force: true });
  }
}

/** Makes each link (path in the image to an absolute target); refuses one whose target is missing. */
export async function makeLinks(root: string, links: Record<string, string>): Promise<void> {
  for (const [path, target] of Object.entries(links)) {
    if (!target.startsWith('/')) throw new Error(`link ${path}: its target ${target} must be absolute`);
    try {
      await stat(join(root, target));
    } catch {
      throw new Error(`link ${path}: its target ${target} is not in the image`);
    }
    const at = join(root, path);
    await mkdir(dirname(at), { recursive: true });
    await rm(at, { recursive: true, force: true });
    await symlink(target, at);
  }
}

/** The versions dpkg installed in `root`, read from its status file (no chroot needed). */
export async function installedVersions(
  root: string,
  packages: readonly string[],
): Promise<Record<string, string>> {
  const status = await readFile(join(root, 'var/lib/dpkg/status'), 'utf8');
  const found = parseDpkgStatus(status);
  const missing = packages.filter((p) => !found.has(p));
  if (missing.length > 0) throw new Error(`debootstrap did not install ${missing.join(', ')}`);
  return Object.fromEntries(packages.map((p) => [p, found.get(p)!]));
}

/** Installed packages and their versions from a dpkg status file (stanzas of `Field: value`). */
export function parseDpkgStatus(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const stanza of text.split(/\n\s*\n/)) {
    const field = (name: string) => new RegExp(`^${name}: (.*)$`, 'm').exec(stanza)?.[1]?.trim();
    const pkg = field('Package');
    const version = field('Version');
    if (pkg && version && field('Status')?.endsWith(' installed')) out.set(pkg, version);
  }
  return out;
}

function recipeLabels(recipe: Recipe, hash: string): Record<string, string> {
  return { [RECIPE_LABEL]: recipe.name, [RECIPE_HASH_LABEL]: hash };
}

function changes(config: ImageConfig, labels: Record<string, string>): string[] {
  const out: string[] = [];
  if (config.entrypoint) out.push(`ENTRYPOINT ${JSON.stringify(config.entrypoint)}`);
  if (config.cmd) out.push(`CMD ${JSON.stringify(config.cmd)}`);
  for (const env of config.env ?? ['PATH=/bin']) out.push(`ENV ${env}`);
  for (const port of config.exposedPorts ?? []) out.push(`EXPOSE ${port}`);
  if (config.workdir) out.push(`WORKDIR ${config.workdir}`);
  if (config.user) out.push(`USER ${config.user}`);
  // Quoted: package versions hold `~`, `+` and `:`.
  out.push(
    `LABEL ${Object.entries(labels)
      .map(([k, v]) => `${JSON.stringify(k)}=${JSON.stringify(v)}`)
      .join(' ')}`,
  );
  return out;
}

async function importRootfs(
  root: string,
  ref: string,
  imageChanges: string[],
  rootOwned: boolean,
): Promise<void> {
  const [repo, tag] = ref.split(':') as [string, string];
  const owner = rootOwned ? ['--owner=0', '--group=0'] : [];
  const tar = spawn('tar', ['--numeric-owner', ...owner, '--xattrs', '-C', root, '-c', '.'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let tarError = '';
  tar.stderr.setEncoding('utf8').on('data', (c: string) => {
    tarError += c;
  });
  const tarDone = new Promise<void>((resolve, reject) => {
    tar.on('error', reject);
    tar.on('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`tar failed (exit ${code}): ${tarError.trim()}`)),
    );
  });
  const response = await docker().importImage(tar.stdout, {
    repo,
    tag,
    changes: imageChanges,
  });
  await Promise.all([followProgress(response), tarDone]);
}
