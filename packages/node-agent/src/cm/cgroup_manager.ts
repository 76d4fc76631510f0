// The kubelet's CgroupManager (pkg/kubelet/cm/cgroup_manager_linux.go) over cgroupfs, on cgroup
// v1 (one hierarchy per controller, as on these hybrid machines) and v2 (one unified tree whose
// parents enable controllers for their children in cgroup.subtree_control). It names a cgroup
// for the runtime in the driver's form (a cgroupfs path or nested systemd slices) and writes the
// same path on disk; with the systemd driver it writes the slices' directories itself, as it has
// no D-Bus connection to systemd.
import { join } from 'node:path';
import type { CgroupFs } from './cgroup_fs.js';
import { type CgroupName, cgroupNameToCgroupfs, cgroupNameToSystemd } from './cgroup_name.js';
import { cpuSharesToCPUWeight, type ResourceConfig } from './helpers.js';

export type CgroupDriver = 'cgroupfs' | 'systemd';

export const CGROUP_MOUNT = '/sys/fs/cgroup';

/** Controllers the pod and QoS cgroups need; without one of them the agent does not start. */
export const REQUIRED_CONTROLLERS_V1 = ['cpu', 'cpuacct', 'cpuset', 'memory', 'pids'] as const;
export const REQUIRED_CONTROLLERS_V2 = ['cpu', 'cpuset', 'memory', 'pids'] as const;

export interface CgroupManagerOptions {
  driver: CgroupDriver;
  fs: CgroupFs;
  /** Where the cgroup filesystems are mounted; /sys/fs/cgroup on a node. */
  mount?: string;
}

/** v1: the mount's hierarchies, read once (as the kubelet reads the cgroup subsystems at start). */
interface HierarchiesV1 {
  /** Those of controllers (not the hybrid unified one, nor named ones like systemd). */
  controllers: string[];
  /** Every tree a runtime may have put a cgroup in: the named and hybrid-unified ones too. */
  all: string[];
}

export class CgroupManager {
  private constructor(
    private readonly opts: CgroupManagerOptions & { mount: string },
    /** 2 when the mount is the unified hierarchy; else 1 (v1, or hybrid with v1 controllers). */
    readonly version: 1 | 2,
    private readonly v1: HierarchiesV1,
  ) {}

  /** cgroup v2 when the mount itself is a cgroup2 tree (it has cgroup.controllers). */
  static async detect(opts: CgroupManagerOptions): Promise<CgroupManager> {
    const mount = opts.mount ?? CGROUP_MOUNT;
    const v2 = (await opts.fs.read(join(mount, 'cgroup.controllers'))) !== undefined;
    if (v2) return new CgroupManager({ ...opts, mount }, 2, { controllers: [], all: [''] });
    const all = await opts.fs.subdirs(mount);
    const controllers: string[] = [];
    for (const d of all)
      if (
        d !== 'unified' &&
        d !== 'systemd' &&
        (await opts.fs.read(join(mount, d, 'cgroup.procs'))) !== undefined
      )
        controllers.push(d);
    return new CgroupManager({ ...opts, mount }, 1, { controllers, all });
  }

  /** The cgroup as the runtime is told it (the driver's literal form). */
  name(cgroup: CgroupName): string {
    return this.opts.driver === 'systemd' ? cgroupNameToSystemd(cgroup) : cgroupNameToCgroupfs(cgroup);
  }

  /** Fails with the controllers this node lacks (the kubelet refuses to start without them). */
  async validateControllers(): Promise<void> {
    const have = await this.controllers();
    const required = this.version === 2 ? REQUIRED_CONTROLLERS_V2 : REQUIRED_CONTROLLERS_V1;
    const lacking = required.filter((c) => !have.includes(c));
    if (lacking.length === 0) return;
    const where =
      this.version === 2
        ? `${join(this.opts.mount, 'cgroup.controllers')} (cgroup v2) does not list`
        : `no cgroup v1 hierarchy under ${this.opts.mount} for`;
    throw new Error(
      `cgroups: ${where} the required controllers: ${lacking.join(', ')} (pod and QoS cgroups need ${required.join(', ')})`,
    );
  }

