// Writes a volume's files the way the kubelet's AtomicWriter does, so a process reading the
// volume never sees half an update: the files go into a new timestamped directory
// (`..2026_01_01_00_00_00.123456789`), the `..data` symlink is swapped to it with one rename,
// and each top-level name is a symlink through `..data`. An unchanged payload writes nothing.
import { randomBytes } from 'node:crypto';
import {
  chmod,
  lstat,
  mkdir,
  readdir,
  readFile,
  readlink,
  rename,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';

export interface FileProjection {
  data: Buffer;
  mode: number;
}

/** Relative path -> contents and mode. */
export type Payload = Map<string, FileProjection>;

const DATA_DIR = '..data';
const DATA_TMP = '..data_tmp';

/** Rejects what could escape the volume: absolute paths, `..` segments, `..`-prefixed names. */
export function validatePayloadPath(path: string): void {
  if (path === '' || posix.isAbsolute(path)) throw new Error(`invalid path "${path}": must be relative`);
  const parts = path.split('/');
  if (parts.includes('..')) throw new Error(`invalid path "${path}": must not contain '..'`);
  if (parts[0]!.startsWith('..')) throw new Error(`invalid path "${path}": must not start with '..'`);
}

function timestampDirName(now: Date): string {
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  // Milliseconds, then random digits where the kubelet has nanoseconds: two writes never collide.
  const ns = `${p(now.getUTCMilliseconds(), 3)}${p(randomBytes(3).readUIntBE(0, 3) % 1_000_000, 6)}`;
  return `..${now.getUTCFullYear()}_${p(now.getUTCMonth() + 1)}_${p(now.getUTCDate())}_${p(now.getUTCHours())}_${p(now.getUTCMinutes())}_${p(now.getUTCSeconds())}.${ns}`;
}

/** `ignoredBits`: mode bits another writer (fsGroup ownership) adds, which are no change. */
async function unchanged(dir: string, payload: Payload, ignoredBits: number): Promise<boolean> {
  let current: string;
  try {
    current = join(dir, await readlink(join(dir, DATA_DIR)));
  } catch {
    return false;
  }
  const files = await listFiles(current);
  if (files.length !== payload.size) return false;
  for (const f of files) {
    const want = payload.get(f);
    if (!want) return false;
    const [data, st] = await Promise.all([readFile(join(current, f)), stat(join(current, f))]);
    if (!data.equals(want.data) || (st.mode & 0o777 & ~ignoredBits) !== (want.mode & ~ignoredBits))
      return false;
  }
  return true;
}

async function listFiles(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...(await listFiles(join(dir, e.name), rel)));
    else out.push(rel);
  }
  return out;
}

/**
 * Projects `payload` into `dir`; true when something changed. `setPerms` runs on the volume once
 * the new files are written and before they become visible (the kubelet's fsGroup ownership).
 */
export async function writePayload(
  dir: string,
  payload: Payload,
  now = new Date(),
  setPerms?: (dir: string) => Promise<void>,
): Promise<boolean> {
  for (const p of payload.keys()) validatePayloadPath(p);
  await mkdir(dir, { recursive: true });
  // The group bits are setPerms' to set: without them a pod with fsGroup would be rewritten on every refresh.
  if (await unchanged(dir, payload, setPerms ? 0o070 : 0)) return false;
  const old = await readlink(join(dir, DATA_DIR)).catch(() => undefined);

  const tsName = timestampDirName(now);
  const tsDir = join(dir, tsName);
  await mkdir(tsDir, { mode: 0o755 });
  for (const [path, f] of payload) {
    const file = join(tsDir, path);
    await mkdir(dirname(file), { recursive: true, mode: 0o755 });
    await writeFile(file, f.data, { mode: f.mode });
    // writeFile's mode is masked by the umask; the projection's mode is exact.
    await chmod(file, f.mode);
  }
  await setPerms?.(dir);
  await rm(join(dir, DATA_TMP), { force: true });
  await symlink(tsName, join(dir, DATA_TMP));
  await rename(join(dir, DATA_TMP), join(dir, DATA_DIR));

  // User-visible names: one symlink per top-level entry, through ..data.
  const top = new Set([...payload.keys()].map((p) => p.split('/')[0]!));
  for (const name of top) {
    const link = join(dir, name);
    const existing = await lstat(link).catch(() => undefined);
    if (existing?.isSymbolicLink()) continue;
    if (existing) await rm(link, { recursive: true, force: true });
    await symlink(join(DATA_DIR, name), link);
  }
  for (const e of await readdir(dir)) {
    if (!e.startsWith('..') && !top.has(e)) await rm(join(dir, e), { recursive: true, force: true });
  }
  if (old && old !== tsName) await rm(join(dir, old), { recursive: true, force: true });
  return true;
}
