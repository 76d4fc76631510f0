import type { KObject } from '../meta/object.js';
import { apiVersionOf, type ResourceDef } from '../registry/resource.js';
import { toTable } from './table.js';

/** What the client asked to receive, from its Accept header (first match wins, as in the apiserver). */
export type Representation =
  | { as: 'object' }
  | { as: 'table'; apiVersion: string; includeObject: string; now: number }
  | { as: 'metadata'; apiVersion: string };

/**
 * Content negotiation for reads: server-side printing (`as=Table`, kubectl get), metadata-only
 * (`as=PartialObjectMetadata[List]`, client-go metadata clients), or the object itself. Protobuf is
 * answered with JSON.
 */
export function negotiate(accept: string | undefined, query: URLSearchParams, now: number): Representation {
  for (const part of (accept ?? '').split(',')) {
    const params = new Map(
      part
        .split(';')
        .slice(1)
        .map((p) => p.trim().split('=') as [string, string]),
    );
    const as = params.get('as');
    if (as === undefined || params.get('g') !== 'meta.k8s.io') continue;
    const apiVersion = `meta.k8s.io/${params.get('v') ?? 'v1'}`;
    if (as === 'Table')
      return { as: 'table', apiVersion, includeObject: query.get('includeObject') ?? 'Metadata', now };
    if (as === 'PartialObjectMetadata' || as === 'PartialObjectMetadataList')
      return { as: 'metadata', apiVersion };
  }
  return { as: 'object' };
}

const partial = (obj: KObject, apiVersion: string): KObject => ({
  kind: 'PartialObjectMetadata',
  apiVersion,
  metadata: obj.metadata,
});

/** One object (a GET or a watch event) in the negotiated form. */
export function renderOne(def: ResourceDef, obj: KObject, rep: Representation): KObject {
  if (rep.as === 'table') return toTable(def, [obj], { resourceVersion: obj.metadata.resourceVersion }, rep);
  if (rep.as === 'metadata') return partial(obj, rep.apiVersion);
  return obj;
}

/** A list in the negotiated form. */
export function renderList(
  def: ResourceDef,
  items: KObject[],
  listMeta: KObject,
  rep: Representation,
): KObject {
  if (rep.as === 'table') return toTable(def, items, listMeta, rep);
  if (rep.as === 'metadata') {
    return {
      kind: 'PartialObjectMetadataList',
      apiVersion: rep.apiVersion,
      metadata: listMeta,
      items: items.map((o) => partial(o, rep.apiVersion)),
    };
  }
  return { kind: `${def.kind}List`, apiVersion: apiVersionOf(def), metadata: listMeta, items };
}
