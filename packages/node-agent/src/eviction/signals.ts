// Reads the node-level signals the way the kubelet does:
// - memory.available: capacity (the cgroup's limit when it has one, else MemTotal) minus the
//   working set, which is usage minus inactive file pages (reclaimable page cache);
// - allocatableMemory.available: the same for the kubepods cgroup, whose limit is node
//   allocatable when enforceNodeAllocatable has `pods`;
// - nodefs.available / nodefs.inodesFree: statfs of the agent's root dir;
// - imagefs.available / imagefs.inodesFree: CRI ImageFsInfo's usage against the image
//   filesystem's capacity;
// - pid.available: the lower of kernel.pid_max and kernel.threads-max, minus the tasks on the
//   node (the 4th field of /proc/loadavg).
// Every path is configurable so tests read a fake /proc and cgroup tree.
import { existsSync, statfsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Logger, silentLogger } from '../util/log.js';
import type { Observations, SignalSource } from './types.js';

export interface FsStats {
  /** Bytes per block. */
  bsize: number;
  blocks: number;
  /** Blocks available to unprivileged users. */
  bavail: number;
  files: number;
  ffree: number;
}

export interface ImageFsUsage {
  usedBytes: number;
  capacityBytes: number;
  inodesUsed?: number;
  inodesCapacity?: number;
}

export interface NodeSignalSourceOptions {
  /** The memory cgroup of the node (v1: .../memory/<path>, v2: .../<path>); '' reads /proc/meminfo only. */
  memoryCgroupDir: string;
  /** The kubepods memory cgroup (allocatableMemory.available); omitted: no such signal. */
  allocatableMemoryCgroupDir?: string;
  /** Where /proc lives ('/proc'). */
  procRoot?: string;
  /** The kubelet's root dir, whose filesystem is nodefs. */
  rootDir: string;
  /** The image filesystem's usage, for example from criImageFs(); omitted: no imagefs signals. */
  imageFs?: () => Promise<ImageFsUsage | undefined>;
  statfs?: (path: string) => FsStats;
  /** Told when a signal cannot be read; the others are still observed. */
  log?: Logger;
}

const UNLIMITED = 2 ** 62;

async function readText(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return undefined;
  }
}

function parseKeyValues(text: string, sep: RegExp): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const [k, v] = line.trim().split(sep);
    if (k && v !== undefined && /^\d+/.test(v)) out.set(k.replace(/:$/, ''), Number.parseInt(v, 10));
  }
  return out;
}

export class NodeSignalSource implements SignalSource {
  private readonly procRoot: string;
  private readonly statfs: (path: string) => FsStats;

  constructor(private readonly opts: NodeSignalSourceOptions) {
    this.procRoot = opts.procRoot ?? '/proc';
    this.statfs = opts.statfs ?? ((p) => statfsSync(p));
  }

  async observe(): Promise<Observations> {
    const obs: Observations = {};
    const memory = await this.memory();
    if (memory) obs['memory.available'] = memory;
    const allocatable = this.opts.allocatableMemoryCgroupDir
      ? await this.memory(this.opts.allocatableMemoryCgroupDir)
      : undefined;
    if (allocatable) obs['allocatableMemory.available'] = allocatable;
    const fs = this.statfs(this.opts.rootDir);
    obs['nodefs.available'] = { available: fs.bavail * fs.bsize, capacity: fs.blocks * fs.bsize };
    obs['nodefs.inodesFree'] = { available: fs.ffree, capacity: fs.files };
    // A runtime that cannot report its image filesystem must not blind the memory and nodefs signals.
    const image = await this.opts.imageFs?.().catch((err: Error) => {
      (this.opts.log ?? silentLogger).error('Eviction manager: cannot read the image filesystem', {
        err: err.message,
      });
      return undefined;
    });
    if (image) {
      obs['imagefs.available'] = {
        available: Math.max(0, image.capacityBytes - image.usedBytes),
        capacity: image.capacityBytes,
      };
      if (image.inodesCapacity !== undefined && image.inodesUsed !== undefined) {
        obs['imagefs.inodesFree'] = {
          available: Math.max(0, image.inodesCapacity - image.inodesUsed),
          capacity: image.inodesCapacity,
        };
      }
    }
    const pids = await this.pids();
    if (pids) obs['pid.available'] = pids;
    return obs;
  }

