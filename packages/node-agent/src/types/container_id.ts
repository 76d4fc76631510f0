// Container IDs come in two forms: the API's `<runtime>://<id>` (containerStatuses[].containerID)
// and the runtime's bare id. Probe results, readiness and status updates compare them bare.

/** Accepts `containerd://abc` (the API form) or `abc` (the runtime's). */
export function bareContainerId(id: string): string {
  const i = id.indexOf('://');
  return i < 0 ? id : id.slice(i + 3);
}
