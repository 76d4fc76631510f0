// Container logs as the manager lays them out and reads them back (the kubelet's
// kuberuntime_logs.go and its log path helpers): one directory per pod under the log root, one
// `<container>/<restartCount>.log` per container instance in it, in the CRI log format
// (`<time> <stream> <P|F> <text>` per line). The restart count of a container whose statuses
// are all gone comes back from those file names; a removed container takes its file along.
import { open, readdir, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { podUid } from './labels.js';

/** /var/log/pods/<namespace>_<name>_<uid> */
export function podLogDir(root: string, namespace: string, name: string, uid: string): string {
  return join(root, `${namespace}_${name}_${uid}`);
}

export function podLogDirOf(root: string, pod: V1Pod): string {
  return podLogDir(root, pod.metadata?.namespace ?? '', pod.metadata?.name ?? '', podUid(pod));
}

/** A container instance's log file, relative to its pod's log directory (the CRI LogPath). */
export function containerLogPath(containerName: string, restartCount: number): string {
  return join(containerName, `${restartCount}.log`);
}

/** When no status of the container survives, the highest `<n>.log` in its log dir gives the count. */
export async function restartCountFromLogDir(dir: string): Promise<number> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return 0;
  }
  let max = -1;
  for (const n of names) {
    const m = /^(\d+)\.log$/.exec(n);
    if (m) max = Math.max(max, Number(m[1]));
  }
  return max + 1;
}

/**
 * Removes a container's log file and its rotated files (`<log>.<time>[.gz]`, the container log
 * manager's); one already gone is not an error.
 */
export async function removeContainerLog(path: string): Promise<void> {
  const dir = dirname(path);
  const rotated = (await readdir(dir).catch(() => [] as string[])).filter((n) =>
    n.startsWith(`${basename(path)}.`),
  );
  for (const n of rotated) await rm(join(dir, n), { force: true });
  await rm(path, { force: true });
}

/** The last `max` bytes of a file. */
export async function readTail(path: string, max: number): Promise<Buffer> {
  const fh = await open(path, 'r');
  try {
    const { size } = await fh.stat();
    const start = Math.max(0, size - max);
    const buf = Buffer.alloc(size - start);
    const { bytesRead } = await fh.read(buf, 0, buf.length, start);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

/**
 * Message text from CRI log lines (`<time> <stream> <P|F> <text>`): partial (P) lines join the
 * next line; lines in another format are kept whole. Returns complete lines in order, then any
 * partial text the log ends with. With `newlines`, each complete line keeps its newline and the
 * partial end has none: the bytes the container wrote, as the kubelet's ReadLogs gives them.
 */
export function parseCriLog(text: string, opts: { newlines?: boolean } = {}): string[] {
  const nl = opts.newlines ? '\n' : '';
  const out: string[] = [];
  let partial = '';
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const m = /^\S+ (stdout|stderr) ([PF]) (.*)$/s.exec(line) ?? /^\S+ (stdout|stderr) ([PF])$/.exec(line);
    if (!m) {
      out.push(line + nl);
      continue;
    }
    partial += m[3] ?? '';
    if (m[2] === 'F') {
      out.push(partial + nl);
      partial = '';
    }
  }
  if (partial) out.push(partial);
  return out;
}
