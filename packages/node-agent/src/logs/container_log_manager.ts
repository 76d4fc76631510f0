// The kubelet's container log manager (pkg/kubelet/logs): every containerLogMonitorInterval it
// looks at each running container's log file, and one over containerLogMaxSize is rotated by
// containerLogMaxWorkers workers: older rotated files beyond containerLogMaxFiles are removed,
// the rotated files kept are gzipped, and the live file is renamed to
// `<log>.<YYYYMMDD-hhmmss>` before the runtime is asked to ReopenContainerLog at the same path.
import { createReadStream, createWriteStream } from 'node:fs';
import { readdir, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { TimerClock } from '@kh/apimachinery';
import { ContainerState, type CriCalls } from '@kh/cri-api';
import { Waker } from '../util/clock.js';
import { type Logger, silentLogger } from '../util/log.js';

/** The suffix of a compressed rotated log, and of one being compressed (the kubelet's). */
export const CompressSuffix = '.gz';
export const TmpSuffix = '.tmp';

/** `<log>.<timestamp>`: the kubelet's Go layout 20060102-150405, in UTC. */
export function rotatedLogName(log: string, nowMs: number): string {
  const iso = new Date(nowMs).toISOString(); // 2026-11-28T20:31:05.123Z
  const stamp = `${iso.slice(0, 10).replaceAll('-', '')}-${iso.slice(11, 19).replaceAll(':', '')}`;
  return `${log}.${stamp}`;
}

/** Every file of a container's log, oldest first and the live one last (the kubelet's GetAllLogs). */
export async function getAllLogs(log: string): Promise<string[]> {
  const dir = dirname(log);
  const name = basename(log);
  const names = await readdir(dir).catch(() => [] as string[]);
  // In use only: no temporary file, no plain file whose compressed copy is complete.
  const rotated = names
    .filter(
      (n) => n.startsWith(`${name}.`) && !n.endsWith(TmpSuffix) && !names.includes(`${n}${CompressSuffix}`),
    )
    .sort()
    .map((n) => join(dir, n));
  return names.includes(name) ? [...rotated, log] : rotated;
}

export interface LogRotatePolicy {
  maxSizeBytes: number;
  /** At least 2: the live file and the newest rotated one. */
  maxFiles: number;
}

export interface ContainerLogManagerOptions {
  cri: Pick<CriCalls, 'listContainers' | 'containerStatus' | 'reopenContainerLog'>;
  policy: LogRotatePolicy;
  /** containerLogMaxWorkers. */
  maxWorkers: number;
  /** containerLogMonitorInterval. */
  monitorIntervalMs: number;
  clock: TimerClock;
  log?: Logger;
}

/** Gzips a rotated file beside itself through `<file>.tmp`, then removes the original. */
async function compressLog(path: string): Promise<void> {
  const tmp = `${path}${TmpSuffix}`;
  await pipeline(createReadStream(path), createGzip(), createWriteStream(tmp, { mode: 0o644 }));
  await rename(tmp, `${path}${CompressSuffix}`);
  await rm(path, { force: true });
}

export class ContainerLogManager {
  private readonly log: Logger;

  constructor(private readonly opts: ContainerLogManagerOptions) {
    if (opts.policy.maxFiles < 2) throw new Error('containerLogMaxFiles must be at least 2');
    this.log = opts.log ?? silentLogger;
  }

  async run(signal: AbortSignal): Promise<void> {
    const waker = new Waker();
    while (!signal.aborted) {
      await waker.wait(this.opts.clock, this.opts.monitorIntervalMs, signal);
      if (signal.aborted) return;
      await this.rotateLogs();
    }
  }

  /** One pass: every running container's log, at most maxWorkers at once; never throws. */
  async rotateLogs(): Promise<void> {
    let ids: string[];
    try {
      const { containers } = await this.opts.cri.listContainers({});
      ids = containers.filter((c) => c.state === ContainerState.CONTAINER_RUNNING).map((c) => c.id);
    } catch (err) {
      this.log.error('Failed to list containers', { err: (err as Error).message });
      return;
    }
    const queue = [...ids];
    const worker = async () => {
      for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
        try {
          await this.processContainer(id);
        } catch (err) {
          this.log.error('Failed to rotate log for container', {
            containerID: id,
            err: (err as Error).message,
          });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.opts.maxWorkers, queue.length) }, worker));
  }

  private async processContainer(id: string): Promise<void> {
    const { status } = await this.opts.cri.containerStatus({ containerId: id });
    const path = status?.logPath;
    if (!path) return;
    let size: number;
    try {
      size = (await stat(path)).size;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      // A rotation renamed the file and its reopen failed: ask again, so the container logs again.
      await this.opts.cri.reopenContainerLog({ containerId: id });
      size = (await stat(path)).size;
    }
    if (size < this.opts.policy.maxSizeBytes) return;
    await this.rotateLog(id, path);
  }

  private async rotateLog(id: string, log: string): Promise<void> {
    await this.cleanupUnusedLogs(log);
    // The live file and the one about to be rotated count too: keep maxFiles - 2 older ones.
    const rotated = (await getAllLogs(log)).filter((p) => p !== log);
    const excess = rotated.length - (this.opts.policy.maxFiles - 2);
    for (const p of rotated.slice(0, Math.max(0, excess))) await rm(p, { force: true });
    // The file about to be rotated stays plain (the runtime may still write it until the reopen).
    for (const p of rotated.slice(Math.max(0, excess))) if (!p.endsWith(CompressSuffix)) await compressLog(p);
    await this.rotateLatestLog(id, log);
  }

  /** Leftovers of an interrupted pass: half-written .tmp files, and plain files already compressed. */
  private async cleanupUnusedLogs(log: string): Promise<void> {
    const dir = dirname(log);
    const names = await readdir(dir).catch(() => [] as string[]);
    const mine = names.filter((n) => n.startsWith(`${basename(log)}.`));
    for (const n of mine) {
      if (n.endsWith(TmpSuffix)) await rm(join(dir, n), { force: true });
      else if (!n.endsWith(CompressSuffix) && mine.includes(`${n}${CompressSuffix}`))
        await rm(join(dir, n), { force: true });
    }
  }

  private async rotateLatestLog(id: string, log: string): Promise<void> {
    const rotated = rotatedLogName(log, this.opts.clock.now());
    await rename(log, rotated);
    try {
      await this.opts.cri.reopenContainerLog({ containerId: id });
    } catch (err) {
      // The runtime keeps writing the renamed file: give it its name back, so nothing is lost.
      await rename(rotated, log).catch((e) =>
        this.log.error('Failed to rename rotated log back', { path: rotated, err: (e as Error).message }),
      );
      throw new Error(`failed to reopen container log ${JSON.stringify(id)}: ${(err as Error).message}`);
    }
  }
}
