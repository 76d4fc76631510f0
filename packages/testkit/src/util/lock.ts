import { open, readFile, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** What a lock file holds: `<pid> <hostname>` (older files: the pid alone, taken as this host's). */
function parseHolder(text: string): { pid: number; host: string } | undefined {
  const [pid, host = hostname()] = text.trim().split(/\s+/);
  return Number(pid) > 0 ? { pid: Number(pid), host } : undefined;
}

/**
 * Runs `fn` while holding an exclusive lock file, so that processes on one machine (turbo's
 * parallel test packages, several harness runs) take turns: image builds, a host resource such
 * as the disk. The file names its holder's pid and host; a lock whose holder died on this host is
 * taken over. A holder on another host (a lock directory shared between machines) is waited for,
 * since its liveness cannot be checked from here.
 */
export async function withFileLock<T>(
  path: string,
  fn: () => Promise<T>,
  onWait: (holderPid: number, holderHost: string) => void = () => {},
): Promise<T> {
  let announced = false;
  for (;;) {
    try {
      const handle = await open(path, 'wx');
      await handle.writeFile(`${process.pid} ${hostname()}`);
      await handle.close();
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const text = await readFile(path, 'utf8').catch(() => '');
      const holder = parseHolder(text);
      if (holder && holder.host === hostname() && !alive(holder.pid)) {
        // Only the file that named the dead holder goes: another waiter may have replaced it.
        if ((await readFile(path, 'utf8').catch(() => '')) === text) await rm(path, { force: true });
        continue;
      }
      if (!announced && holder) onWait(holder.pid, holder.host);
      announced = true;
      await sleep(500);
    }
  }
  try {
    return await fn();
  } finally {
    await rm(path, { force: true });
  }
}
