/** CRI label selectors: every key must be present with exactly that value (an AND of equalities). */
export function matchesLabels(
  labels: Record<string, string>,
  selector: Record<string, string> | undefined,
): boolean {
  if (!selector) return true;
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

/** CRI id filters accept a full id or a unique prefix of one, like containerd's truncated ids. */
export function matchesId(id: string, filterId: string | undefined): boolean {
  return !filterId || id.startsWith(filterId);
}
