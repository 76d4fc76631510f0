// What the benchmarks read of the apiserver process, from /proc.
import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';

/** VmRSS / VmHWM of a process. */
export function memory(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) * 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}

/** utime + stime of a process (clock ticks of 1/100 s on Linux). */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Open file descriptors of a process (sockets, files, pipes): its open handles. */
export function openHandles(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

/** What a bench has running: the apiserver and its directory, removed however the bench ends. */
export interface Live {
  child?: ChildProcess;
  dataDir?: string;
}

/** Kills the child and removes the directory at exit and on SIGINT/SIGTERM/SIGHUP. */
export function cleanUpOnExit(): { live: Live; cleanup: () => void } {
  const live: Live = {};
  const cleanup = () => {
    live.child?.kill('SIGKILL');
    if (live.dataDir) rmSync(live.dataDir, { recursive: true, force: true });
  };
  process.on('exit', cleanup);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(sig, () => {
      cleanup();
      process.exit(130);
    });
  }
  return { live, cleanup };
}
