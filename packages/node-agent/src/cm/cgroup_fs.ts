// The few file operations the cgroup manager needs, so that tests can give it a fake tree:
// cgroupfs directories are made with mkdir and removed with rmdir (their control files go with
// them, and rmdir fails while a child cgroup or a process is left).
import { mkdir, readdir, readFile, rmdir, stat, writeFile } from 'node:fs/promises';

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

export const hostCgroupFs: CgroupFs = {
  read: (path) =>
    readFile(path, 'utf8').catch((err) => {
      if (missing(err)) return undefined;
      throw err;
    }),
  write: (path, data) => writeFile(path, data),
  isDir: (path) =>
    stat(path).then(
      (s) => s.isDirectory(),
      () => false,
    ),
  mkdir: async (path) => {
    await mkdir(path, { recursive: true });
  },
  rmdir: (path) =>
    rmdir(path).catch((err) => {
      if (!missing(err)) throw err;
    }),
  subdirs: (path) =>
    readdir(path, { withFileTypes: true }).then(
      (entries) => entries.filter((e) => e.isDirectory()).map((e) => e.name),
      (err) => {
        if (missing(err)) return [];
        throw err;
      },
    ),
};
