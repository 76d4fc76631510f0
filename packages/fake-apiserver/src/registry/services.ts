import { isIPv4 } from 'node:net';
import type { KObject } from '../meta/object.js';
import { FieldErrors } from '../meta/status.js';
import { metadataFields } from '../selectors/field.js';
import type { Store } from '../storage/store.js';
import { checkDnsLabel, validateObjectMeta } from '../validation/meta.js';
import { ALL_VERBS, type ResourceDef } from './resource.js';

/**
 * core/v1 Services as far as a node reads them: a ClusterIP allocated from the service range
 * (kube-apiserver's default --service-cluster-ip-range, 10.96.0.0/12; its first address is the
 * `kubernetes` service's), defaults, and the ports and type rules of ValidateService. Nothing
 * proxies to them; the kubelet turns them into containers' service environment variables.
 */
export const SERVICE_CIDR = { base: ipv4ToInt('10.96.0.0'), size: 2 ** 20 };

const SERVICE_TYPES = ['ClusterIP', 'ExternalName'];
const PROTOCOLS = ['TCP', 'UDP', 'SCTP'];
const NONE = 'None';

function ipv4ToInt(ip: string): number {
  return ip.split('.').reduce((n, o) => n * 256 + Number(o), 0);
}
const intToIpv4 = (n: number) => [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join('.');

const inRange = (ip: string) =>
  isIPv4(ip) &&
  ipv4ToInt(ip) > SERVICE_CIDR.base &&
  ipv4ToInt(ip) < SERVICE_CIDR.base + SERVICE_CIDR.size - 1;

const allocated = (store: Store) =>
  new Set(store.list('services').flatMap((s) => (s.spec?.clusterIPs ?? [s.spec?.clusterIP]).filter(Boolean)));

/** A free address of the range, searched from a random offset as the allocator's bitmap does. */
function allocateClusterIP(store: Store): string | undefined {
  const used = allocated(store);
  // The network and broadcast addresses are never handed out, nor the first host (`kubernetes`).
  const first = SERVICE_CIDR.base + 2;
  const count = SERVICE_CIDR.size - 3;
  const start = Math.floor(Math.random() * count);
  for (let i = 0; i < count; i++) {
    const ip = intToIpv4(first + ((start + i) % count));
    if (!used.has(ip)) return ip;
  }
  return undefined;
}

function defaultService(svc: KObject, store: Store): void {
  svc.spec ??= {};
  const spec = svc.spec;
  spec.type ??= 'ClusterIP';
  if (spec.type === 'ExternalName') return;
  spec.sessionAffinity ??= 'None';
  spec.internalTrafficPolicy ??= 'Cluster';
  for (const p of spec.ports ?? []) {
    p.protocol ??= 'TCP';
    p.targetPort ??= p.port;
  }
  if (spec.clusterIP === undefined || spec.clusterIP === '') {
    const ip = allocateClusterIP(store);
    if (ip !== undefined) spec.clusterIP = ip;
  }
  if (spec.clusterIP !== undefined) spec.clusterIPs ??= [spec.clusterIP];
  if (spec.clusterIP !== NONE) {
    spec.ipFamilies ??= ['IPv4'];
    spec.ipFamilyPolicy ??= 'SingleStack';
  }
}

function validatePorts(spec: KObject, errs: FieldErrors): void {
  const ports: KObject[] = spec.ports ?? [];
  const headless = spec.clusterIP === NONE;
  if (ports.length === 0 && !headless) errs.required('spec.ports');
  const names = new Set<string>();
  ports.forEach((p, i) => {
    const f = `spec.ports[${i}]`;
    if (ports.length > 1 || p.name) {
      if (!p.name) errs.required(`${f}.name`);
      else {
        checkDnsLabel(errs, `${f}.name`, p.name);
        if (names.has(p.name)) errs.duplicate(`${f}.name`, p.name);
        names.add(p.name);
      }
    }
    if (!Number.isInteger(p.port) || p.port < 1 || p.port > 65535)
      errs.invalid(`${f}.port`, p.port, 'must be between 1 and 65535, inclusive');
    if (!PROTOCOLS.includes(p.protocol)) errs.notSupported(`${f}.protocol`, p.protocol, PROTOCOLS);
  });
}

export const services: ResourceDef = {
  group: '',
  version: 'v1',
  resource: 'services',
  singular: 'service',
  kind: 'Service',
  namespaced: true,
  shortNames: ['svc'],
  categories: ['all'],
  typeName: 'io.k8s.api.core.v1.Service',
  storage: 'services',
  verbs: ALL_VERBS,
  subresources: [],
  hasStatus: true,
  // The kubelet's and kube-proxy's informers leave headless services out with spec.clusterIP!=None.
  fields: {
    ...metadataFields,
    'spec.clusterIP': (o) => o.spec?.clusterIP ?? '',
    'spec.type': (o) => o.spec?.type ?? '',
  },
  prepareForCreate(svc, ctx) {
    const wanted = svc.spec?.clusterIP;
    if (wanted && wanted !== NONE && allocated(ctx.store).has(wanted)) {
      const errs = new FieldErrors();
      errs.invalid(
        'spec.clusterIPs',
        [wanted],
        `failed to allocate IP ${wanted}: provided IP is already allocated`,
      );
      errs.throwIfAny('Service', svc.metadata?.name ?? '');
    }
    defaultService(svc, ctx.store);
  },
  // The allocated address stays: an update without one keeps it, a different one is refused.
  prepareForUpdate(svc, old, ctx) {
    svc.spec ??= {};
    if ((svc.spec.clusterIP ?? '') === '' && old.spec?.clusterIP) {
      svc.spec.clusterIP = old.spec.clusterIP;
      svc.spec.clusterIPs = old.spec.clusterIPs;
    }
    defaultService(svc, ctx.store);
  },
  validate(svc, errs, old) {
    validateObjectMeta(svc, errs, true);
    if (svc.metadata?.name) checkDnsLabel(errs, 'metadata.name', svc.metadata.name);
    const spec = svc.spec ?? {};
    if (!SERVICE_TYPES.includes(spec.type)) errs.notSupported('spec.type', spec.type, SERVICE_TYPES);
    if (spec.type === 'ExternalName') {
      if (!spec.externalName) errs.required('spec.externalName');
      return;
    }
    validatePorts(spec, errs);
    const ip = spec.clusterIP;
    if (ip === undefined) errs.invalid('spec.clusterIPs', [], 'range is full');
    else if (ip !== NONE && !inRange(ip))
      errs.invalid(
        'spec.clusterIPs',
        [ip],
        `failed to allocate IP ${ip}: provided IP is not in the valid range. The range of valid IPs is 10.96.0.0/12`,
      );
    if (old?.spec?.clusterIP && ip !== old.spec.clusterIP)
      errs.invalid('spec.clusterIPs[0]', ip, 'may not change once set');
  },
};