  /** Whether the cgroup exists in every required controller. */
  async exists(cgroup: CgroupName): Promise<boolean> {
    const found = await Promise.all(this.requiredDirs(cgroup).map((dir) => this.opts.fs.isDir(dir)));
    return found.every(Boolean);
  }

  /** Makes the cgroup (v1: in every mounted controller; v2: with its controllers enabled) and sets it. */
  async create(cgroup: CgroupName, config: ResourceConfig): Promise<void> {
    const { fs } = this.opts;
    if (this.version === 2) {
      await this.enableControllers(this.path(cgroup));
      await fs.mkdir(this.dir('', cgroup));
    } else {
      // A pod's first pass waits for this: each hierarchy at once, not one after another.
      await Promise.all(this.v1.controllers.map((hierarchy) => fs.mkdir(this.dir(hierarchy, cgroup))));
      await this.inheritCpuset(cgroup);
    }
    await this.update(cgroup, config);
  }

  /** Writes the config's fields into the existing cgroup; absent fields are left alone. */
  async update(cgroup: CgroupName, config: ResourceConfig): Promise<void> {
    for (const [controller, file, value] of this.files(config))
      await this.opts.fs.write(join(this.dir(controller, cgroup), file), value).catch((err: Error) => {
        throw new Error(`cgroups: set ${file} of ${this.name(cgroup)} to ${value}: ${err.message}`);
      });
  }

  /**
   * Removes the cgroup from every hierarchy, children first (cgroups the runtime left under it).
   * rmdir fails while a process is still inside, and that error is returned to the caller.
   */
  async destroy(cgroup: CgroupName): Promise<void> {
    for (const hierarchy of this.v1.all) await this.removeTree(this.dir(hierarchy, cgroup));
  }

  /** The cgroup's memory use in bytes (memory.current, or memory.usage_in_bytes on v1). */
  async memoryUsage(cgroup: CgroupName): Promise<bigint | undefined> {
    const [hierarchy, file] =
      this.version === 2 ? ['', 'memory.current'] : ['memory', 'memory.usage_in_bytes'];
    const text = (await this.opts.fs.read(join(this.dir(hierarchy, cgroup), file)))?.trim();
    return text && /^\d+$/.test(text) ? BigInt(text) : undefined;
  }

  /** The names of the child cgroups of `cgroup`, seen in any hierarchy. */
  async children(cgroup: CgroupName): Promise<string[]> {
    const names = new Set<string>();
    for (const hierarchy of this.v1.all)
      for (const n of await this.opts.fs.subdirs(this.dir(hierarchy, cgroup))) names.add(n);
    return [...names];
  }

  /** The directory of `cgroup` in a hierarchy (v1: the controller's mount; v2: '' is the mount). */
  dir(hierarchy: string, cgroup: CgroupName): string {
    return join(this.opts.mount, hierarchy, this.path(cgroup));
  }

  private path(cgroup: CgroupName): string {
    return this.name(cgroup);
  }

  private requiredDirs(cgroup: CgroupName): string[] {
    if (this.version === 2) return [this.dir('', cgroup)];
    return REQUIRED_CONTROLLERS_V1.map((c) => this.dir(c, cgroup));
  }

  /** Every controller available: v2 from cgroup.controllers, v1 from the mounted hierarchies. */
  private async controllers(): Promise<string[]> {
    if (this.version === 2)
      return ((await this.opts.fs.read(join(this.opts.mount, 'cgroup.controllers'))) ?? '')
        .split(/\s+/)
        .filter(Boolean);
    return this.v1.controllers.flatMap((h) => h.split(','));
  }

  private async removeTree(dir: string): Promise<void> {
    for (const child of await this.opts.fs.subdirs(dir)) await this.removeTree(join(dir, child));
    await this.opts.fs.rmdir(dir);
  }

