import type { KObject } from '../meta/object.js';
import { ApiError, badRequest } from '../meta/status.js';

/**
 * Decodes the Kubernetes protobuf encoding (magic "k8s\0" + runtime.Unknown) of the few kinds
 * that kubectl's typed clients send as protobuf (`kubectl create namespace|secret|configmap|
 * serviceaccount|role|rolebinding|priorityclass...`, `kubectl drain`'s evictions, `kubectl auth whoami|can-i`, typed
 * deletes), into the JSON form the rest of the
 * server works on. Field numbers follow the upstream generated.proto files.
 */
type Kind =
  | 'string'
  | 'bytes'
  | 'int'
  | 'int32'
  | 'bool'
  | 'time'
  | { msg: string }
  | { repeated: Kind }
  | { map: 'string' | 'bytes' };
type Message = Record<number, [string, Kind]>;

const MESSAGES: Record<string, Message> = {
  ObjectMeta: {
    1: ['name', 'string'],
    2: ['generateName', 'string'],
    3: ['namespace', 'string'],
    5: ['uid', 'string'],
    6: ['resourceVersion', 'string'],
    7: ['generation', 'int'],
    8: ['creationTimestamp', 'time'],
    9: ['deletionTimestamp', 'time'],
    10: ['deletionGracePeriodSeconds', 'int'],
    11: ['labels', { map: 'string' }],
    12: ['annotations', { map: 'string' }],
    13: ['ownerReferences', { repeated: { msg: 'OwnerReference' } }],
    14: ['finalizers', { repeated: 'string' }],
  },
  OwnerReference: {
    1: ['kind', 'string'],
    3: ['name', 'string'],
    4: ['uid', 'string'],
    5: ['apiVersion', 'string'],
    6: ['controller', 'bool'],
    7: ['blockOwnerDeletion', 'bool'],
  },
  ObjectReference: {
    1: ['kind', 'string'],
    2: ['namespace', 'string'],
    3: ['name', 'string'],
    4: ['uid', 'string'],
    5: ['apiVersion', 'string'],
    6: ['resourceVersion', 'string'],
    7: ['fieldPath', 'string'],
  },
  LocalObjectReference: { 1: ['name', 'string'] },
  Preconditions: { 1: ['uid', 'string'], 2: ['resourceVersion', 'string'] },
  DeleteOptions: {
    1: ['gracePeriodSeconds', 'int'],
    2: ['preconditions', { msg: 'Preconditions' }],
    3: ['orphanDependents', 'bool'],
    4: ['propagationPolicy', 'string'],
    5: ['dryRun', { repeated: 'string' }],
  },
  NamespaceSpec: { 1: ['finalizers', { repeated: 'string' }] },
  Namespace: { 1: ['metadata', { msg: 'ObjectMeta' }], 2: ['spec', { msg: 'NamespaceSpec' }] },
  Secret: {
    1: ['metadata', { msg: 'ObjectMeta' }],
    2: ['data', { map: 'bytes' }],
    3: ['type', 'string'],
    4: ['stringData', { map: 'string' }],
    5: ['immutable', 'bool'],
  },
  ConfigMap: {
    1: ['metadata', { msg: 'ObjectMeta' }],
    2: ['data', { map: 'string' }],
    3: ['binaryData', { map: 'bytes' }],
    4: ['immutable', 'bool'],
  },
  ServiceAccount: {
    1: ['metadata', { msg: 'ObjectMeta' }],
    2: ['secrets', { repeated: { msg: 'ObjectReference' } }],
    3: ['imagePullSecrets', { repeated: { msg: 'LocalObjectReference' } }],
    4: ['automountServiceAccountToken', 'bool'],
  },
  Eviction: { 1: ['metadata', { msg: 'ObjectMeta' }], 2: ['deleteOptions', { msg: 'DeleteOptions' }] },
  SelfSubjectReview: { 1: ['metadata', { msg: 'ObjectMeta' }] },
  // kubectl create role|clusterrole|rolebinding|clusterrolebinding and auth can-i.
  PolicyRule: {
    1: ['verbs', { repeated: 'string' }],
    2: ['apiGroups', { repeated: 'string' }],
    3: ['resources', { repeated: 'string' }],
    4: ['resourceNames', { repeated: 'string' }],
    5: ['nonResourceURLs', { repeated: 'string' }],
  },
  Role: { 1: ['metadata', { msg: 'ObjectMeta' }], 2: ['rules', { repeated: { msg: 'PolicyRule' } }] },
  ClusterRole: {
    1: ['metadata', { msg: 'ObjectMeta' }],
    2: ['rules', { repeated: { msg: 'PolicyRule' } }],
    3: ['aggregationRule', { msg: 'AggregationRule' }],
  },
  AggregationRule: { 1: ['clusterRoleSelectors', { repeated: { msg: 'LabelSelector' } }] },
  LabelSelector: {
    1: ['matchLabels', { map: 'string' }],
    2: ['matchExpressions', { repeated: { msg: 'LabelSelectorRequirement' } }],
  },
  LabelSelectorRequirement: {
    1: ['key', 'string'],
    2: ['operator', 'string'],
    3: ['values', { repeated: 'string' }],
  },
  Subject: {
    1: ['kind', 'string'],
    2: ['apiGroup', 'string'],
    3: ['name', 'string'],
    4: ['namespace', 'string'],
  },
  RoleRef: { 1: ['apiGroup', 'string'], 2: ['kind', 'string'], 3: ['name', 'string'] },
  RoleBinding: {
    1: ['metadata', { msg: 'ObjectMeta' }],
    2: ['subjects', { repeated: { msg: 'Subject' } }],
    3: ['roleRef', { msg: 'RoleRef' }],
  },
  ClusterRoleBinding: {
    1: ['metadata', { msg: 'ObjectMeta' }],
    2: ['subjects', { repeated: { msg: 'Subject' } }],
    3: ['roleRef', { msg: 'RoleRef' }],
  },
  ResourceAttributes: {
    1: ['namespace', 'string'],
    2: ['verb', 'string'],
    3: ['group', 'string'],
    4: ['version', 'string'],
    5: ['resource', 'string'],
    6: ['subresource', 'string'],
    7: ['name', 'string'],
  },
  NonResourceAttributes: { 1: ['path', 'string'], 2: ['verb', 'string'] },
  SelfSubjectAccessReviewSpec: {
    1: ['resourceAttributes', { msg: 'ResourceAttributes' }],
    2: ['nonResourceAttributes', { msg: 'NonResourceAttributes' }],
  },
  SelfSubjectAccessReview: {
    1: ['metadata', { msg: 'ObjectMeta' }],
    2: ['spec', { msg: 'SelfSubjectAccessReviewSpec' }],
  },
  PriorityClass: {
    1: ['metadata', { msg: 'ObjectMeta' }],
    2: ['value', 'int32'],
    3: ['globalDefault', 'bool'],
    4: ['description', 'string'],
    5: ['preemptionPolicy', 'string'],
  },
  TypeMeta: { 1: ['apiVersion', 'string'], 2: ['kind', 'string'] },
  Time: { 1: ['seconds', 'int'], 2: ['nanos', 'int'] },
  Unknown: { 1: ['typeMeta', { msg: 'TypeMeta' }], 2: ['raw', 'bytes'], 3: ['contentEncoding', 'string'] },
};

