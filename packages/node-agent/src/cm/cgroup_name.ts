// The kubelet's CgroupName: a cgroup as a list of components, independent of the driver. The
// cgroupfs driver joins them into a path; the systemd driver turns them into nested slices
// (kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice), with "-" inside a
// component escaped to "_" because systemd reads "-" as the slice separator.

export type CgroupName = readonly string[];

export const ROOT_CGROUP: CgroupName = [];

/** The node's pods cgroup under cgroupRoot (the kubelet's defaultNodeAllocatableCgroupName). */
export const KUBEPODS_CGROUP = 'kubepods';

/**
 * The cgroupRoot (cgroupfs) under which the agent's `kubepods` is this path: for a harness that
 * knows where its node's pods must land and configures the agent to put them there.
 */
export function cgroupRootForKubepods(kubepods: string): string {
  const suffix = `/${KUBEPODS_CGROUP}`;
  if (!kubepods.endsWith(suffix)) throw new Error(`${kubepods} is not a ${KUBEPODS_CGROUP} cgroup`);
  return kubepods.slice(0, -suffix.length) || '/';
}

/** `/` plus the components joined with `/` (the cgroupfs driver's path). */
export function cgroupNameToCgroupfs(name: CgroupName): string {
  return `/${name.join('/')}`;
}

/** A cgroupfs path (`/a/b`) as components; `/` and '' are the root. */
export function parseCgroupfsToCgroupName(path: string): CgroupName {
  return path.split('/').filter((c) => c !== '');
}

const escapeSystemd = (part: string) => part.replaceAll('-', '_');

/** The leaf slice unit name: components escaped and joined with `-`, plus `.slice`. */
export function cgroupNameToSystemdBasename(name: CgroupName): string {
  return `${name.map(escapeSystemd).join('-')}.slice`;
}

/** The systemd driver's path: every prefix of the name as a slice, nested (systemd's ExpandSlice). */
export function cgroupNameToSystemd(name: CgroupName): string {
  if (name.length === 0) return '/';
  const parts = name.map(escapeSystemd);
  const slices = parts.map((_, i) => `${parts.slice(0, i + 1).join('-')}.slice`);
  return `/${slices.join('/')}`;
}

/** A systemd path (`/a.slice/a-b.slice`) back to components: the leaf slice split on `-`, unescaped. */
export function parseSystemdToCgroupName(path: string): CgroupName {
  const leaf = path
    .split('/')
    .filter((c) => c !== '')
    .at(-1);
  if (!leaf || leaf === '-.slice') return ROOT_CGROUP;
  return leaf
    .replace(/\.slice$/, '')
    .split('-')
    .map((p) => p.replaceAll('_', '-'));
}
