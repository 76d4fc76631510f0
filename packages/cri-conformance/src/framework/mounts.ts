import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';

/** Mount points at or under `dir` in this process's mount namespace (mountinfo escapes spaces as octal). */
async function mountsUnder(dir: string): Promise<string[]> {
  return (await readFile('/proc/self/mountinfo', 'utf8'))
    .split('\n')
    .map((line) =>
      line
        .split(' ')[4]
        ?.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8))),
    )
    .filter((m): m is string => m === dir || m?.startsWith(`${dir}/`) === true);
}

/** Lazily unmounts everything at or under `dir`, deepest first, so that the directory can be removed. */
export async function unmountAll(dir: string): Promise<void> {
  const mounts = (await mountsUnder(dir)).sort((a, b) => b.length - a.length);
  for (const m of mounts) await promisify(execFile)('umount', ['--lazy', m]).catch(() => undefined);
}
