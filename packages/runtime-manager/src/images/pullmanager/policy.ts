// imagePullCredentialsVerificationPolicy (KEP-2535): when an image already on the node must be
// checked against the pod's credentials before the pod may use it.
import { parseImageReference } from '@kh/apimachinery';

export const CREDENTIAL_VERIFICATION_POLICIES = [
  'NeverVerify',
  'NeverVerifyPreloadedImages',
  'NeverVerifyAllowlistedImages',
  'AlwaysVerify',
] as const;
export type CredentialVerificationPolicy = (typeof CREDENTIAL_VERIFICATION_POLICIES)[number];

/** The kubelet's default with KubeletEnsureSecretPulledImages on and no policy configured. */
export const DEFAULT_CREDENTIAL_VERIFICATION_POLICY: CredentialVerificationPolicy =
  'NeverVerifyPreloadedImages';

/**
 * Decides whether `image` needs its credentials verified; `pulledByKubelet` is true when a
 * pulled record or a pull intent exists for it (the image is not preloaded).
 */
export type VerificationPolicy = (image: string, pulledByKubelet: boolean) => boolean;

/** The repository without tag or digest, fully qualified: the key records and allowlists use. */
export function repositoryOf(image: string): string {
  const ref = parseImageReference(image);
  return `${ref.domain}/${ref.path}`;
}

/**
 * Why a preloadedImagesVerificationAllowlist entry is invalid, or undefined: a repository
 * without tag or digest, or a prefix ending in "/*" that names at least a registry host.
 */
export function allowlistPatternProblem(pattern: string): string | undefined {
  if (pattern !== pattern.trim()) return 'leading/trailing spaces are not allowed';
  const wildcard = pattern.endsWith('/*');
  const trimmed = wildcard ? pattern.slice(0, -1) : pattern;
  if (trimmed.length === 0) return 'the pattern is too short';
  if (trimmed.includes('*'))
    return "not a valid wildcard pattern, only patterns ending with '/*' are allowed";
  if (wildcard) return trimmed.length === 1 ? 'at least registry hostname is required' : undefined;
  let ref: ReturnType<typeof parseImageReference>;
  try {
    ref = parseImageReference(trimmed);
  } catch (err) {
    return `failed to parse as an image name: ${(err as Error).message}`;
  }
  if (ref.tag !== undefined || ref.digest !== undefined)
    return 'neither tag nor digest is accepted in an image reference';
  if (repositoryOf(trimmed) !== trimmed)
    return 'must be a fully qualified repository (registry host and path)';
  return undefined;
}

export function newVerificationPolicy(
  policy: CredentialVerificationPolicy,
  allowlist: readonly string[] = [],
): VerificationPolicy {
  switch (policy) {
    case 'NeverVerify':
      return () => false;
    case 'NeverVerifyPreloadedImages':
      return (_image, pulledByKubelet) => pulledByKubelet;
    case 'AlwaysVerify':
      return () => true;
    case 'NeverVerifyAllowlistedImages': {
      for (const p of allowlist) {
        const why = allowlistPatternProblem(p);
        if (why) throw new RangeError(`preloadedImagesVerificationAllowlist "${p}": ${why}`);
      }
      const exact = new Set(allowlist.filter((p) => !p.endsWith('/*')));
      const prefixes = allowlist.filter((p) => p.endsWith('/*')).map((p) => p.slice(0, -1));
      return (image) => {
        let repo: string;
        try {
          repo = repositoryOf(image);
        } catch {
          return true;
        }
        return !(exact.has(repo) || prefixes.some((p) => repo.startsWith(p)));
      };
    }
  }
}
