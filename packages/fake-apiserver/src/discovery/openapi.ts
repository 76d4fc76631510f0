import { createHash } from 'node:crypto';
import type { KObject } from '../meta/object.js';
import { RESOURCES } from '../registry/index.js';
import type { ResourceDef } from '../registry/resource.js';
import type { Definition, Schema } from '../schema/dsl.js';
import { definitions } from '../schema/types.js';
import { KUBERNETES_VERSION } from './discovery.js';
import { encodeOpenApiV2 } from './openapi-proto.js';

type Flavor = 'v2' | 'v3';

const refPath = (flavor: Flavor, name: string) =>
  flavor === 'v2' ? `#/definitions/${name}` : `#/components/schemas/${name}`;

function schemaJson(s: Schema, flavor: Flavor): KObject {
  switch (s.kind) {
    case 'scalar':
      return s.format ? { type: s.type, format: s.format } : { type: s.type };
    case 'any':
      return { 'x-kubernetes-preserve-unknown-fields': true };
    case 'map':
      return { type: 'object', additionalProperties: schemaJson(s.values, flavor) };
    case 'ref':
      // v3 wraps references in allOf, as the apiserver publishes them.
      return flavor === 'v2'
        ? { $ref: refPath(flavor, s.name) }
        : { allOf: [{ $ref: refPath(flavor, s.name) }] };
    case 'array': {
      const out: KObject = { type: 'array', items: schemaJson(s.items, flavor) };
      if (s.mergeKey) out['x-kubernetes-patch-merge-key'] = s.mergeKey;
      if (s.strategy) out['x-kubernetes-patch-strategy'] = s.strategy;
      if (s.listType) out['x-kubernetes-list-type'] = s.listType;
      if (s.listMapKeys) out['x-kubernetes-list-map-keys'] = s.listMapKeys;
      return out;
    }
  }
}

function definitionJson(d: Definition, flavor: Flavor): KObject {
  if (d.scalar)
    return d.scalar.format ? { type: d.scalar.type, format: d.scalar.format } : { type: d.scalar.type };
  const out: KObject = { type: 'object', properties: {} };
  for (const [k, s] of Object.entries(d.props)) out.properties[k] = schemaJson(s, flavor);
  if (d.required) out.required = d.required;
  if (d.gvk) out['x-kubernetes-group-version-kind'] = [d.gvk];
  if (d.strategy) out['x-kubernetes-patch-strategy'] = d.strategy;
  return out;
}

const queryParam = (name: string, type = 'string') => ({ name, in: 'query', type, uniqueItems: true });
const WRITE_PARAMS = ['dryRun', 'fieldManager', 'fieldValidation'].map((n) => queryParam(n));

