import { docker, explainEngineError } from '../util/docker.js';
import { PACKAGE_LABEL_PREFIX, RELEASE_LABEL } from './build.js';

/** What a node image was built from: its Debian release and the runtime packages it got. */
export interface NodeImageInfo {
  ref: string;
  release: string;
  /** Package name -> the version debootstrap installed (`containerd` -> `1.7.24~ds1-6+deb13u1`). */
  packages: Record<string, string>;
}

/**
 * Reads a node image's release and package versions from its labels (build.ts records them at
 * build time, since a testing release changes under an unchanged recipe hash).
 */
export async function nodeImageInfo(ref: string): Promise<NodeImageInfo> {
  let labels: Record<string, string>;
  try {
    labels = (await docker().getImage(ref).inspect()).Config?.Labels ?? {};
  } catch (err) {
    throw explainEngineError(err);
  }
  const release = labels[RELEASE_LABEL];
  if (!release)
    throw new Error(
      `${ref} is not a node image built by this version of the test kit (no ${RELEASE_LABEL} label)`,
    );
  const packages = Object.fromEntries(
    Object.entries(labels)
      .filter(([k]) => k.startsWith(PACKAGE_LABEL_PREFIX))
      .map(([k, v]) => [k.slice(PACKAGE_LABEL_PREFIX.length), v]),
  );
  return { ref, release, packages };
}
