import { access, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { demuxBuffer } from '@kh/apimachinery';
import type { ContainerCreateOptions, ContainerInspectInfo, HostConfig } from 'dockerode';
import { GenericContainer, PullPolicy, type StartedTestContainer } from 'testcontainers';
import { docker, isNotFound } from '../util/docker.js';

/** HostConfig fields the engine accepts that @types/dockerode does not list. */
export type RawHostConfig = HostConfig & { CgroupnsMode?: 'host' | 'private' };

/**
 * A GenericContainer for the project's local images: it never pulls, never starts the Ryuk
 * reaper (its image cannot be pulled here; removeLeftovers and stop() clean up instead), and
 * accepts raw engine settings that testcontainers has no builder method for.
 */
export class KhContainer extends GenericContainer {
  /**
   * Labels each container with the pid of the process that created it: once that process is
   * gone, nothing but `kubelet-harness cleanup` will remove the container.
   */
  static readonly creatorPidLabel = 'kh.pid';

  constructor(image: string) {
    super(image);
    this.withPullPolicy(PullPolicy.neverPull())
      .withAutoCleanup(false)
      .withLabels({ [KhContainer.creatorPidLabel]: String(process.pid) });
  }

  withRawHostConfig(config: RawHostConfig): this {
    Object.assign(this.hostConfig, config);
    return this;
  }

  withRawCreateOptions(options: Partial<ContainerCreateOptions>): this {
    Object.assign(this.createOpts, options);
    return this;
  }
}

/**
 * Starts `container` (named `name`); if starting fails after creation (its wait strategy timed
 * out, say), the error carries the container's last output and the container is removed.
 */
export async function startOrRemove(container: KhContainer, name: string): Promise<StartedTestContainer> {
  try {
    return await container.start();
  } catch (err) {
    const logs = await containerLogTail(name);
    await removeContainer(name);
    throw new Error(`${name} did not start: ${(err as Error).message}\n${logs}`, { cause: err });
  }
}

/**
 * Removes a container that may be stuck: thaws its frozen cgroups, kills what is left in them,
 * then removes it with its volumes. Undefined when there was no such container.
 */
export async function removeContainer(idOrName: string): Promise<RemovedContainer | undefined> {
  const container = docker().getContainer(idOrName);
  let info: ContainerInspectInfo;
  try {
    info = await container.inspect();
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
  const dirs = await cgroupDirs(info);
  const thawed = await thaw(dirs);
  const killed = await killAll(dirs);
  await container.remove({ force: true, v: true }).catch((err: unknown) => {
    if (!isNotFound(err)) throw err;
  });
  const anonymous = info.Mounts.filter((m) => m.Type === 'volume' && m.Name).map((m) => m.Name as string);
  const volumes: string[] = [];
  for (const v of anonymous) if (!(await volumeExists(v))) volumes.push(v);
  return { id: info.Id, name: info.Name.replace(/^\//, ''), volumes, thawed, killed };
}

/** What removing a container took with it, and what it had to undo first. */
export interface RemovedContainer {
  id: string;
  name: string;
  /** Its volumes that are gone with it (anonymous ones; named volumes outlive it). */
  volumes: string[];
  /** Frozen cgroups (v1 freezer.state, v2 cgroup.freeze) under the container that were thawed. */
  thawed: string[];
  /** Processes left in its cgroups that were killed before the engine was asked to remove it. */
  killed: number;
}

/** One line for progress output, e.g. `kh-x-node-1 (2 volumes; thawed 1 frozen cgroup; killed 3 processes)`. */
export function describeRemoved(r: RemovedContainer): string {
  const parts = [`${r.volumes.length} volume${r.volumes.length === 1 ? '' : 's'}`];
  if (r.thawed.length)
    parts.push(`thawed ${r.thawed.length} frozen cgroup${r.thawed.length === 1 ? '' : 's'}`);
  if (r.killed) parts.push(`killed ${r.killed} process${r.killed === 1 ? '' : 'es'}`);
  return `${r.name} (${parts.join('; ')})`;
}

const CGROUP_ROOT = '/sys/fs/cgroup';

/**
 * The container's cgroup directories in the v1 freezer hierarchy and the v2 hierarchy (unified,
 * or the v2 mount of a hybrid host), each with its whole subtree: a node's runtime nests its pods
 * there (cgroup_parent /docker/<id>/kubepods). They come from /proc/<pid>/cgroup while the
 * container has a process, else from the engine's cgroupfs and systemd layouts.
 */
async function cgroupDirs(info: ContainerInspectInfo): Promise<string[]> {
  const v2Root = (await exists(join(CGROUP_ROOT, 'cgroup.controllers')))
    ? CGROUP_ROOT
    : join(CGROUP_ROOT, 'unified');
  const v1Root = join(CGROUP_ROOT, 'freezer');
  const paths: Array<[root: string, path: string]> = [];
  const procCgroup = info.State.Pid > 0 ? await readText(`/proc/${info.State.Pid}/cgroup`) : undefined;
  for (const line of procCgroup?.split('\n') ?? []) {
    const [, controllers, path] = line.split(':', 3);
    if (controllers === undefined || path === undefined) continue;
    if (controllers === '') paths.push([v2Root, path]);
    else if (controllers.split(',').includes('freezer')) paths.push([v1Root, path]);
  }
  if (paths.length === 0) {
    const parent = info.HostConfig.CgroupParent || '/docker';
    for (const root of [v1Root, v2Root])
      paths.push([root, join(parent, info.Id)], [root, `/system.slice/docker-${info.Id}.scope`]);
  }
  const out: string[] = [];
  for (const [root, path] of paths) {
    // "/" is the host's root cgroup: a container sharing it has nothing of its own to thaw.
    if (path === '/' || !(await exists(join(root, path)))) continue;
    out.push(...(await subtree(join(root, path))));
  }
  return out;
}

/** `dir` and every cgroup below it, parents before children. */
async function subtree(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  const out = [dir];
  for (const e of entries) if (e.isDirectory()) out.push(...(await subtree(join(dir, e.name))));
  return out;
}

/**
 * Thaws top-down, since a v1 child under a frozen parent reads FROZEN until the parent thaws. A
 * process that a runtime left frozen mid-create (runc init in D state) cannot die, so the engine
 * never sees the container exit and `docker rm -f` fails until it is thawed.
 */
async function thaw(dirs: string[]): Promise<string[]> {
  const thawed: string[] = [];
  for (const dir of dirs) {
    const v1 = (await readText(join(dir, 'freezer.state')))?.trim();
    if (v1 !== undefined && v1 !== 'THAWED') {
      await writeFile(join(dir, 'freezer.state'), 'THAWED');
      thawed.push(dir);
    }
    if ((await readText(join(dir, 'cgroup.freeze')))?.trim() === '1') {
      await writeFile(join(dir, 'cgroup.freeze'), '0');
      thawed.push(dir);
    }
  }
  return thawed;
}

/** SIGKILLs every process in the cgroups; returns how many were signalled. */
async function killAll(dirs: string[]): Promise<number> {
  const pids = new Set<number>();
  for (const dir of dirs)
    for (const pid of (await readText(join(dir, 'cgroup.procs')))?.split('\n') ?? [])
      if (Number(pid) > 0) pids.add(Number(pid));
  let killed = 0;
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
      killed++;
    } catch {
      // Gone already (ESRCH).
    }
  }
  return killed;
}

async function readText(path: string): Promise<string | undefined> {
  return readFile(path, 'utf8').catch(() => undefined);
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

async function volumeExists(name: string): Promise<boolean> {
  return docker()
    .getVolume(name)
    .inspect()
    .then(
      () => true,
      (err: unknown) => !isNotFound(err),
    );
}

/** The last lines of a container's output, for error messages. */
export async function containerLogTail(
  idOrName: string,
  lines = 30,
  /** Only what was logged at or after this time (epoch seconds). */
  sinceSeconds?: number,
): Promise<string> {
  try {
    const buf = (await docker()
      .getContainer(idOrName)
      .logs({
        stdout: true,
        stderr: true,
        tail: lines,
        follow: false,
        ...(sinceSeconds !== undefined ? { since: sinceSeconds } : {}),
      })) as unknown as Buffer;
    return demuxBuffer(buf)
      .map((f) => f.payload.toString('utf8'))
      .join('')
      .trim();
  } catch (err) {
    return `(no logs: ${(err as Error).message})`;
  }
}
