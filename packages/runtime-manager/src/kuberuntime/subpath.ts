// subPath and subPathExpr as the kubelet mounts them (makeMounts and pkg/volume/util/subpath):
// the sub-path is checked (relative, no `..`), created inside the volume if missing without
// following a link out of it, opened once, checked again through the opened descriptor, and that
// descriptor is bind-mounted at <podsDir>/<uid>/volume-subpaths/<volume>/<container>/<index>. The
// runtime mounts that prepared path, so a link swapped in after the check changes nothing.
import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import {
  chmod,
  lstat,
  mkdir,
  open,
  readdir,
  readFile,
  readlink,
  realpath,
  rmdir,
  stat,
  unlink,
  writeFile,
} from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, sep } from 'node:path';
import { promisify } from 'node:util';
import type { V1VolumeMount } from '@kubernetes/client-node';
import type { EnvVar } from './env.js';

const run = promisify(execFile);

/** Linux's O_PATH (not in fs.constants): a descriptor that names a file without opening its data. */
const O_PATH = 0o10000000;

/** The directory under a pod's dir that holds its prepared sub-path mounts (the kubelet's name). */
export const VolumeSubpathsDir = 'volume-subpaths';

/** Bind mounts for prepared sub-paths. */
export interface SubPathMounter {
  bind(source: string, target: string): Promise<void>;
  unmount(target: string): Promise<void>;
  isMountPoint(target: string): Promise<boolean>;
}

/** tmpfs mounts for memory-backed emptyDir volumes. */
export interface TmpfsMounter {
  /** A tmpfs at `target`, `sizeBytes` large (undefined: the kernel's default, half of RAM). */
  mountTmpfs(target: string, sizeBytes: number | undefined): Promise<void>;
  unmount(target: string): Promise<void>;
  isMountPoint(target: string): Promise<boolean>;
}

/** mount(8)/umount(8) on this host: the agent must run as root in the runtime's mount namespace. */
export const hostMounter: SubPathMounter & TmpfsMounter = {
  async bind(source, target) {
    // --no-canonicalize: mount must bind the descriptor's file, not re-resolve a path.
    await run('mount', ['--no-canonicalize', '--bind', source, target]);
  },
  async mountTmpfs(target, sizeBytes) {
    const options = sizeBytes === undefined ? [] : ['-o', `size=${sizeBytes}`];
    await run('mount', ['-t', 'tmpfs', ...options, 'tmpfs', target]);
  },
  async unmount(target) {
    await run('umount', [target]);
  },
  async isMountPoint(target) {
    return (await mountPoints()).includes(target);
  },
};

/** Every mount point in this mount namespace (the agent's, which is the runtime's), from mountinfo. */
export async function mountPoints(): Promise<string[]> {
  const info = await readFile('/proc/self/mountinfo', 'utf8');
  return info
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => unescapeMountPath(line.split(' ')[4] ?? ''));
}

/** mountinfo escapes space, tab, newline and backslash as octal. */
const unescapeMountPath = (p: string) =>
  p.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8)));

/** Why a sub-path cannot be used; the message is the kubelet's and names no host path. */
export class SubPathError extends Error {}

/** The path is inside base (or is base); both already clean and absolute. */
export function pathWithinBase(path: string, base: string): boolean {
  const rel = relative(base, path);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

/** The API's checks on a sub-path (ValidatePathNoBacksteps and the absolute-path check). */
export function checkSubPath(subPath: string): void {
  if (isAbsolute(subPath))
    throw new SubPathError(`error SubPath \`${subPath}\` must not be an absolute path`);
  if (subPath.split(/[\\/]/).includes('..'))
    throw new SubPathError(`unable to provision SubPath \`${subPath}\`: must not contain '..'`);
}

/**
 * subPathExpr with the container's environment: $(VAR) expanded, $$ escaped; a variable that is
 * unset or empty is an error, as in the kubelet's ExpandContainerVolumeMounts.
 */
export function expandSubPathExpr(expr: string, envs: readonly EnvVar[]): string {
  const vars = new Map(envs.map((e) => [e.name, e.value]));
  const missing = new Set<string>();
  const expanded = expr.replace(/\$\$|\$\(([^)]*)\)/g, (m, name: string | undefined) => {
    if (m === '$$') return '$';
    const value = vars.get(name ?? '') ?? '';
    if (value === '') missing.add(name ?? '');
    return value;
  });
  if (missing.size > 0) throw new SubPathError(`missing value for ${[...missing].sort().join(', ')}`);
  return expanded;
}

/** The sub-path a mount asks for (subPath, or subPathExpr expanded), checked; '' for none. */
export function mountSubPath(vm: V1VolumeMount, envs: readonly EnvVar[]): string {
  const subPath = vm.subPathExpr ? expandSubPathExpr(vm.subPathExpr, envs) : (vm.subPath ?? '');
  if (subPath) checkSubPath(subPath);
  return subPath;
}

const isNotFound = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOENT';

/**
 * Creates the missing directories of `subPath` inside `base` (real, absolute) one at a time (the
 * kubelet's SafeMakeDir): an existing component that is a link must resolve to a directory inside
 * the volume; a created one must be a directory, not a link raced in. Each created one gets `mode`
 * whatever the umask, setgid and sticky bits included (the kubelet's fchmod after mkdirat).
 */
