import { open, readFile, rm } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Runs `fn` while holding an exclusive lock file, so that test processes running in parallel
 * (turbo runs packages concurrently) build an image once instead of racing. A lock left by a
 * dead process is taken over.
 */
export async function withFileLock<T>(
  path: string,
  fn: () => Promise<T>,
  onWait: (holderPid: number) => void = () => {},
): Promise<T> {
  let announced = false;
  for (;;) {
    try {
      const handle = await open(path, 'wx');
      await handle.writeFile(String(process.pid));
      await handle.close();
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = Number((await readFile(path, 'utf8').catch(() => '')).trim());
      if (holder && !alive(holder)) {
        await rm(path, { force: true });
        continue;
      }
      if (!announced && holder) onWait(holder);
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