  /** Memory available in a cgroup (v2 or v1), falling back to /proc/meminfo for the root. */
  async memory(
    dir = this.opts.memoryCgroupDir,
  ): Promise<{ available: number; capacity: number } | undefined> {
    const meminfoText = await readText(join(this.procRoot, 'meminfo'));
    // /proc/meminfo is in kB.
    const meminfo = meminfoText ? parseKeyValues(meminfoText, /\s+/) : new Map<string, number>();
    const memTotal = (meminfo.get('MemTotal') ?? 0) * 1024;
    let usage: number | undefined;
    let inactiveFile = 0;
    let limit = UNLIMITED;
    if (dir && existsSync(join(dir, 'memory.current'))) {
      usage = Number.parseInt((await readText(join(dir, 'memory.current'))) ?? '', 10);
      const stat = parseKeyValues((await readText(join(dir, 'memory.stat'))) ?? '', /\s+/);
      inactiveFile = stat.get('inactive_file') ?? 0;
      const max = (await readText(join(dir, 'memory.max')))?.trim();
      if (max && max !== 'max') limit = Number.parseInt(max, 10);
    } else if (dir && existsSync(join(dir, 'memory.usage_in_bytes'))) {
      usage = Number.parseInt((await readText(join(dir, 'memory.usage_in_bytes'))) ?? '', 10);
      const stat = parseKeyValues((await readText(join(dir, 'memory.stat'))) ?? '', /\s+/);
      inactiveFile = stat.get('total_inactive_file') ?? stat.get('inactive_file') ?? 0;
      limit = Number.parseInt((await readText(join(dir, 'memory.limit_in_bytes'))) ?? '', 10) || UNLIMITED;
    } else if (memTotal > 0) {
      // The v2 root cgroup has no memory.current: take usage from meminfo.
      usage = memTotal - (meminfo.get('MemFree') ?? 0) * 1024;
      inactiveFile = (meminfo.get('Inactive(file)') ?? 0) * 1024;
    }
    if (usage === undefined || Number.isNaN(usage)) return undefined;
    const capacity = memTotal > 0 ? Math.min(memTotal, limit) : limit;
    if (capacity >= UNLIMITED) return undefined;
    const workingSet = Math.max(0, usage - inactiveFile);
    return { available: Math.max(0, capacity - workingSet), capacity };
  }

  async pids(): Promise<{ available: number; capacity: number } | undefined> {
    // Both kernel.pid_max and kernel.threads-max cap the tasks; the kubelet takes the lower.
    const limits = await Promise.all(
      ['sys/kernel/pid_max', 'sys/kernel/threads-max'].map(async (f) =>
        Number.parseInt((await readText(join(this.procRoot, f))) ?? '', 10),
      ),
    );
    const max = Math.min(...limits.filter((n) => !Number.isNaN(n)));
    const loadavg = (await readText(join(this.procRoot, 'loadavg'))) ?? '';
    const running = Number.parseInt(loadavg.split(/\s+/)[3]?.split('/')[1] ?? '', 10);
    if (!Number.isFinite(max) || Number.isNaN(running)) return undefined;
    return { available: Math.max(0, max - running), capacity: max };
  }
}

/** The CRI ImageFsInfo call this reads (a CriClient fits). */
export interface ImageFsInfoClient {
  imageFsInfo(req: object): Promise<{
    imageFilesystems: {
      usedBytes?: { value: bigint };
      inodesUsed?: { value: bigint };
      fsId?: { mountpoint: string };
    }[];
  }>;
}

/**
 * imagefs usage from CRI ImageFsInfo. CRI reports no capacity, so it is `capacityBytes` when
 * given (an agent outside the node cannot statfs the runtime's mountpoint), else statfs of the
 * reported mountpoint.
 */
export function criImageFs(
  cri: ImageFsInfoClient,
  opts: { capacityBytes?: number; statfs?: (path: string) => FsStats } = {},
): () => Promise<ImageFsUsage | undefined> {
  const statfs = opts.statfs ?? ((p: string) => statfsSync(p));
  return async () => {
    const res = await cri.imageFsInfo({});
    const fs = res.imageFilesystems[0];
    if (!fs) return undefined;
    const usedBytes = Number(fs.usedBytes?.value ?? 0n);
    const inodesUsed = fs.inodesUsed ? Number(fs.inodesUsed.value) : undefined;
    if (opts.capacityBytes !== undefined) return { usedBytes, capacityBytes: opts.capacityBytes, inodesUsed };
    const mount = fs.fsId?.mountpoint;
    if (!mount) return undefined;
    const st = statfs(mount);
    return { usedBytes, capacityBytes: st.blocks * st.bsize, inodesUsed, inodesCapacity: st.files };
  };
}