const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

class Reader {
  pos = 0;
  constructor(readonly buf: Buffer) {}
  get done() {
    return this.pos >= this.buf.length;
  }
  varint(): number {
    let result = 0;
    let mul = 1;
    for (;;) {
      if (this.pos >= this.buf.length) throw badRequest('protobuf: truncated varint');
      const b = this.buf[this.pos++]!;
      result += (b & 0x7f) * mul;
      if ((b & 0x80) === 0) return result;
      mul *= 128;
    }
  }
  /** An int32 field: a negative one comes sign-extended to ten bytes, its low 32 bits the value. */
  int32(): number {
    let low = 0;
    for (let shift = 0; ; shift += 7) {
      if (this.pos >= this.buf.length) throw badRequest('protobuf: truncated varint');
      const b = this.buf[this.pos++]!;
      if (shift < 32) low |= (b & 0x7f) << shift;
      if ((b & 0x80) === 0) return low | 0;
    }
  }
  bytes(): Buffer {
    const len = this.varint();
    if (this.pos + len > this.buf.length) throw badRequest('protobuf: truncated field');
    const b = this.buf.subarray(this.pos, this.pos + len);
    this.pos += len;
    return b;
  }
  skip(wire: number) {
    if (wire === 0) this.varint();
    else if (wire === 1) this.pos += 8;
    else if (wire === 2) this.bytes();
    else if (wire === 5) this.pos += 4;
    else throw badRequest(`protobuf: unsupported wire type ${wire}`);
  }
}

