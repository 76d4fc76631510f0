import { createHash } from 'node:crypto';

/**
 * Normalises an image reference the way containerd's CRI does, so the fake answers to the same
 * names: "busybox" -> "docker.io/library/busybox:latest", "kh/pause:1" -> "docker.io/kh/pause:1".
 * References by digest keep the digest and get no tag.
 */
export function normalizeImageRef(ref: string): string {
  const [name, digest] = ref.split('@', 2) as [string, string | undefined];
  const firstSlash = name.indexOf('/');
  const first = firstSlash === -1 ? '' : name.slice(0, firstSlash);
  // A first path component counts as a registry host only if it looks like one.
  const hasDomain = first.includes('.') || first.includes(':') || first === 'localhost';
  let full = hasDomain ? name : firstSlash === -1 ? `docker.io/library/${name}` : `docker.io/${name}`;
  const lastPart = full.slice(full.lastIndexOf('/') + 1);
  if (digest) return `${full}@${digest}`;
  if (!lastPart.includes(':')) full = `${full}:latest`;
  return full;
}

/** Repository part of a normalised reference, without tag or digest. */
export function repositoryOf(normalizedRef: string): string {
  const noDigest = normalizedRef.split('@', 1)[0]!;
  const slash = noDigest.lastIndexOf('/');
  const colon = noDigest.lastIndexOf(':');
  return colon > slash ? noDigest.slice(0, colon) : noDigest;
}

export function sha256(text: string): string {
  return `sha256:${createHash('sha256').update(text).digest('hex')}`;
}
