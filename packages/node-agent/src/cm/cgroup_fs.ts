// The few file operations the cgroup manager needs, so that tests can give it a fake tree:
// cgroupfs directories are made with mkdir and removed with rmdir (their control files go with
// them, and rmdir fails while a child cgroup or a process is left).
import { mkdirSync, readdirSync, readFileSync, rmdirSync, statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';

export interface CgroupFs {
  /** The file's text, or undefined when it does not exist. */
  read(path: string): Promise<string | undefined>;
  write(path: string, data: string): Promise<void>;
  isDir(path: string): Promise<boolean>;
  /** Makes the directory and its missing parents. */
  mkdir(path: string): Promise<void>;
  /** Removes an empty cgroup; a missing one is not an error. */
  rmdir(path: string): Promise<void>;
  /** Names of the subdirectories (child cgroups); [] when the directory does not exist. */
  subdirs(path: string): Promise<string[]>;
}

const missing = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOENT';

/**
 * cgroupfs on the host. Reads, stats, mkdir, rmdir and directory listings are calls into kernel
 * memory that return in microseconds, so they are made synchronously, as the kubelet makes them:
 * through libuv's thread pool each cost a thread hop and two wake-ups, three times the CPU (1,440
 * such calls over six v1 hierarchies: 85-108 ms asynchronously, 30-33 ms synchronously, the
 * longest 1.3 ms). Writes stay asynchronous: lowering a memory limit makes the kernel reclaim
 * before it answers.
 */
export const hostCgroupFs: CgroupFs = {
  read: async (path) => {
    try {
      return readFileSync(path, 'utf8');
    } catch (err) {
      if (missing(err)) return undefined;
      throw err;
    }
  },
  write: (path, data) => writeFile(path, data),
  isDir: async (path) => statSync(path, { throwIfNoEntry: false })?.isDirectory() ?? false,
  mkdir: async (path) => {
    mkdirSync(path, { recursive: true });
  },
  rmdir: async (path) => {
    try {
      rmdirSync(path);
    } catch (err) {
      if (!missing(err)) throw err;
    }
  },
  subdirs: async (path) => {
    try {
      return readdirSync(path, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name);
    } catch (err) {
      if (missing(err)) return [];
      throw err;
    }
  },
};
