import { Quantity } from '@kh/apimachinery';
import type { KObject } from '../meta/object.js';

function defaultProbe(p: KObject | undefined) {
  if (p === undefined || p === null) return;
  p.timeoutSeconds ??= 1;
  p.periodSeconds ??= 10;
  p.successThreshold ??= 1;
  p.failureThreshold ??= 3;
  if (p.httpGet) {
    p.httpGet.path ??= '/';
    p.httpGet.scheme ??= 'HTTP';
  }
}

/** IfNotPresent for a pinned tag or digest; Always for :latest or no tag. */
export function defaultPullPolicy(image: string): string {
  if (image.includes('@')) return 'IfNotPresent';
  const lastSlash = image.lastIndexOf('/');
  const colon = image.indexOf(':', lastSlash + 1);
  if (colon < 0) return 'Always';
  return image.slice(colon + 1) === 'latest' ? 'Always' : 'IfNotPresent';
}

function defaultContainer(c: KObject) {
  if (typeof c.image === 'string' && c.image !== '') c.imagePullPolicy ??= defaultPullPolicy(c.image);
  c.terminationMessagePath ??= '/dev/termination-log';
  c.terminationMessagePolicy ??= 'File';
  c.resources ??= {};
  // Limits without requests imply requests equal to the limits.
  if (c.resources.limits) {
    c.resources.requests = { ...c.resources.limits, ...(c.resources.requests ?? {}) };
  }
  for (const p of c.ports ?? []) p.protocol ??= 'TCP';
  for (const e of c.env ?? []) if (e.valueFrom?.fieldRef) e.valueFrom.fieldRef.apiVersion ??= 'v1';
  defaultProbe(c.livenessProbe);
  defaultProbe(c.readinessProbe);
  defaultProbe(c.startupProbe);
}

/** Kubernetes' SetDefaults_Pod / PodSpec / Container plus the ServiceAccount and DefaultTolerationSeconds admission. */
export function defaultPod(pod: KObject) {
  pod.spec ??= {};
  const s = pod.spec;
  s.restartPolicy ??= 'Always';
  s.terminationGracePeriodSeconds ??= 30;
  s.dnsPolicy ??= 'ClusterFirst';
  s.securityContext ??= {};
  s.schedulerName ??= 'default-scheduler';
  s.enableServiceLinks ??= true;
  // The ServiceAccount admission plugin leaves mirror pods without one (NodeRestriction refuses
  // a mirror pod that names a service account).
  if (pod.metadata?.annotations?.['kubernetes.io/config.mirror'] === undefined) {
    s.serviceAccountName ??= s.serviceAccount ?? 'default';
    s.serviceAccount = s.serviceAccountName;
  }
  for (const c of s.containers ?? []) defaultContainer(c);
  for (const c of s.initContainers ?? []) defaultContainer(c);
  for (const c of s.ephemeralContainers ?? []) defaultContainer(c);
  for (const v of s.volumes ?? []) {
    if (v.secret) v.secret.defaultMode ??= 420;
    if (v.configMap) v.configMap.defaultMode ??= 420;
    if (v.downwardAPI) v.downwardAPI.defaultMode ??= 420;
    if (v.projected) v.projected.defaultMode ??= 420;
    if (v.hostPath) v.hostPath.type ??= '';
    const sources = Object.keys(v).filter((k) => k !== 'name');
    if (sources.length === 0) v.emptyDir = {};
  }
  s.tolerations ??= [];
  for (const key of ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable']) {
    const tolerated = s.tolerations.some(
      (t: KObject) =>
        (t.key === key || (t.key === undefined && t.operator === 'Exists')) &&
        (!t.effect || t.effect === 'NoExecute'),
    );
    if (!tolerated)
      s.tolerations.push({ key, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 });
  }
}

/** The QoS class the kubelet and the apiserver derive from requests and limits. */
export function qosClass(spec: KObject): 'Guaranteed' | 'Burstable' | 'BestEffort' {
  const containers: KObject[] = [...(spec.containers ?? []), ...(spec.initContainers ?? [])];
  // Only non-zero cpu and memory count, compared as quantities (1 == 1000m), as GetPodQOS.
  const compute = (list: KObject | undefined) => {
    const out = new Map<string, Quantity>();
    for (const r of ['cpu', 'memory']) {
      const q = list?.[r] === undefined ? undefined : Quantity.tryFromJSON(list[r]);
      if (q !== undefined && !q.isZero()) out.set(r, q);
    }
    return out;
  };
  let any = false;
  let guaranteed = true;
  for (const c of containers) {
    const req = compute(c.resources?.requests);
    const lim = compute(c.resources?.limits);
    if (req.size > 0 || lim.size > 0) any = true;
    if (lim.size < 2) guaranteed = false;
    for (const [r, q] of req) if (lim.get(r)?.cmp(q) !== 0) guaranteed = false;
  }
  if (!any) return 'BestEffort';
  return guaranteed ? 'Guaranteed' : 'Burstable';
}
