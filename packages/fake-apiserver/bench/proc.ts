// What the benchmarks read of the apiserver process, from /proc.
import { readdirSync, readFileSync } from 'node:fs';

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
