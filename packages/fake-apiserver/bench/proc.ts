// What the benchmarks read of the apiserver process, from /proc.
import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { READY_LINE } from '@kh/fake-apiserver/command';

/** The URL the apiserver child prints in its ready line; rejects with its stderr if it exits first. */
export function servingUrl(child: ChildProcess): Promise<string> {
  const ready = new RegExp(`${READY_LINE} (\\S+)`);
  return new Promise<string>((resolve, reject) => {
    let err = '';
    child.stderr?.on('data', (c: Buffer) => {
      err += c.toString();
      const m = ready.exec(err);
      if (m) resolve(m[1]!);
    });
    child.on('exit', (code) => reject(new Error(`apiserver exited ${code}: ${err}`)));
  });
}

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