function scalar(kind: Kind, r: Reader, wire: number): unknown {
  if (kind === 'int') return r.varint();
  if (kind === 'int32') return r.int32();
  if (kind === 'bool') return r.varint() !== 0;
  if (wire !== 2) throw badRequest('protobuf: unexpected wire type');
  const b = r.bytes();
  if (kind === 'string') return b.toString('utf8');
  if (kind === 'bytes') return b;
  if (kind === 'time') {
    const t = decodeMessage(b, 'Time');
    return new Date((t.seconds ?? 0) * 1000).toISOString().replace('.000Z', 'Z');
  }
  if (typeof kind === 'object' && 'msg' in kind) return decodeMessage(b, kind.msg);
  throw badRequest('protobuf: unexpected field');
}

function decodeMessage(buf: Buffer, name: string): KObject {
  const fields = MESSAGES[name]!;
  const out: KObject = {};
  const r = new Reader(buf);
  while (!r.done) {
    const tag = r.varint();
    const num = Math.floor(tag / 8);
    const wire = tag & 7;
    const f = fields[num];
    if (f === undefined) {
      r.skip(wire);
      continue;
    }
    const [key, kind] = f;
    if (typeof kind === 'object' && 'map' in kind) {
      const entry = new Reader(r.bytes());
      let k = '';
      let v: unknown = kind.map === 'bytes' ? Buffer.alloc(0) : '';
      while (!entry.done) {
        const t = entry.varint();
        if (t >> 3 === 1) k = entry.bytes().toString('utf8');
        else if (t >> 3 === 2) v = kind.map === 'bytes' ? entry.bytes() : entry.bytes().toString('utf8');
        else entry.skip(t & 7);
      }
      out[key] ??= {};
      out[key][k] = Buffer.isBuffer(v) ? v.toString('base64') : v;
    } else if (typeof kind === 'object' && 'repeated' in kind) {
      out[key] ??= [];
      out[key].push(scalar(kind.repeated, r, wire));
    } else {
      const v = scalar(kind, r, wire);
      out[key] = Buffer.isBuffer(v) ? v.toString('base64') : v;
    }
  }
  return out;
}

/** Decodes a `application/vnd.kubernetes.protobuf` body of a supported kind. */
export function decodeKubernetesProtobuf(body: Buffer): KObject {
  if (body.length < 4 || !body.subarray(0, 4).equals(MAGIC))
    throw badRequest('protobuf: missing the k8s envelope');
  const r = new Reader(body.subarray(4));
  let typeMeta: KObject = {};
  let raw: Buffer = Buffer.alloc(0);
  while (!r.done) {
    const tag = r.varint();
    if (tag >> 3 === 1) typeMeta = decodeMessage(r.bytes(), 'TypeMeta');
    else if (tag >> 3 === 2) raw = r.bytes();
    else r.skip(tag & 7);
  }
  const kind = typeMeta.kind as string | undefined;
  if (
    kind === undefined ||
    kind === 'Unknown' ||
    kind === 'TypeMeta' ||
    kind === 'Time' ||
    MESSAGES[kind] === undefined
  ) {
    throw new ApiError(
      415,
      'UnsupportedMediaType',
      `protobuf bodies of kind ${kind ?? '<none>'} are not supported by this apiserver; send application/json`,
    );
  }
  return { apiVersion: typeMeta.apiVersion, kind, ...decodeMessage(raw, kind) };
}
