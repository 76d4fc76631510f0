import { readFile, realpath } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { FailedPreconditionError, type Mount, MountPropagation } from '@kh/cri-api';

// A bind mount with rslave (HostToContainer) or rshared (Bidirectional) propagation only receives
// what happens on the host if the host mount holding its source is itself a slave or shared mount.
// Docker finds out when the container starts; like containerd, the shim says so at CreateContainer,
// naming the mount to fix.

export interface HostMount {
  mountPoint: string;
  /** Peer group: events propagate both ways ("shared:N"). */
  shared: boolean;
  /** Receives events from a master ("master:N"). */
  slave: boolean;
}

/** mountinfo escapes space, tab, newline and backslash as octal. */
function unescapeOctal(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(Number.parseInt(oct, 8)));
}

/** Parses /proc/<pid>/mountinfo (proc(5)): mount point and propagation of each mount, in mount order. */
export function parseMountInfo(text: string): HostMount[] {
  const mounts: HostMount[] = [];
  for (const line of text.split('\n')) {
    const fields = line.split(' ');
    const separator = fields.indexOf('-');
    if (separator < 6) continue;
    const optional = fields.slice(6, separator);
    mounts.push({
      mountPoint: unescapeOctal(fields[4] ?? ''),
      shared: optional.some((f) => f.startsWith('shared:')),
      slave: optional.some((f) => f.startsWith('master:')),
    });
  }
  return mounts;
}

/** The mount a (real, absolute) path lives on: the deepest mount point above it, the last one mounted there. */
export function mountOf(mounts: HostMount[], path: string): HostMount | undefined {
  let found: HostMount | undefined;
  for (const m of mounts) {
    const rel = relative(m.mountPoint, path);
    const inside = rel !== '..' && !rel.startsWith('../') && !rel.startsWith('/');
    if (inside && (!found || m.mountPoint.length >= found.mountPoint.length)) found = m;
  }
  return found;
}

/** Why `mount` cannot have its propagation on `host`, or undefined when it can. Pure. */
export function propagationProblem(mount: Mount, host: HostMount): string | undefined {
  const where = `mount ${JSON.stringify(mount.hostPath)} -> ${JSON.stringify(mount.containerPath)}`;
  if (mount.propagation === MountPropagation.PROPAGATION_BIDIRECTIONAL && !host.shared) {
    return `${where} asks for bidirectional (rshared) propagation, but the host mount ${JSON.stringify(host.mountPoint)} holding it is not shared (mount --make-rshared it)`;
  }
  if (mount.propagation === MountPropagation.PROPAGATION_HOST_TO_CONTAINER && !host.shared && !host.slave) {
    return `${where} asks for host-to-container (rslave) propagation, but the host mount ${JSON.stringify(host.mountPoint)} holding it is neither shared nor slave (mount --make-rshared it)`;
  }
  return undefined;
}

/** The real path of `path`, or of its deepest existing ancestor: Docker creates a missing source. */
async function existingRealPath(path: string): Promise<string> {
  for (let p = path; ; p = dirname(p)) {
    try {
      return join(await realpath(p), relative(p, path));
    } catch {
      if (p === dirname(p)) return path;
    }
  }
}

/**
 * Checks the host side of every mount that asks for propagation, in the shim's mount namespace,
 * which is the host's (the shim runs beside dockerd, as ExecSync's timeout already requires).
 */
export async function checkMountPropagation(mounts: Mount[]): Promise<void> {
  const propagating = mounts.filter(
    (m) =>
      m.propagation === MountPropagation.PROPAGATION_BIDIRECTIONAL ||
      m.propagation === MountPropagation.PROPAGATION_HOST_TO_CONTAINER,
  );
  if (propagating.length === 0) return;
  const hostMounts = parseMountInfo(await readFile('/proc/self/mountinfo', 'utf8'));
  for (const m of propagating) {
    const host = mountOf(hostMounts, await existingRealPath(m.hostPath));
    const problem = host && propagationProblem(m, host);
    if (problem) throw new FailedPreconditionError(problem);
  }
}