async function safeMakeDir(base: string, subPath: string, mode: number): Promise<void> {
  let current = base;
  for (const seg of subPath.split('/').filter((s) => s !== '' && s !== '.')) {
    current = join(current, seg);
    let st = await lstat(current).catch((err) => {
      if (isNotFound(err)) return undefined;
      throw err;
    });
    if (!st) {
      await mkdir(current, { mode });
      st = await lstat(current);
      if (st.isDirectory()) await chmod(current, mode);
    }
    if (st.isSymbolicLink()) {
      const target = await realpath(current);
      if (!pathWithinBase(target, base)) throw new Error(`${current} resolves outside ${base}`);
      current = target;
      st = await stat(current);
    }
    if (!st.isDirectory()) throw new Error(`${current} is not a directory`);
  }
}

export interface PrepareSubPath {
  podsDir: string;
  podUid: string;
  volumeName: string;
  containerName: string;
  /** Index of the mount in the container's volumeMounts. */
  index: number;
  /** The volume's directory on the node. */
  volumePath: string;
  /** Checked already (mountSubPath). */
  subPath: string;
}

/**
 * Prepares a sub-path mount and returns the path the runtime bind-mounts into the container.
 * Throws SubPathError with the kubelet's message when the sub-path cannot be used.
 */
export async function prepareSubPath(mounter: SubPathMounter, p: PrepareSubPath): Promise<string> {
  const what = `for volumeMount "${p.volumeName}" of container "${p.containerName}"`;
  let base: string;
  try {
    base = await realpath(p.volumePath);
    const exists = await stat(join(base, p.subPath)).then(
      () => true,
      (err) => {
        if (isNotFound(err)) return false;
        throw err;
      },
    );
    // The volume root's mode, as the kubelet's makeMounts passes it (GetMode): on an fsGroup
    // volume the sub-path is setgid and group-writable like its root, so the group can use it.
    if (!exists) await safeMakeDir(base, p.subPath, (await stat(base)).mode & 0o7777);
  } catch {
    throw new SubPathError(`failed to create subPath directory ${what}`);
  }
  const fail = () => new SubPathError(`failed to prepare subPath ${what}`);
  let resolved: string;
  try {
    resolved = await realpath(join(base, p.subPath));
  } catch {
    throw fail();
  }
  if (!pathWithinBase(resolved, base)) throw fail();
  // O_NOFOLLOW: a link swapped in after realpath is opened as the link itself, and rejected.
  // (libuv adds O_CLOEXEC: mount(8) reaches the descriptor through /proc/<our pid>, not by inheriting it.)
  const fd = await open(resolved, O_PATH | constants.O_NOFOLLOW).catch(() => {
    throw fail();
  });
  try {
    const opened = await readlink(`/proc/self/fd/${fd.fd}`);
    const st = await fd.stat();
    if (st.isSymbolicLink() || !pathWithinBase(opened, base)) throw fail();
    const target = join(
      p.podsDir,
      p.podUid,
      VolumeSubpathsDir,
      p.volumeName,
      p.containerName,
      String(p.index),
    );
    // A restarted container gets the sub-path as it is now, not as it was at its first start.
    if (await mounter.isMountPoint(target)) await mounter.unmount(target);
    await removeTarget(target);
    if (st.isDirectory()) await mkdir(target, { recursive: true, mode: 0o750 });
    else {
      await mkdir(dirname(target), { recursive: true, mode: 0o750 });
      await writeFile(target, '', { mode: 0o640 });
    }
    await mounter.bind(`/proc/${process.pid}/fd/${fd.fd}`, target);
    return target;
  } catch (err) {
    if (err instanceof SubPathError) throw err;
    throw fail();
  } finally {
    await fd.close();
  }
}

/**
 * Unmounts and removes a pod's prepared sub-paths (the kubelet's CleanSubPaths), once none of its
 * containers runs. Never removes through a mount: a target that stays mounted is left in place.
 */
export async function cleanSubPaths(
  mounter: SubPathMounter,
  podsDir: string,
  podUid: string,
): Promise<Error[]> {
  const root = join(podsDir, podUid, VolumeSubpathsDir);
  const errors: Error[] = [];
  const list = (dir: string) => readdir(dir).catch(() => [] as string[]);
  for (const vol of await list(root)) {
    for (const ctr of await list(join(root, vol))) {
      for (const idx of await list(join(root, vol, ctr))) {
        const target = join(root, vol, ctr, idx);
        try {
          if (await mounter.isMountPoint(target)) await mounter.unmount(target);
          await removeTarget(target);
        } catch (err) {
          errors.push(err as Error);
        }
      }
      await rmdir(join(root, vol, ctr)).catch(() => undefined);
    }
    await rmdir(join(root, vol)).catch(() => undefined);
  }
  await rmdir(root).catch(() => undefined);
  return errors;
}

/** Removes an unmounted target: rmdir for a directory (refuses a non-empty one), unlink for a file. */
async function removeTarget(target: string): Promise<void> {
  const st = await lstat(target).catch((err) => {
    if (isNotFound(err)) return undefined;
    throw err;
  });
  if (!st) return;
  if (st.isDirectory()) await rmdir(target);
  else await unlink(target);
}
