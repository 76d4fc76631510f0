// Service environment variables (the kubelet's getServiceEnvVarMap and envvars.FromServices):
// every service of the pod's namespace with a cluster IP, when the pod has service links (the
// default), and always the master service (`kubernetes` in `default`), as FOO_SERVICE_HOST,
// FOO_SERVICE_PORT, FOO_SERVICE_PORT_<NAME> and the Docker link variables FOO_PORT,
// FOO_PORT_<port>_<PROTO>{,_PROTO,_PORT,_ADDR}.
import { isIPv6 } from 'node:net';
import type { V1Pod, V1Service } from '@kubernetes/client-node';
import type { EnvVar } from './env.js';

/** The kubelet's masterServiceNamespace and the services it always exposes from there. */
export const MASTER_SERVICE_NAMESPACE = 'default';
const MASTER_SERVICES = new Set(['kubernetes']);

const ipSet = (s: V1Service) => {
  const ip = s.spec?.clusterIP ?? '';
  return ip !== '' && ip !== 'None';
};

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
    if (s.metadata?.namespace === MASTER_SERVICE_NAMESPACE && MASTER_SERVICES.has(name)) {
      if (!byName.has(name)) byName.set(name, s);
    } else if (s.metadata?.namespace === ns && links) byName.set(name, s);
  }
  return [...byName.values()];
}

/** envvars.FromServices. */
export function serviceEnvVars(services: readonly V1Service[]): EnvVar[] {
  const out: EnvVar[] = [];
  for (const s of services) {
    if (!ipSet(s)) continue;
    const prefix = envName(s.metadata?.name ?? '');
    const ip = s.spec!.clusterIP!;
    const ports = s.spec?.ports ?? [];
    out.push({ name: `${prefix}_SERVICE_HOST`, value: ip });
    if (ports[0]) out.push({ name: `${prefix}_SERVICE_PORT`, value: String(ports[0].port) });
    for (const p of ports) {
      if (p.name) out.push({ name: `${prefix}_SERVICE_PORT_${envName(p.name)}`, value: String(p.port) });
    }
    const host = isIPv6(ip) ? `[${ip}]` : ip;
    ports.forEach((p, i) => {
      const proto = (p.protocol ?? 'TCP').toLowerCase();
      const url = `${proto}://${host}:${p.port}`;
      const portPrefix = `${prefix}_PORT_${p.port}_${proto.toUpperCase()}`;
      if (i === 0) out.push({ name: `${prefix}_PORT`, value: url });
      out.push(
        { name: portPrefix, value: url },
        { name: `${portPrefix}_PROTO`, value: proto },
        { name: `${portPrefix}_PORT`, value: String(p.port) },
        { name: `${portPrefix}_ADDR`, value: ip },
      );
    });
  }
  return out;
}
