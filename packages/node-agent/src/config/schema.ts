// One table describes every KubeletConfiguration field: its JSON type, how its value is checked,
// and whether the agent applies it or only accepts it (fields a real node's config.yaml carries
// but that have no meaning here). Decoding, unknown-field reporting and validation all walk it.
import { isIP } from 'node:net';
import type { ErrorList } from '@kh/apimachinery';
import { QuantityError, qualifiedNameProblem } from '@kh/apimachinery';
import { allowlistPatternProblem } from '@kh/runtime-manager';
import { invalidSysctlPattern } from '../sysctl/allowlist.js';
import { parseDuration } from '../util/duration.js';
import { parseQuantityOrPercent, Quantity } from '../util/quantity.js';

/** A field error already shows the value, so a quantity error contributes only its reason. */
const reasonOf = (e: unknown): string => (e instanceof QuantityError ? e.reason : (e as Error).message);

/**
 * An eviction threshold of 0% or 100% is switched off, as the kubelet's threshold parser ignores
 * them: `evictionHard: {memory.available: "0%"}` leaves no hard threshold at all.
 */
export const isDisabledThreshold = (v: string): boolean => v === '0%' || v === '100%';

export type FieldSpec =
  | { kind: 'string'; check?: (v: string) => string | undefined }
  | { kind: 'enum'; values: readonly string[] }
  | { kind: 'int'; min?: number; max?: number }
  | { kind: 'number'; min?: number }
  | { kind: 'nullableInt'; min?: number }
  | { kind: 'bool' }
  | { kind: 'duration'; positive?: boolean }
  | { kind: 'ipList' }
  | { kind: 'stringList'; check?: (v: string) => string | undefined }
  | { kind: 'taints' }
  | { kind: 'map'; values: 'quantity' | 'threshold' | 'duration'; keys: readonly string[] }
  /** name: true|false, any name (the kubelet's featureGates). */
  | { kind: 'boolMap' }
  /** A list of objects, each checked against `fields` (every field required). */
  | { kind: 'objectList'; fields: Record<string, FieldSpec> }
  /** `optional`: the object, and each of its fields, may be absent (a Go pointer left nil). */
  | { kind: 'object'; fields: Record<string, FieldSpec>; optional?: boolean }
  /** Accepted for compatibility with real kubelet files, type-checked, otherwise ignored. */
  | { kind: 'ignored'; json: 'string' | 'number' | 'boolean' | 'object' | 'array' };

export const EVICTION_SIGNALS = [
  'memory.available',
  'allocatableMemory.available',
  'nodefs.available',
  'nodefs.inodesFree',
  'imagefs.available',
  'imagefs.inodesFree',
  'containerfs.available',
  'containerfs.inodesFree',
  'pid.available',
] as const;

export const RESERVABLE_RESOURCES = ['cpu', 'memory', 'ephemeral-storage', 'pid'] as const;

/** enforceNodeAllocatable's values (the kubelet's NodeAllocatableEnforcementKey and friends). */
export const ENFORCE_PODS = 'pods';
export const ENFORCE_SYSTEM_RESERVED = 'system-reserved';
export const ENFORCE_KUBE_RESERVED = 'kube-reserved';
export const ENFORCE_NONE = 'none';
export const NODE_ALLOCATABLE_ENFORCEMENT_KEYS = [
  ENFORCE_PODS,
  ENFORCE_SYSTEM_RESERVED,
  ENFORCE_KUBE_RESERVED,
  ENFORCE_NONE,
] as const;

const ip = (v: string) => (isIP(v) ? undefined : 'must be a valid IP address');
const port = { kind: 'int', min: 0, max: 65535 } as const;
function nonNegativeQuantity(v: string): string | undefined {
  try {
    return Quantity.parse(v).sign() < 0 ? 'must not be negative' : undefined;
  } catch (e) {
    return reasonOf(e);
  }
}

