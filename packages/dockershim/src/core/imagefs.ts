import { statfs } from 'node:fs/promises';
import type { FilesystemUsage, ImageFsInfoResponse } from '@kh/cri-api';
import type { ShimContext } from './context.js';
import { nowNanos } from './convert.js';
import { docker } from './errors.js';

/** Inodes in use on the filesystem holding `path`, if the shim can see it (it runs next to dockerd). */
async function inodesUsed(path: string): Promise<bigint | undefined> {
  try {
    const s = await statfs(path);
    return BigInt(s.files - s.ffree);
  } catch {
    return undefined;
  }
}

/**
 * ImageFsInfo: usage of the Engine's data root (docker info DockerRootDir). Image bytes are the layer
 * total of `docker system df`; container bytes the sum of writable layers.
 */
export async function imageFsInfo(ctx: ShimContext): Promise<Partial<ImageFsInfoResponse>> {
  const root = await ctx.dockerRootDir();
  const df = await docker('disk usage', () => ctx.docker.diskUsage());
  const inodes = await inodesUsed(root);
  const timestamp = nowNanos();
  const usage = (bytes: number): FilesystemUsage => ({
    timestamp,
    fsId: { mountpoint: root },
    usedBytes: { value: BigInt(Math.max(0, bytes)) },
    inodesUsed: inodes === undefined ? undefined : { value: inodes },
  });
  const containerBytes = (df.Containers ?? []).reduce((sum, c) => sum + (c.SizeRw ?? 0), 0);
  return { imageFilesystems: [usage(df.LayersSize ?? 0)], containerFilesystems: [usage(containerBytes)] };
}
