// The authorization verb of an HTTP request on a single object or subresource, as kube-apiserver
// and the kubelet both derive it (list and watch are the apiserver's own refinements of `get`).
const METHOD_VERBS: Record<string, string> = {
  GET: 'get',
  HEAD: 'get',
  POST: 'create',
  PUT: 'update',
  PATCH: 'patch',
  DELETE: 'delete',
};

/** `POST` → `create`; an unknown method is its own lower-cased name; none is a GET. */
export function verbForMethod(method: string | undefined): string {
  const m = method ?? 'GET';
  return METHOD_VERBS[m] ?? m.toLowerCase();
}