export const KUBELET_CONFIG_SCHEMA: Record<string, FieldSpec> = {
  apiVersion: { kind: 'string' },
  kind: { kind: 'string' },
  address: { kind: 'string', check: ip },
  port: { kind: 'int', min: 1, max: 65535 },
  readOnlyPort: port,
  healthzBindAddress: { kind: 'string', check: ip },
  healthzPort: port,
  tlsCertFile: { kind: 'string' },
  tlsPrivateKeyFile: { kind: 'string' },
  authentication: {
    kind: 'object',
    fields: {
      anonymous: { kind: 'object', fields: { enabled: { kind: 'bool' } } },
      webhook: { kind: 'object', fields: { enabled: { kind: 'bool' }, cacheTTL: { kind: 'duration' } } },
      x509: { kind: 'object', fields: { clientCAFile: { kind: 'string' } } },
    },
  },
  authorization: {
    kind: 'object',
    fields: {
      mode: { kind: 'enum', values: ['AlwaysAllow', 'Webhook'] },
      webhook: {
        kind: 'object',
        fields: { cacheAuthorizedTTL: { kind: 'duration' }, cacheUnauthorizedTTL: { kind: 'duration' } },
      },
    },
  },
  containerRuntimeEndpoint: { kind: 'string', check: (v) => (v === '' ? 'must not be empty' : undefined) },
  imageServiceEndpoint: { kind: 'string' },
  runtimeRequestTimeout: { kind: 'duration', positive: true },
  cgroupDriver: { kind: 'enum', values: ['cgroupfs', 'systemd'] },
  cgroupRoot: { kind: 'string' },
  cgroupsPerQOS: { kind: 'bool' },
  registerNode: { kind: 'bool' },
  registerWithTaints: { kind: 'taints' },
  maxPods: { kind: 'int', min: 0 },
  podPidsLimit: { kind: 'int', min: -1 },
  nodeStatusUpdateFrequency: { kind: 'duration', positive: true },
  nodeStatusReportFrequency: { kind: 'duration', positive: true },
  nodeLeaseDurationSeconds: { kind: 'int', min: 1 },
  nodeStatusMaxImages: { kind: 'int', min: -1 },
  syncFrequency: { kind: 'duration', positive: true },
  fileCheckFrequency: { kind: 'duration', positive: true },
  staticPodPath: { kind: 'string' },
  clusterDomain: { kind: 'string' },
  clusterDNS: { kind: 'ipList' },
  evictionHard: { kind: 'map', values: 'threshold', keys: EVICTION_SIGNALS },
  evictionSoft: { kind: 'map', values: 'threshold', keys: EVICTION_SIGNALS },
  evictionSoftGracePeriod: { kind: 'map', values: 'duration', keys: EVICTION_SIGNALS },
  evictionPressureTransitionPeriod: { kind: 'duration' },
  evictionMaxPodGracePeriod: { kind: 'int', min: 0 },
  evictionMinimumReclaim: { kind: 'map', values: 'threshold', keys: EVICTION_SIGNALS },
  kubeReserved: { kind: 'map', values: 'quantity', keys: RESERVABLE_RESOURCES },
  systemReserved: { kind: 'map', values: 'quantity', keys: RESERVABLE_RESOURCES },
  // Its values and the cgroups it needs are checked together in validation.ts.
  enforceNodeAllocatable: { kind: 'stringList' },
  kubeReservedCgroup: { kind: 'string' },
  systemReservedCgroup: { kind: 'string' },
  imageGCHighThresholdPercent: { kind: 'int', min: 0, max: 100 },
  imageGCLowThresholdPercent: { kind: 'int', min: 0, max: 100 },
  imageMinimumGCAge: { kind: 'duration' },
  imageMaximumGCAge: { kind: 'duration' },
  serializeImagePulls: { kind: 'bool' },
  maxParallelImagePulls: { kind: 'nullableInt', min: 1 },
  registryPullQPS: { kind: 'number', min: 0 },
  registryBurst: { kind: 'int', min: 0 },
  // Their values, and the feature gate they need, are checked in validation.ts.
  imagePullCredentialsVerificationPolicy: { kind: 'string' },
  preloadedImagesVerificationAllowlist: { kind: 'stringList', check: allowlistPatternProblem },
  podLogsDir: { kind: 'string', check: (v) => (v.startsWith('/') ? undefined : 'must be an absolute path') },
  containerLogMaxSize: { kind: 'string', check: nonNegativeQuantity },
  containerLogMaxFiles: { kind: 'int', min: 2 },
  containerLogMaxWorkers: { kind: 'int', min: 1 },
  containerLogMonitorInterval: { kind: 'duration', positive: true },
  featureGates: { kind: 'boolMap' },
  // node shutdown; how the three fit together is checked in validation.ts
  shutdownGracePeriod: { kind: 'duration' },
  shutdownGracePeriodCriticalPods: { kind: 'duration' },
  shutdownGracePeriodByPodPriority: {
    kind: 'objectList',
    fields: { priority: { kind: 'int' }, shutdownGracePeriodSeconds: { kind: 'int' } },
  },
  // security
  seccompDefault: { kind: 'bool' },
  allowedUnsafeSysctls: { kind: 'stringList', check: invalidSysctlPattern },
  // Its bounds, with the kubelet's messages, are in validation.ts.
  userNamespaces: { kind: 'object', optional: true, fields: { idsPerPod: { kind: 'int' } } },
  // Present in kubeadm-generated files; they configure subsystems this agent does not have.
  cpuManagerPolicy: { kind: 'ignored', json: 'string' },
  cpuManagerReconcilePeriod: { kind: 'ignored', json: 'string' },
  failSwapOn: { kind: 'ignored', json: 'boolean' },
  hairpinMode: { kind: 'ignored', json: 'string' },
  httpCheckFrequency: { kind: 'ignored', json: 'string' },
  logging: { kind: 'ignored', json: 'object' },
  memorySwap: { kind: 'ignored', json: 'object' },
  resolvConf: { kind: 'ignored', json: 'string' },
  rotateCertificates: { kind: 'ignored', json: 'boolean' },
  serverTLSBootstrap: { kind: 'ignored', json: 'boolean' },
  streamingConnectionIdleTimeout: { kind: 'ignored', json: 'string' },
  volumeStatsAggPeriod: { kind: 'ignored', json: 'string' },
};
const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

