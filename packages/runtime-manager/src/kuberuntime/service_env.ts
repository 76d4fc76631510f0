// Service environment variables (the kubelet's getServiceEnvVarMap and envvars.FromServices):
// every service of the pod's namespace with a cluster IP, when the pod has service links (the
// default), and always the master service (`kubernetes` in `default`), as FOO_SERVICE_HOST,
// FOO_SERVICE_PORT, FOO_SERVICE_PORT_<NAME> and the Docker link variables FOO_PORT,
// FOO_PORT_<port>_<PROTO>{,_PROTO,_PORT,_ADDR}.
import { isIPv6 } from 'node:net';
import type { V1Pod, V1Service } from '@kubernetes/client-node';

/** The kubelet's masterServiceNamespace and the services it always exposes from there. */
export const MASTER_SERVICE_NAMESPACE = 'default';
const MASTER_SERVICES = new Set(['kubernetes']);

const ipSet = (s: V1Service) => {
  const ip = s.spec?.clusterIP ?? '';
  return ip !== '' && ip !== 'None';
};

/** Whether the service is one a pod of any namespace gets variables for: `kubernetes` in `default`. */
export function isMasterService(s: V1Service): boolean {
  return s.metadata?.namespace === MASTER_SERVICE_NAMESPACE && MASTER_SERVICES.has(s.metadata?.name ?? '');
}

/** FOO-bar → FOO_BAR, as makeEnvVariableName. */
const envName = (s: string) => s.toUpperCase().replaceAll('-', '_');

/** The services whose variables a pod of `pod`'s namespace gets, one per name (its namespace's win). */
export function servicesForPod(pod: V1Pod, services: readonly V1Service[]): V1Service[] {
  const ns = pod.metadata?.namespace ?? '';
  const links = pod.spec?.enableServiceLinks !== false;
  const byName = new Map<string, V1Service>();
  for (const s of services) {
    if (!ipSet(s)) continue;
    const name = s.metadata?.name ?? '';
    if (isMasterService(s)) {
      if (!byName.has(name)) byName.set(name, s);
    } else if (s.metadata?.namespace === ns && links) byName.set(name, s);
  }
  return [...byName.values()];
}

/** envvars.FromServices, name to value in the order it gives them. */
export function serviceEnvVars(services: readonly V1Service[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const s of services) {
    if (!ipSet(s)) continue;
    const prefix = envName(s.metadata?.name ?? '');
    const ip = s.spec!.clusterIP!;
    const ports = s.spec?.ports ?? [];
    out.set(`${prefix}_SERVICE_HOST`, ip);
    if (ports[0]) out.set(`${prefix}_SERVICE_PORT`, String(ports[0].port));
    for (const p of ports) {
      if (p.name) out.set(`${prefix}_SERVICE_PORT_${envName(p.name)}`, String(p.port));
    }
    const host = isIPv6(ip) ? `[${ip}]` : ip;
    ports.forEach((p, i) => {
      const proto = (p.protocol ?? 'TCP').toLowerCase();
      const url = `${proto}://${host}:${p.port}`;
      const portPrefix = `${prefix}_PORT_${p.port}_${proto.toUpperCase()}`;
      if (i === 0) out.set(`${prefix}_PORT`, url);
      out.set(portPrefix, url);
      out.set(`${portPrefix}_PROTO`, proto);
      out.set(`${portPrefix}_PORT`, String(p.port));
      out.set(`${portPrefix}_ADDR`, ip);
    });
  }
  return out;
}
