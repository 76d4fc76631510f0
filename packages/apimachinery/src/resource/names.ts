// Resource names as core/v1's helpers classify them: native resources live in the kubernetes.io
// namespace (an unprefixed name is implicitly there); extended resources are every other
// qualified name, such as a device plugin's or one an operator patched into node capacity.
import { qualifiedNameProblem } from '../validation/qualified_name.js';

const DEFAULT_NAMESPACE_PREFIX = 'kubernetes.io/';
/** Quota's prefix for requests; a resource named so would read as a quota name. */
const REQUESTS_PREFIX = 'requests.';

export function isNativeResource(name: string): boolean {
  return !name.includes('/') || name.includes(DEFAULT_NAMESPACE_PREFIX);
}

export function isExtendedResourceName(name: string): boolean {
  if (isNativeResource(name) || name.startsWith(REQUESTS_PREFIX)) return false;
  // It must still be a qualified name once quota prefixes it.
  return qualifiedNameProblem(`${REQUESTS_PREFIX}${name}`) === undefined;
}

export function isHugePageResourceName(name: string): boolean {
  return name.startsWith('hugepages-');
}