/**
 * Copies the known fields of `raw` (a parsed document) into a new object, reporting unknown
 * fields and JSON type mismatches. Ignored fields are checked and dropped.
 */
export function decodeObject(
  raw: Record<string, unknown>,
  schema: Record<string, FieldSpec>,
  path: string,
  errs: ErrorList,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) {
    const spec = schema[key];
    const field = join(path, key);
    if (!spec) {
      errs.unknown(field);
      continue;
    }
    if (spec.kind === 'ignored') {
      if (value !== null && jsonType(value) !== spec.json)
        errs.invalid(field, value, `must be of type ${spec.json}`);
      continue;
    }
    if (spec.kind === 'object') {
      if (value === null || value === undefined) continue;
      if (jsonType(value) !== 'object') {
        errs.invalid(field, value, 'must be an object');
        continue;
      }
      out[key] = decodeObject(value as Record<string, unknown>, spec.fields, field, errs);
      continue;
    }
    const want = expectedJsonType(spec);
    if (value === null && spec.kind === 'nullableInt') {
      out[key] = null;
    } else if (jsonType(value) !== want) {
      errs.invalid(
        field,
        value,
        spec.kind === 'duration' ? 'must be a duration string such as "1m30s"' : `must be of type ${want}`,
      );
    } else {
      out[key] = value;
    }
  }
  return out;
}

function expectedJsonType(spec: FieldSpec): string {
  switch (spec.kind) {
    case 'int':
    case 'number':
    case 'nullableInt':
      return 'number';
    case 'bool':
      return 'boolean';
    case 'ipList':
    case 'stringList':
    case 'taints':
    case 'objectList':
      return 'array';
    case 'map':
    case 'boolMap':
    case 'object':
      return 'object';
    default:
      return 'string';
  }
}

/** Checks one field's value against its spec (types, syntax, ranges). */
export function checkField(value: unknown, spec: FieldSpec, field: string, errs: ErrorList) {
  switch (spec.kind) {
    case 'string':
      if (typeof value !== 'string') return errs.invalid(field, value, 'must be a string');
      if (spec.check) {
        const why = spec.check(value);
        if (why) errs.invalid(field, value, why);
      }
      return;
    case 'enum':
      if (typeof value !== 'string' || !spec.values.includes(value))
        errs.notSupported(field, value, spec.values);
      return;
    case 'int':
    case 'nullableInt':
      if (spec.kind === 'nullableInt' && value === null) return;
      if (typeof value !== 'number' || !Number.isInteger(value))
        return errs.invalid(field, value, 'must be an integer');
      return checkRange(value, spec.min, spec.kind === 'int' ? spec.max : undefined, field, errs);
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value))
        return errs.invalid(field, value, 'must be a number');
      return checkRange(value, spec.min, undefined, field, errs);
    case 'bool':
      if (typeof value !== 'boolean') errs.invalid(field, value, 'must be a boolean');
      return;
    case 'duration':
      return checkDuration(value, spec.positive ?? false, field, errs);
    case 'ipList':
    case 'stringList':
      if (!Array.isArray(value)) return errs.invalid(field, value, 'must be a list of strings');
      for (const [i, v] of value.entries()) {
        if (typeof v !== 'string') {
          errs.invalid(`${field}[${i}]`, v, 'must be a string');
          continue;
        }
        const why = spec.kind === 'ipList' ? ip(v) : spec.check?.(v);
        if (why) errs.invalid(`${field}[${i}]`, v, why);
      }
      return;
    case 'taints':
      if (!Array.isArray(value)) return errs.invalid(field, value, 'must be a list of taints');
      for (const [i, t] of value.entries()) checkTaint(t, `${field}[${i}]`, errs);
      return;
    case 'objectList':
      if (!Array.isArray(value)) return errs.invalid(field, value, 'must be a list of objects');
      for (const [i, v] of value.entries()) {
        if (v === null || typeof v !== 'object' || Array.isArray(v)) {
          errs.invalid(`${field}[${i}]`, v, 'must be an object');
          continue;
        }
        for (const k of Object.keys(v)) if (!(k in spec.fields)) errs.unknown(`${field}[${i}].${k}`);
        for (const [k, s] of Object.entries(spec.fields))
          checkField((v as Record<string, unknown>)[k], s, `${field}[${i}].${k}`, errs);
      }
      return;
    case 'map':
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        return errs.invalid(field, value, 'must be a map of strings');
      }
      for (const [k, v] of Object.entries(value)) {
        const f = `${field}[${k}]`;
        if (spec.keys.length > 0 && !spec.keys.includes(k)) {
          errs.notSupported(f, k, spec.keys);
          continue;
        }
        if (typeof v !== 'string') {
          errs.invalid(f, v, 'must be a string');
          continue;
        }
        checkMapValue(v, spec.values, f, errs);
      }
      return;
    case 'boolMap':
      if (value === null || typeof value !== 'object' || Array.isArray(value))
        return errs.invalid(field, value, 'must be a map of booleans');
      for (const [k, v] of Object.entries(value))
        if (typeof v !== 'boolean') errs.invalid(`${field}[${k}]`, v, 'must be a boolean');
      return;
    case 'object':
      if (value === undefined && spec.optional) return;
      if (value === null || typeof value !== 'object') return errs.invalid(field, value, 'must be an object');
      for (const [k, s] of Object.entries(spec.fields)) {
        const v = (value as Record<string, unknown>)[k];
        if (v === undefined && spec.optional) continue;
        checkField(v, s, join(field, k), errs);
      }
      return;
    case 'ignored':
      return;
  }
}