  /**
   * v1 cpuset: a new cgroup starts with no CPUs and no memory nodes, and no task can join it, so
   * each level without its own copies its parent's (as runc does for the cgroups it makes). Every
   * level is read at once; only the empty ones are written, from the top down.
   */
  private async inheritCpuset(cgroup: CgroupName): Promise<void> {
    const { fs } = this.opts;
    const root = join(this.opts.mount, 'cpuset');
    if (!(await fs.isDir(root))) return;
    const dirs = [root];
    for (const part of this.path(cgroup).split('/').filter(Boolean)) dirs.push(join(dirs.at(-1)!, part));
    const files = ['cpuset.cpus', 'cpuset.mems'];
    const own = await Promise.all(
      dirs.map((dir) => Promise.all(files.map(async (f) => (await fs.read(join(dir, f)))?.trim() ?? ''))),
    );
    let inherited = own[0] ?? [];
    for (const [level, dir] of dirs.entries()) {
      if (level === 0) continue;
      const values = own[level] ?? [];
      await Promise.all(
        files.map((f, i) => (values[i] || !inherited[i] ? undefined : fs.write(join(dir, f), inherited[i]!))),
      );
      inherited = values.map((v, i) => v || inherited[i] || '');
    }
  }

  /**
   * v2: each ancestor of the cgroup (from the root down) enables in cgroup.subtree_control the
   * required controllers it has, so that the cgroup gets their files.
   */
  private async enableControllers(path: string): Promise<void> {
    const { fs } = this.opts;
    const parts = path.split('/').filter(Boolean);
    let dir = this.opts.mount;
    for (const part of parts) {
      const available = ((await fs.read(join(dir, 'cgroup.controllers'))) ?? '').split(/\s+/);
      const enabled = ((await fs.read(join(dir, 'cgroup.subtree_control'))) ?? '').split(/\s+/);
      const wanted = REQUIRED_CONTROLLERS_V2.filter((c) => available.includes(c) && !enabled.includes(c));
      if (wanted.length > 0) {
        const line = wanted.map((c) => `+${c}`).join(' ');
        await fs.write(join(dir, 'cgroup.subtree_control'), line).catch((err: Error) => {
          throw new Error(
            `cgroups: enable ${line} in ${join(dir, 'cgroup.subtree_control')}: ${err.message}`,
          );
        });
      }
      dir = join(dir, part);
      await fs.mkdir(dir);
    }
  }

  /** [hierarchy, file, value] for each field of the config, in the order the kernel accepts them. */
  private files(c: ResourceConfig): [string, string, string][] {
    const out: [string, string, string][] = [];
    if (this.version === 2) {
      if (c.cpuShares !== undefined) out.push(['', 'cpu.weight', String(cpuSharesToCPUWeight(c.cpuShares))]);
      if (c.cpuQuota !== undefined || c.cpuPeriod !== undefined) {
        const quota = c.cpuQuota === undefined || c.cpuQuota <= 0n ? 'max' : String(c.cpuQuota);
        out.push(['', 'cpu.max', `${quota} ${c.cpuPeriod ?? ''}`.trim()]);
      }
      if (c.memory !== undefined) out.push(['', 'memory.max', c.memory > 0n ? String(c.memory) : 'max']);
      if (c.pidsLimit !== undefined)
        out.push(['', 'pids.max', c.pidsLimit > 0n ? String(c.pidsLimit) : 'max']);
      return out;
    }
    if (c.cpuShares !== undefined) out.push(['cpu', 'cpu.shares', String(c.cpuShares)]);
    if (c.cpuPeriod !== undefined) out.push(['cpu', 'cpu.cfs_period_us', String(c.cpuPeriod)]);
    if (c.cpuQuota !== undefined)
      out.push(['cpu', 'cpu.cfs_quota_us', String(c.cpuQuota === 0n ? -1n : c.cpuQuota)]);
    if (c.memory !== undefined)
      out.push(['memory', 'memory.limit_in_bytes', String(c.memory > 0n ? c.memory : -1n)]);
    if (c.pidsLimit !== undefined)
      out.push(['pids', 'pids.max', c.pidsLimit > 0n ? String(c.pidsLimit) : 'max']);
    return out;
  }
}
