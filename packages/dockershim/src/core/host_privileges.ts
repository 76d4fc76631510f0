import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

// What a privileged container can be given on this host. Docker's `Privileged: true` asks the kernel
// for every capability Docker knows; where the host's bounding set lacks one (CAP_SYS_RESOURCE on
// this project's machines) runc fails with "unable to apply caps". containerd instead grants what
// its own process holds, so the shim reads the bounding set and asks Docker for no more.

/** Capability names by number (linux/capability.h), without the CAP_ prefix Docker accepts either way. */
export const CAPABILITY_NAMES = [
  'CHOWN',
  'DAC_OVERRIDE',
  'DAC_READ_SEARCH',
  'FOWNER',
  'FSETID',
  'KILL',
  'SETGID',
  'SETUID',
  'SETPCAP',
  'LINUX_IMMUTABLE',
  'NET_BIND_SERVICE',
  'NET_BROADCAST',
  'NET_ADMIN',
  'NET_RAW',
  'IPC_LOCK',
  'IPC_OWNER',
  'SYS_MODULE',
  'SYS_RAWIO',
  'SYS_CHROOT',
  'SYS_PTRACE',
  'SYS_PACCT',
  'SYS_ADMIN',
  'SYS_BOOT',
  'SYS_NICE',
  'SYS_RESOURCE',
  'SYS_TIME',
  'SYS_TTY_CONFIG',
  'MKNOD',
  'LEASE',
  'AUDIT_WRITE',
  'AUDIT_CONTROL',
  'SETFCAP',
  'MAC_OVERRIDE',
  'MAC_ADMIN',
  'SYSLOG',
  'WAKE_ALARM',
  'BLOCK_SUSPEND',
  'AUDIT_READ',
  'PERFMON',
  'BPF',
  'CHECKPOINT_RESTORE',
] as const;

/**
 * Names of the capabilities the kernel knows (0..cap_last_cap) that a bounding set (the hex mask of
 * /proc/<pid>/status CapBnd) lacks. Empty: the host can grant everything. Pure, for unit tests.
 */
export function missingCapabilities(capBndHex: string, lastCap: number): string[] {
  const bounding = BigInt(`0x${capBndHex}`);
  const missing: string[] = [];
  for (let bit = 0; bit <= lastCap; bit++) {
    const name = CAPABILITY_NAMES[bit];
    // A capability newer than this table has no name Docker could take either: nothing to drop.
    if (name && (bounding & (1n << BigInt(bit))) === 0n) missing.push(name);
  }
  return missing;
}

let cachedMissing: Promise<string[]> | undefined;

/** The capabilities this host cannot grant, read once: the shim runs beside dockerd with its bounding set. */
function hostMissingCapabilities(): Promise<string[]> {
  cachedMissing ??= (async () => {
    const status = await readFile('/proc/self/status', 'utf8');
    const capBnd = /^CapBnd:\s*([0-9a-f]+)$/m.exec(status)?.[1];
    if (!capBnd) throw new Error('no CapBnd in /proc/self/status');
    const lastCap = Number((await readFile('/proc/sys/kernel/cap_last_cap', 'utf8')).trim());
    return missingCapabilities(capBnd, lastCap);
  })();
  return cachedMissing;
}

// Capabilities the Engine rejected by name. Docker 20.10 cannot name PERFMON, BPF and CHECKPOINT_RESTORE,
// so its ALL never includes them; Docker 23 and later know only the capabilities of their own bounding
// set, so their ALL (and Privileged) never includes one the host lacks. Either way there is nothing to drop.
const unknownToDocker = new Set<string>();

/**
 * The capability an Engine error rejects by name, without the CAP_ prefix: Docker 20.10's
 * `unknown capability: "CAP_BPF"`, or Docker 23+'s `capability not supported by your kernel or not
 * available in the current environment: "CAP_SYS_RESOURCE"`. Undefined for any other error.
 */
export function rejectedCapability(message: string): string | undefined {
  return /(?:unknown capability|not available in the current environment): "?(?:CAP_)?(\w+)"?/.exec(
    message,
  )?.[1];
}

/** The capabilities to drop from Docker's ALL: those the host lacks, but for the ones Docker cannot name. */
async function capabilitiesToDrop(): Promise<string[]> {
  return (await hostMissingCapabilities()).filter((c) => !unknownToDocker.has(c));
}

/**
 * Runs `create` with the capabilities to drop; when the Engine rejects one of them by name
 * (rejectedCapability), learns it and runs `create` again without it.
 */
export async function withCapabilitiesToDrop<T>(create: (drop: string[]) => Promise<T>): Promise<T> {
  for (;;) {
    const drop = await capabilitiesToDrop();
    try {
      return await create(drop);
    } catch (err) {
      const name = rejectedCapability(String((err as Error)?.message));
      if (!name || !drop.includes(name)) throw err;
      unknownToDocker.add(name);
    }
  }
}

// Directories under /dev that hold no device a privileged container should get as a node of its
// own: its pts/shm/mqueue are its own mounts (the same list runc uses for privileged containers).
const SKIPPED_DEV_DIRS = new Set(['pts', 'shm', 'fd', 'mqueue', '.lxc', '.lxd-mounts', '.udev']);

/** Every character and block device under `dir` (the host's /dev), walked on each call as devices come and go. */
export async function hostDevices(dir = '/dev'): Promise<string[]> {
  const found: string[] = [];
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory()) {
      if (!SKIPPED_DEV_DIRS.has(e.name)) found.push(...(await hostDevices(path)));
    } else if ((e.isCharacterDevice() || e.isBlockDevice()) && e.name !== 'console') {
      found.push(path);
    }
  }
  return found;
}
