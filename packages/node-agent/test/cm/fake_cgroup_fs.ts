// An in-memory cgroupfs: directories hold control files and child cgroups; rmdir refuses a
// cgroup that still has children (as the kernel does), and writing into a missing cgroup fails.
import { dirname } from 'node:path';
import type { CgroupFs } from '../../src/cm/cgroup_fs.js';

export class FakeCgroupFs implements CgroupFs {
  readonly dirs = new Set<string>(['/']);
  readonly files = new Map<string, string>();

  /** A v1 hybrid tree as on these machines: one hierarchy per controller, plus unified and systemd. */
  static v1(controllers = ['cpu', 'cpuacct', 'cpuset', 'memory', 'pids', 'devices', 'freezer', 'blkio']) {
    const fs = new FakeCgroupFs();
    for (const c of controllers) {
      fs.add(`/cg/${c}`);
      fs.files.set(`/cg/${c}/cgroup.procs`, '1\n');
    }
    fs.files.set('/cg/cpuset/cpuset.cpus', '0-1\n');
    fs.files.set('/cg/cpuset/cpuset.mems', '0\n');
    fs.add('/cg/unified');
    fs.add('/cg/systemd');
    return fs;
  }

  /** A v2 tree whose root offers these controllers and enables none yet. */
  static v2(controllers = ['cpuset', 'cpu', 'io', 'memory', 'hugetlb', 'pids']) {
    const fs = new FakeCgroupFs();
    fs.add('/cg');
    fs.files.set('/cg/cgroup.controllers', `${controllers.join(' ')}\n`);
    fs.files.set('/cg/cgroup.subtree_control', '\n');
    return fs;
  }

  add(path: string): void {
    for (let p = path; p !== '/'; p = dirname(p)) this.dirs.add(p);
  }

  async read(path: string) {
    return this.files.get(path);
  }

  async write(path: string, data: string) {
    if (!this.dirs.has(dirname(path))) throw new Error(`ENOENT: ${path}`);
    // v2: what a parent enables becomes the child's cgroup.controllers.
    if (path.endsWith('/cgroup.subtree_control')) {
      const enabled = new Set((this.files.get(path) ?? '').split(/\s+/).filter(Boolean));
      for (const c of data.split(/\s+/).filter(Boolean)) enabled.add(c.replace(/^\+/, ''));
      this.files.set(path, [...enabled].join(' '));
      return;
    }
    this.files.set(path, data);
  }

  async isDir(path: string) {
    return this.dirs.has(path);
  }

  async mkdir(path: string) {
    const fresh = !this.dirs.has(path);
    this.add(path);
    const parent = dirname(path);
    // v2: a new cgroup offers what its parent enabled.
    const enabled = this.files.get(`${parent}/cgroup.subtree_control`);
    if (fresh && enabled !== undefined) {
      this.files.set(`${path}/cgroup.controllers`, enabled);
      this.files.set(`${path}/cgroup.subtree_control`, '');
      // With the memory controller a new cgroup starts with nothing charged to it.
      if (enabled.split(/\s+/).includes('memory')) this.files.set(`${path}/memory.current`, '0');
    }
  }

  async rmdir(path: string) {
    if (!this.dirs.has(path)) return;
    if ((await this.subdirs(path)).length > 0) throw new Error(`EBUSY: ${path} has child cgroups`);
    this.dirs.delete(path);
    for (const f of [...this.files.keys()]) if (dirname(f) === path) this.files.delete(f);
  }

  async subdirs(path: string) {
    return [...this.dirs]
      .filter((d) => d !== path && dirname(d) === path)
      .map((d) => d.slice(path.length + 1));
  }
}
