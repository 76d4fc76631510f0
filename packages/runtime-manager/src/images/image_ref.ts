// Image reference parsing (the distribution reference grammar) and the defaults that depend
// on it: the implicit ":latest" tag and the pull policy a pod gets when it names none.
import type { V1Container } from '@kubernetes/client-node';

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

const pathComponent = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const tagRe = /^[\w][\w.-]{0,127}$/;
const digestRe = /^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$/;
const domainRe =
  /^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]+)?$/;

export class InvalidImageNameError extends Error {
  constructor(
    readonly image: string,
    detail: string,
  ) {
    super(`couldn't parse image name "${image}": invalid reference format: ${detail}`);
    this.name = 'InvalidImageNameError';
  }
}

/** Parses `[domain/]path[:tag][@digest]`, normalising Docker Hub names; throws InvalidImageNameError. */
export function parseImageReference(image: string): ImageReference {
  if (image === '' || image.trim() !== image) throw new InvalidImageNameError(image, 'empty or padded name');
  let rest = image;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!digestRe.test(digest)) throw new InvalidImageNameError(image, `invalid digest "${digest}"`);
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!tagRe.test(tag)) throw new InvalidImageNameError(image, `invalid tag "${tag}"`);
  }
  const parts = rest.split('/');
  let domain = DockerHubDomain;
  const first = parts[0] ?? '';
  if (parts.length > 1 && (first.includes('.') || first.includes(':') || first === 'localhost')) {
    if (!domainRe.test(first)) throw new InvalidImageNameError(image, `invalid registry "${first}"`);
    domain = first;
    parts.shift();
  }
  for (const p of parts) {
    if (!pathComponent.test(p)) {
      throw new InvalidImageNameError(
        image,
        p.toLowerCase() !== p ? 'repository name must be lowercase' : `invalid path component "${p}"`,
      );
    }
  }
  if (domain === 'index.docker.io') domain = DockerHubDomain;
  if (domain === DockerHubDomain && parts.length === 1) parts.unshift('library');
  return { domain, path: parts.join('/'), tag, digest };
}

/** Adds ":latest" to a reference with neither tag nor digest, keeping the user's spelling otherwise. */
export function applyDefaultImageTag(image: string): string {
  const ref = parseImageReference(image);
  return ref.tag === undefined && ref.digest === undefined ? `${image}:${DefaultImageTag}` : image;
}

export type PullPolicy = 'Always' | 'IfNotPresent' | 'Never';

/** The API default: Always for ":latest" or untagged images, IfNotPresent otherwise. */
export function defaultPullPolicy(image: string): PullPolicy {
  const ref = parseImageReference(image);
  if (ref.digest !== undefined && ref.tag === undefined) return 'IfNotPresent';
  return ref.tag === undefined || ref.tag === DefaultImageTag ? 'Always' : 'IfNotPresent';
}

export function pullPolicyOf(container: V1Container): PullPolicy {
  const p = container.imagePullPolicy;
  if (p === 'Always' || p === 'IfNotPresent' || p === 'Never') return p;
  return defaultPullPolicy(container.image ?? '');
}