function checkRange(
  v: number,
  min: number | undefined,
  max: number | undefined,
  field: string,
  errs: ErrorList,
) {
  if (min !== undefined && max !== undefined && (v < min || v > max)) {
    errs.invalid(field, v, `must be between ${min} and ${max}, inclusive`);
  } else if (min !== undefined && v < min) {
    errs.invalid(field, v, `must be greater than or equal to ${min}`);
  } else if (max !== undefined && v > max) {
    errs.invalid(field, v, `must be less than or equal to ${max}`);
  }
}

function checkDuration(value: unknown, positive: boolean, field: string, errs: ErrorList) {
  if (typeof value !== 'string')
    return errs.invalid(field, value, 'must be a duration string such as "1m30s"');
  try {
    const ms = parseDuration(value);
    if (positive && ms <= 0) errs.invalid(field, value, 'must be greater than 0');
    else if (ms < 0) errs.invalid(field, value, 'must not be negative');
  } catch (e) {
    errs.invalid(field, value, (e as Error).message);
  }
}

function checkMapValue(
  v: string,
  kind: 'quantity' | 'threshold' | 'duration',
  field: string,
  errs: ErrorList,
) {
  if (kind === 'duration') return checkDuration(v, false, field, errs);
  try {
    if (kind === 'threshold') {
      if (isDisabledThreshold(v)) return;
      const t = parseQuantityOrPercent(v);
      if ('quantity' in t && t.quantity.sign() < 0) errs.invalid(field, v, 'must not be negative');
    } else if (Quantity.parse(v).sign() < 0) {
      errs.invalid(field, v, 'must not be negative');
    }
  } catch (e) {
    errs.invalid(field, v, reasonOf(e));
  }
}

function checkTaint(t: unknown, field: string, errs: ErrorList) {
  if (t === null || typeof t !== 'object' || Array.isArray(t))
    return errs.invalid(field, t, 'must be a taint object');
  const { key, value, effect, ...rest } = t as Record<string, unknown>;
  for (const k of Object.keys(rest)) if (k !== 'timeAdded') errs.unknown(`${field}.${k}`);
  if (typeof key !== 'string' || key === '') errs.required(`${field}.key`);
  else {
    const why = qualifiedNameProblem(key);
    if (why) errs.invalid(`${field}.key`, key, why);
  }
  if (value !== undefined && (typeof value !== 'string' || !LABEL_VALUE.test(value))) {
    errs.invalid(`${field}.value`, value, LABEL_VALUE_HELP);
  }
  if (typeof effect !== 'string' || !TAINT_EFFECTS.includes(effect)) {
    if (effect === undefined || effect === '') errs.required(`${field}.effect`);
    else errs.notSupported(`${field}.effect`, effect, TAINT_EFFECTS);
  }
}

export const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/;
export const LABEL_VALUE_HELP =
  "a valid label value must be 63 characters or less and must be empty or begin and end with an alphanumeric character ('[A-Za-z0-9]') with '-', '_' or '.' between";
