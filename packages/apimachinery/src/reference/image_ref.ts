// Image references (the distribution reference grammar, `[domain/]path[:tag][@digest]`) and the
// Docker Hub defaults every runtime applies: "busybox" is docker.io/library/busybox:latest.

export const DefaultImageTag = 'latest';
export const DockerHubDomain = 'docker.io';

export interface ImageReference {
  /** Registry host[:port], docker.io when the name has none. */
  domain: string;
  /** Repository path, with "library/" added for single-name Docker Hub images. */
  path: string;
  tag?: string;
  digest?: string;
}

export class InvalidImageNameError extends Error {
  constructor(
    readonly image: string,
    detail: string,
  ) {
    super(`couldn't parse image name "${image}": invalid reference format: ${detail}`);
    this.name = 'InvalidImageNameError';
  }
}

interface Parts {
  /** The name as written, without tag and digest. */
  name: string;
  /** The registry host as written, or undefined when the first component is not one. */
  host?: string;
  /** Path components after the host. */
  path: string[];
  tag?: string;
  digest?: string;
}

/**
 * Cuts a reference into its parts without judging them. The first path component is a
 * registry host only when there is more than one and it looks like a host (has a dot or a port,
 * or is "localhost"); "kh/pause" is a Docker Hub repository, "localhost/pause" is not.
 */
function split(ref: string): Parts {
  const at = ref.indexOf('@');
  const digest = at >= 0 ? ref.slice(at + 1) : undefined;
  let name = at >= 0 ? ref.slice(0, at) : ref;
  let tag: string | undefined;
  const colon = name.lastIndexOf(':');
  if (colon > name.lastIndexOf('/')) {
    tag = name.slice(colon + 1);
    name = name.slice(0, colon);
  }
  const path = name.split('/');
  const first = path[0] ?? '';
  const isHost = path.length > 1 && (first.includes('.') || first.includes(':') || first === 'localhost');
  return { name, host: isHost ? (path.shift() as string) : undefined, path, tag, digest };
}

const pathComponentRe = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const tagRe = /^[\w][\w.-]{0,127}$/;
const digestRe = /^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$/;
const domainRe =
  /^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]+)?$/;

/** Parses and validates a reference, normalising Docker Hub names; throws InvalidImageNameError. */
export function parseImageReference(image: string): ImageReference {
  if (image === '' || image.trim() !== image) throw new InvalidImageNameError(image, 'empty or padded name');
  const { host, path, tag, digest } = split(image);
  if (digest !== undefined && !digestRe.test(digest)) {
    throw new InvalidImageNameError(image, `invalid digest "${digest}"`);
  }
  if (tag !== undefined && !tagRe.test(tag)) throw new InvalidImageNameError(image, `invalid tag "${tag}"`);
  if (host !== undefined && !domainRe.test(host)) {
    throw new InvalidImageNameError(image, `invalid registry "${host}"`);
  }
  for (const p of path) {
    if (!pathComponentRe.test(p)) {
      throw new InvalidImageNameError(
        image,
        p.toLowerCase() !== p ? 'repository name must be lowercase' : `invalid path component "${p}"`,
      );
    }
  }
  const domain = host === undefined || host === 'index.docker.io' ? DockerHubDomain : host;
  if (domain === DockerHubDomain && path.length === 1) path.unshift('library');
  return { domain, path: path.join('/'), tag, digest };
}

/**
 * The fully qualified name a runtime reports for a reference, as containerd's CRI does:
 * `busybox` -> `docker.io/library/busybox:latest`, `kh/pause:1` -> `docker.io/kh/pause:1`,
 * `localhost:5000/x@sha256:…` unchanged. A reference without tag or digest gets ":latest"; one
 * with a digest keeps what it has. It does not validate: a malformed name comes back qualified
 * the same way, for the runtime to reject or not find.
 */
export function normalizeImageRef(ref: string): string {
  const { host, path, tag, digest } = split(ref);
  const repository =
    host !== undefined
      ? [host, ...path]
      : [DockerHubDomain, ...(path.length === 1 ? ['library'] : []), ...path];
  let out = repository.join('/');
  if (tag !== undefined) out += `:${tag}`;
  if (digest !== undefined) out += `@${digest}`;
  return tag === undefined && digest === undefined ? `${out}:${DefaultImageTag}` : out;
}

/** A reference cut into repository (as written, host included), tag and digest, without validation. */
export function splitImageReference(ref: string): { repository: string; tag?: string; digest?: string } {
  const { name, tag, digest } = split(ref);
  return { repository: name, tag, digest };
}

/** The registry host a reference pulls from ("docker.io" when it names none), as written. */
export function registryHostOf(ref: string): string {
  return split(ref).host ?? DockerHubDomain;
}