function paths(defs: ResourceDef[], flavor: Flavor): KObject {
  const out: KObject = {};
  const param = (p: KObject) =>
    flavor === 'v2' ? p : { name: p.name, in: p.in, schema: { type: p.type }, uniqueItems: true };
  const body = (name: string) =>
    flavor === 'v2'
      ? [{ name: 'body', in: 'body', required: true, schema: { $ref: refPath(flavor, name) } }]
      : [];
  const requestBody = (name: string, types = ['application/json']) =>
    flavor === 'v2'
      ? {}
      : {
          requestBody: {
            content: Object.fromEntries(types.map((t) => [t, { schema: { $ref: refPath(flavor, name) } }])),
            required: true,
          },
        };
  const response = (name: string) =>
    flavor === 'v2'
      ? { 200: { description: 'OK', schema: { $ref: refPath(flavor, name) } } }
      : {
          200: {
            description: 'OK',
            content: { 'application/json': { schema: { $ref: refPath(flavor, name) } } },
          },
        };
  for (const d of defs) {
    const prefix = d.group === '' ? `/api/${d.version}` : `/apis/${d.group}/${d.version}`;
    const base = d.namespaced ? `${prefix}/namespaces/{namespace}/${d.resource}` : `${prefix}/${d.resource}`;
    const gvk = { group: d.group, version: d.version, kind: d.kind };
    const op = (action: string, id: string, extra: KObject = {}) => ({
      operationId: `${id}${d.kind}`,
      'x-kubernetes-action': action,
      'x-kubernetes-group-version-kind': gvk,
      ...extra,
    });
    const write = (action: string, id: string, types?: string[]) =>
      op(action, id, {
        parameters: [...body(d.typeName), ...WRITE_PARAMS.map(param)],
        ...requestBody(d.typeName, types),
        responses: response(d.typeName),
      });
    const patchTypes = [
      'application/json-patch+json',
      'application/merge-patch+json',
      'application/strategic-merge-patch+json',
    ];
    const has = (v: string) => d.verbs.includes(v);
    const collection: KObject = {};
    if (has('list')) collection.get = op('list', 'list', { responses: response(`${d.typeName}List`) });
    if (has('create')) collection.post = write('post', 'create');
    if (has('deletecollection')) {
      collection.delete = op('deletecollection', 'deleteCollection', {
        responses: response('io.k8s.apimachinery.pkg.apis.meta.v1.Status'),
      });
    }
    out[base] = collection;
    const item: KObject = {};
    if (has('get')) item.get = op('get', 'read', { responses: response(d.typeName) });
    if (has('update')) item.put = write('put', 'replace');
    if (has('patch')) item.patch = write('patch', 'patch', patchTypes);
    if (has('delete'))
      item.delete = op('delete', 'delete', {
        responses: response('io.k8s.apimachinery.pkg.apis.meta.v1.Status'),
      });
    if (Object.keys(item).length > 0) out[`${base}/{name}`] = item;
    if (d.hasStatus) {
      out[`${base}/{name}/status`] = {
        get: op('get', 'readStatus', { responses: response(d.typeName) }),
        put: write('put', 'replaceStatus'),
        patch: write('patch', 'patchStatus', patchTypes),
      };
    }
    for (const name of Object.keys(d.parts ?? {})) {
      // readResize, replaceEphemeralcontainers...: the operation ids kube-apiserver gives them.
      const id = name[0]!.toUpperCase() + name.slice(1);
      out[`${base}/{name}/${name}`] = {
        get: op('get', `read${id}`, { responses: response(d.typeName) }),
        put: write('put', `replace${id}`),
        patch: write('patch', `patch${id}`, patchTypes),
      };
    }
    if (d.namespaced)
      out[`${prefix}/${d.resource}`] = {
        get: op('list', 'listAllNamespaces', { responses: response(`${d.typeName}List`) }),
      };
  }
  return out;
}

function allDefinitions(flavor: Flavor): KObject {
  const out: KObject = {};
  for (const [name, d] of Object.entries(definitions)) out[name] = definitionJson(d, flavor);
  return out;
}

let v2Cache: { json: string; proto: Buffer } | undefined;

/** The Swagger 2.0 document of everything served, as JSON and as gnostic protobuf. */
export function openApiV2(): { json: string; proto: Buffer } {
  if (v2Cache === undefined) {
    const doc = {
      swagger: '2.0',
      info: { title: 'Kubernetes', version: KUBERNETES_VERSION.gitVersion },
      paths: paths(RESOURCES, 'v2'),
      definitions: allDefinitions('v2'),
    };
    v2Cache = { json: JSON.stringify(doc), proto: encodeOpenApiV2(doc) };
  }
  return v2Cache;
}

const gvPath = (d: ResourceDef) => (d.group === '' ? `api/${d.version}` : `apis/${d.group}/${d.version}`);

const v3Docs = new Map<string, { body: string; hash: string }>();

/** One OpenAPI 3 document per group version (api/v1, apis/coordination.k8s.io/v1...). */
export function openApiV3(gv: string): { body: string; hash: string } | undefined {
  const cached = v3Docs.get(gv);
  if (cached) return cached;
  const defs = RESOURCES.filter((d) => gvPath(d) === gv);
  if (defs.length === 0) return undefined;
  const body = JSON.stringify({
    openapi: '3.0.0',
    info: { title: 'Kubernetes', version: KUBERNETES_VERSION.gitVersion },
    paths: paths(defs, 'v3'),
    components: { schemas: allDefinitions('v3') },
  });
  const doc = { body, hash: createHash('sha512').update(body).digest('hex').toUpperCase().slice(0, 128) };
  v3Docs.set(gv, doc);
  return doc;
}

export function openApiV3Root(): KObject {
  const paths: KObject = {};
  for (const gv of new Set(RESOURCES.map(gvPath))) {
    paths[gv] = { serverRelativeURL: `/openapi/v3/${gv}?hash=${openApiV3(gv)!.hash}` };
  }
  return { paths };
}
