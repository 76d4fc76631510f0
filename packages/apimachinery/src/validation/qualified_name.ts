// A qualified name (label, annotation and taint keys, resource names): an optional lowercase DNS
// subdomain prefix and '/', then a name part of at most 63 characters, as apimachinery's
// validation.IsQualifiedName checks it.
const NAME_PART = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Why `name` is not a qualified name, or undefined when it is. */
export function qualifiedNameProblem(name: string): string | undefined {
  const parts = name.split('/');
  if (parts.length > 2)
    return "a qualified name must consist of an optional DNS subdomain prefix and '/' and a name";
  const [a, b] = parts as [string, string | undefined];
  const namePart = b ?? a;
  if (b !== undefined && (a.length === 0 || a.length > 253 || !DNS_SUBDOMAIN.test(a))) {
    return 'prefix part must be a lowercase DNS subdomain of at most 253 characters';
  }
  if (!NAME_PART.test(namePart)) {
    return "name part must be 63 characters or less, consist of alphanumeric characters, '-', '_' or '.', and begin and end with an alphanumeric character";
  }
  return undefined;
}
