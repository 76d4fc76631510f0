import type { KObject } from '../meta/object.js';
import { RESOURCES } from '../registry/index.js';
import type { ResourceDef } from '../registry/resource.js';

export const KUBERNETES_VERSION = { major: '1', minor: '33', gitVersion: 'v1.33.0' };

export function versionInfo(): KObject {
  return {
    major: KUBERNETES_VERSION.major,
    minor: KUBERNETES_VERSION.minor,
    gitVersion: `${KUBERNETES_VERSION.gitVersion}+kh`,
    gitCommit: '0000000000000000000000000000000000000000',
    gitTreeState: 'clean',
    buildDate: '2026-01-01T00:00:00Z',
    goVersion: 'go1.24.0',
    compiler: 'gc',
    platform: 'linux/amd64',
  };
}

interface Sub {
  name: string;
  kind: string;
  group?: string;
  version?: string;
  verbs: string[];
}

function subresourcesOf(d: ResourceDef): Sub[] {
  const out: Sub[] = [];
  if (d.hasStatus) out.push({ name: 'status', kind: d.kind, verbs: ['get', 'patch', 'update'] });
  for (const s of d.subresources) {
    if (s === 'binding') out.push({ name: s, kind: 'Binding', verbs: ['create'] });
    if (s === 'eviction')
      out.push({ name: s, kind: 'Eviction', group: 'policy', version: 'v1', verbs: ['create'] });
    if (s === 'log') out.push({ name: s, kind: d.kind, verbs: ['get'] });
    if (d.parts?.[s]) out.push({ name: s, kind: d.kind, verbs: ['get', 'patch', 'update'] });
    if (s === 'token')
      out.push({
        name: s,
        kind: 'TokenRequest',
        group: 'authentication.k8s.io',
        version: 'v1',
        verbs: ['create'],
      });
  }
  return out;
}

/** group -> versions -> resources, as served. */
export function groups(): Map<string, Map<string, ResourceDef[]>> {
  const m = new Map<string, Map<string, ResourceDef[]>>();
  for (const r of RESOURCES) {
    let g = m.get(r.group);
    if (g === undefined) {
      g = new Map();
      m.set(r.group, g);
    }
    g.set(r.version, [...(g.get(r.version) ?? []), r]);
  }
  return m;
}

export function apiVersions(serverAddress: string): KObject {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  };
}

function groupEntry(name: string, versions: string[]): KObject {
  const vs = versions.map((v) => ({ groupVersion: `${name}/${v}`, version: v }));
  return { name, versions: vs, preferredVersion: vs[0] };
}

export function apiGroupList(): KObject {
  const out: KObject[] = [];
  for (const [g, versions] of groups()) if (g !== '') out.push(groupEntry(g, [...versions.keys()]));
  return { kind: 'APIGroupList', apiVersion: 'v1', groups: out };
}

export function apiGroup(name: string): KObject | undefined {
  const versions = groups().get(name);
  if (name === '' || versions === undefined) return undefined;
  return { kind: 'APIGroup', apiVersion: 'v1', ...groupEntry(name, [...versions.keys()]) };
}

export function apiResourceList(group: string, version: string): KObject | undefined {
  const defs = groups().get(group)?.get(version);
  if (defs === undefined) return undefined;
  const resources: KObject[] = [];
  for (const d of defs) {
    const r: KObject = {
      name: d.resource,
      singularName: d.singular,
      namespaced: d.namespaced,
      kind: d.kind,
      verbs: d.verbs,
    };
    if (d.shortNames) r.shortNames = d.shortNames;
    if (d.categories) r.categories = d.categories;
    resources.push(r);
    for (const s of subresourcesOf(d)) {
      const sr: KObject = {
        name: `${d.resource}/${s.name}`,
        singularName: '',
        namespaced: d.namespaced,
        kind: s.kind,
        verbs: s.verbs,
      };
      if (s.group !== undefined) {
        sr.group = s.group;
        sr.version = s.version;
      }
      resources.push(sr);
    }
  }
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: group === '' ? version : `${group}/${version}`,
    resources,
  };
}

/** The aggregated discovery document (apidiscovery.k8s.io v2 / v2beta1) of /api or /apis. */
export function aggregatedDiscovery(legacy: boolean, apiVersion: string): KObject {
  const items: KObject[] = [];
  for (const [g, versions] of groups()) {
    if ((g === '') !== legacy) continue;
    items.push({
      metadata: { name: g, creationTimestamp: null },
      versions: [...versions].map(([v, defs]) => ({
        version: v,
        freshness: 'Current',
        resources: defs.map((d) => {
          const r: KObject = {
            resource: d.resource,
            responseKind: { group: d.group, version: d.version, kind: d.kind },
            scope: d.namespaced ? 'Namespaced' : 'Cluster',
            singularResource: d.singular,
            verbs: d.verbs,
          };
          if (d.shortNames) r.shortNames = d.shortNames;
          if (d.categories) r.categories = d.categories;
          const subs = subresourcesOf(d);
          if (subs.length > 0) {
            r.subresources = subs.map((s) => ({
              subresource: s.name,
              responseKind: { group: s.group ?? d.group, version: s.version ?? d.version, kind: s.kind },
              verbs: s.verbs,
            }));
          }
          return r;
        }),
      })),
    });
  }
  return { kind: 'APIGroupDiscoveryList', apiVersion, metadata: {}, items };
}

/** Which aggregated discovery version the Accept header asks for, if any. */
export function aggregatedVersion(accept: string | undefined): string | undefined {
  if (accept === undefined) return undefined;
  for (const part of accept.split(',')) {
    if (!/as=APIGroupDiscoveryList/.test(part) || !/g=apidiscovery\.k8s\.io/.test(part)) continue;
    const v = /v=(v2beta1|v2)\b/.exec(part)?.[1];
    if (v !== undefined) return v;
  }
  return undefined;
}
