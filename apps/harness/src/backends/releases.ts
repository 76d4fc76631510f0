// The node images' Debian releases as matrix columns. Each release's node image carries its own
// containerd, Docker, runc, crun and gVisor, so a column is "this runtime at this version", named
// as runtime authors ask: containerd-2.1, docker-26. The versions are Debian's (PLATFORM.md); the
// version a node really runs is read from its CRI Version and from the image's package labels.
import { DEFAULT_NODE_RELEASE, type NodeRelease } from '@kh/testkit';

export interface ReleaseRuntimes {
  /** Debian's version number, for descriptions. */
  debian: string;
  /** containerd's major.minor in this release. */
  containerd: string;
  /** dockerd's version as Docker names its lines: 20.10, then 23, 24, ... */
  docker: string;
}

export const RELEASE_RUNTIMES: Readonly<Record<NodeRelease, ReleaseRuntimes>> = {
  forky: { debian: '14 forky (testing)', containerd: '2.1', docker: '28' },
  trixie: { debian: '13 trixie', containerd: '1.7', docker: '26' },
  bookworm: { debian: '12 bookworm', containerd: '1.6', docker: '20.10' },
};

/** Newest first, as the columns appear. */
export const COLUMN_RELEASES: readonly NodeRelease[] = ['forky', 'trixie', 'bookworm'];

/** The plain names (`containerd`) go to the default release's column; other columns have none. */
export const aliasesFor = (release: NodeRelease, ...plain: string[]): string[] =>
  release === DEFAULT_NODE_RELEASE ? plain : [];

/**
 * Whether a CRI runtime version (`1.7.24~ds1`, `26.1.5+dfsg1`) is the line a column names (`1.7`,
 * `26`). A testing release moves under an unchanged image recipe; a mismatch is then reported, so
 * the column's name never silently claims a version it did not run.
 */
export function versionMatches(expected: string, runtimeVersion: string): boolean {
  const plain = runtimeVersion.replace(/^v/, '');
  return plain === expected || plain.startsWith(`${expected}.`);
}
