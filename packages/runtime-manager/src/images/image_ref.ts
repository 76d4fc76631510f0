// The kubelet's defaults that depend on an image reference: the implicit ":latest" tag and the
// pull policy a pod gets when it names none. The grammar itself is @kh/apimachinery's.
import { DefaultImageTag, parseImageReference } from '@kh/apimachinery';
import type { V1Container } from '@kubernetes/client-node';

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
