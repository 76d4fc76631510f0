// The pod's hostname and domain as the kubelet generates them (GeneratePodHostNameAndDomain), for
// its sandbox and its /etc/hosts.
import type { V1Pod } from '@kubernetes/client-node';

/** spec.hostname or the pod name, cut to 63 characters and then of trailing '-' and '.'. */
export function podHostname(pod: V1Pod): string {
  const name = pod.spec?.hostname || pod.metadata?.name || '';
  return name.slice(0, 63).replace(/[-.]+$/, '');
}

/** `<subdomain>.<namespace>.svc.<clusterDomain>` when the pod names a subdomain, else ''. */
export function podHostDomain(pod: V1Pod, clusterDomain: string): string {
  const sub = pod.spec?.subdomain;
  return sub ? `${sub}.${pod.metadata?.namespace ?? ''}.svc.${clusterDomain}` : '';
}
