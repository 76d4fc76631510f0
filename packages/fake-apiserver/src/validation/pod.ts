import {
  isExtendedResourceName,
  isHugePageResourceName,
  isNativeResource,
  Quantity,
  qualifiedNameProblem,
} from '@kh/apimachinery';
import { qosClass } from '../defaults/pod.js';
import { deepEqual } from '../meta/equal.js';
import { type ApiFeatureGates, featureGates } from '../meta/features.js';
import type { KObject } from '../meta/object.js';
import type { FieldErrors } from '../meta/status.js';
import { checkDnsLabel, checkDnsSubdomain, checkQualifiedKey } from './meta.js';

const RESTART_POLICIES = ['Always', 'OnFailure', 'Never'];
const DNS_POLICIES = ['ClusterFirstWithHostNet', 'ClusterFirst', 'Default', 'None'];
const PULL_POLICIES = ['Always', 'IfNotPresent', 'Never'];
const PROTOCOLS = ['TCP', 'UDP', 'SCTP'];
const TOLERATION_OPS = ['Exists', 'Equal'];
const EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];
const RESIZABLE = ['cpu', 'memory'];
const RESIZE_RESTART_POLICIES = ['NotRequired', 'RestartContainer'];
const PHASES = ['Pending', 'Running', 'Succeeded', 'Failed', 'Unknown'];

const PROBE_INTS = [
  'initialDelaySeconds',
  'timeoutSeconds',
  'periodSeconds',
  'successThreshold',
  'failureThreshold',
] as const;
const PORT_NAME = /^(?=.*[a-z])[a-z0-9]([a-z0-9]|-(?!-)){0,13}[a-z0-9]$|^[a-z]$/;

function validateProbePort(port: unknown, field: string, errs: FieldErrors) {
  if (typeof port === 'number') {
    if (!Number.isInteger(port) || port < 1 || port > 65535)
      errs.invalid(field, port, 'must be between 1 and 65535, inclusive');
  } else if (typeof port !== 'string' || !PORT_NAME.test(port)) {
    errs.invalid(field, port, 'must be a port number (1-65535) or a valid port name (IANA_SVC_NAME)');
  }
}

/**
 * A container probe as ValidateProbe sees it: exactly one handler, non-negative settings,
 * successThreshold 1 for liveness and startup, and a probe-level grace period only on those two
 * and only positive.
 */
function validateProbe(
  p: KObject | undefined,
  kind: 'liveness' | 'readiness' | 'startup',
  field: string,
  errs: FieldErrors,
) {
  if (p === undefined || p === null) return;
  const handlers = ['exec', 'httpGet', 'tcpSocket', 'grpc'].filter(
    (h) => p[h] !== undefined && p[h] !== null,
  );
  if (handlers.length === 0) errs.required(field, 'must specify a handler type');
  if (handlers.length > 1)
    errs.forbidden(`${field}.${handlers[1]}`, 'may not specify more than 1 handler type');
  for (const k of PROBE_INTS) {
    if (typeof p[k] === 'number' && p[k] < 0)
      errs.invalid(`${field}.${k}`, p[k], 'must be greater than or equal to 0');
  }
  if (kind !== 'readiness' && p.successThreshold !== undefined && p.successThreshold !== 1)
    errs.invalid(`${field}.successThreshold`, p.successThreshold, 'must be 1');
  const grace = p.terminationGracePeriodSeconds;
  if (grace !== undefined && grace !== null) {
    if (kind === 'readiness')
      errs.invalid(`${field}.terminationGracePeriodSeconds`, grace, 'must not be set for readinessProbes');
    else if (typeof grace !== 'number' || grace <= 0)
      errs.invalid(`${field}.terminationGracePeriodSeconds`, grace, 'must be greater than 0');
  }
  if (p.exec && !(p.exec.command?.length > 0)) errs.required(`${field}.exec.command`);
  if (p.httpGet) {
    validateProbePort(p.httpGet.port, `${field}.httpGet.port`, errs);
    if (p.httpGet.scheme !== undefined && !['HTTP', 'HTTPS'].includes(p.httpGet.scheme))
      errs.notSupported(`${field}.httpGet.scheme`, p.httpGet.scheme, ['HTTP', 'HTTPS']);
  }
  if (p.tcpSocket) validateProbePort(p.tcpSocket.port, `${field}.tcpSocket.port`, errs);
  if (p.grpc && !(Number.isInteger(p.grpc.port) && p.grpc.port >= 1 && p.grpc.port <= 65535))
    errs.invalid(`${field}.grpc.port`, p.grpc.port, 'must be between 1 and 65535, inclusive');
}

const PROBES = [
  ['livenessProbe', 'liveness'],
  ['readinessProbe', 'readiness'],
  ['startupProbe', 'startup'],
] as const;

const CONTAINER_RESTART_POLICIES = ['Always', 'OnFailure', 'Never'];
const RESTART_RULE_ACTIONS = ['Restart'];
const EXIT_CODE_OPERATORS = ['In', 'NotIn'];

/** A container's restartPolicyRules (ContainerRestartRules): Restart on listed exit codes. */
function validateRestartPolicyRules(rules: unknown, field: string, errs: FieldErrors) {
  if (!Array.isArray(rules)) return;
  rules.forEach((rule: KObject, i: number) => {
    const rf = `${field}[${i}]`;
    if (!RESTART_RULE_ACTIONS.includes(rule?.action))
      errs.notSupported(`${rf}.action`, rule?.action, RESTART_RULE_ACTIONS);
    const codes = rule?.exitCodes;
    if (codes === undefined || codes === null) {
      errs.required(`${rf}.exitCodes`, 'must be specified');
      return;
    }
    if (!EXIT_CODE_OPERATORS.includes(codes.operator))
      errs.notSupported(`${rf}.exitCodes.operator`, codes.operator, EXIT_CODE_OPERATORS);
    const seen = new Set<unknown>();
    (Array.isArray(codes.values) ? codes.values : []).forEach((v: unknown, j: number) => {
      if (seen.has(v)) errs.duplicate(`${rf}.exitCodes.values[${j}]`, v);
      seen.add(v);
    });
  });
}

/**
 * A container's own restart policy. Without ContainerRestartRules an init container may set only
 * Always (a sidecar), and a regular container's fields were dropped unless the stored pod used
 * them (dropDisabledRestartFields); what remains is checked as with the gate on.
 */
function validateContainerRestartPolicy(
  c: KObject,
  f: string,
  init: boolean,
  errs: FieldErrors,
  gates: ApiFeatureGates,
) {
  const set = c.restartPolicy !== undefined && c.restartPolicy !== null;
  const allowed = init && !gates.ContainerRestartRules ? ['Always'] : CONTAINER_RESTART_POLICIES;
  if (set && !allowed.includes(c.restartPolicy))
    errs.notSupported(`${f}.restartPolicy`, c.restartPolicy, allowed);
  if (Array.isArray(c.restartPolicyRules) && c.restartPolicyRules.length > 0 && !set)
    errs.required(`${f}.restartPolicy`, 'must specify restartPolicy when restart rules are used');
  validateRestartPolicyRules(c.restartPolicyRules, `${f}.restartPolicyRules`, errs);
}

function validateContainers(
  list: KObject[],
  field: string,
  volumes: Set<string>,
  errs: FieldErrors,
  seen: Set<string>,
  gates: ApiFeatureGates,
) {
  list.forEach((c, i) => {
    const f = `${field}[${i}]`;
    // An ephemeral container may set no restart policy at all (EPHEMERAL_FORBIDDEN).
    if (field !== 'spec.ephemeralContainers')
      validateContainerRestartPolicy(c, f, field === 'spec.initContainers', errs, gates);
    if (!c.name) errs.required(`${f}.name`);
    else {
      checkDnsLabel(errs, `${f}.name`, c.name);
      if (seen.has(c.name)) errs.duplicate(`${f}.name`, c.name);
      seen.add(c.name);
    }
    if (!c.image) errs.required(`${f}.image`);
    if (c.imagePullPolicy !== undefined && !PULL_POLICIES.includes(c.imagePullPolicy)) {
      errs.notSupported(`${f}.imagePullPolicy`, c.imagePullPolicy, PULL_POLICIES);
    }
    (c.ports ?? []).forEach((p: KObject, j: number) => {
      const pf = `${f}.ports[${j}]`;
      if (!(Number.isInteger(p.containerPort) && p.containerPort > 0 && p.containerPort < 65536)) {
        errs.invalid(`${pf}.containerPort`, p.containerPort, 'must be between 1 and 65535, inclusive');
      }
      if (p.protocol !== undefined && !PROTOCOLS.includes(p.protocol))
        errs.notSupported(`${pf}.protocol`, p.protocol, PROTOCOLS);
    });
    const env = new Set<string>();
    (c.env ?? []).forEach((e: KObject, j: number) => {
      if (!e.name) errs.required(`${f}.env[${j}].name`);
      env.add(e.name);
    });
    for (const kind of ['requests', 'limits'] as const) {
      for (const [r, q] of Object.entries(c.resources?.[kind] ?? {})) {
        const rf = `${f}.resources.${kind}[${r}]`;
        const nameProblem = containerResourceNameProblem(r);
        if (nameProblem) errs.invalid(rf, r, nameProblem);
        const v = Quantity.tryFromJSON(q);
        if (v === undefined) errs.invalid(rf, q, 'must be a valid quantity');
        else if (v.sign() < 0) errs.invalid(rf, q, 'must be greater than or equal to 0');
        else if (isExtendedResourceName(r) && v.milliValue() % 1000n !== 0n)
          errs.invalid(rf, v.toString(), 'must be an integer');
      }
    }
    const policies = new Set<string>();
    (c.resizePolicy ?? []).forEach((p: KObject, j: number) => {
      const pf = `${f}.resizePolicy[${j}]`;
      if (!RESIZABLE.includes(p.resourceName))
        errs.notSupported(`${pf}.resourceName`, p.resourceName, RESIZABLE);
      else if (policies.has(p.resourceName)) errs.duplicate(`${pf}.resourceName`, p.resourceName);
      policies.add(p.resourceName);
      if (!RESIZE_RESTART_POLICIES.includes(p.restartPolicy))
        errs.notSupported(`${pf}.restartPolicy`, p.restartPolicy, RESIZE_RESTART_POLICIES);
    });
    for (const [r, q] of Object.entries(c.resources?.requests ?? {})) {
      const lim = c.resources?.limits?.[r];
      // Extended resources and hugepages cannot be overcommitted: their request is their limit.
      const overcommit = isNativeResource(r) && !isHugePageResourceName(r);
      if (lim === undefined) {
        if (!overcommit)
          errs.required(`${f}.resources.limits`, 'Limit must be set for non overcommitable resources');
        // Most requests come without a limit; a failed parse throws (and captures a stack).
        continue;
      }
      const request = Quantity.tryFromJSON(q);
      const limit = Quantity.tryFromJSON(lim);
      if (request === undefined || limit === undefined) continue;
      if (!overcommit && request.cmp(limit) !== 0) {
        errs.invalid(
          `${f}.resources.requests`,
          request.toString(),
          `must be equal to ${r} limit of ${limit.toString()}`,
        );
      } else if (request.cmp(limit) > 0) {
        errs.invalid(`${f}.resources.requests`, q, `must be less than or equal to ${r} limit of ${lim}`);
      }
    }
    (c.volumeMounts ?? []).forEach((m: KObject, j: number) => {
      const mf = `${f}.volumeMounts[${j}]`;
      if (!m.name) errs.required(`${mf}.name`);
      else if (!volumes.has(m.name)) errs.notFound(`${mf}.name`, m.name);
      if (!m.mountPath) errs.required(`${mf}.mountPath`);
      if (m.subPath && m.subPathExpr)
        errs.invalid(`${mf}.subPathExpr`, m.subPathExpr, 'subPathExpr and subPath are mutually exclusive');
      if (m.subPath) checkDescendingPath(errs, `${mf}.subPath`, m.subPath);
      if (m.subPathExpr) checkDescendingPath(errs, `${mf}.subPathExpr`, m.subPathExpr);
    });
    // Only app containers and sidecars (restartable init containers) are probed; ephemeral
    // containers may set no probe at all (EPHEMERAL_FORBIDDEN says so).
    const probed = field === 'spec.containers' || c.restartPolicy === 'Always';
    if (field !== 'spec.ephemeralContainers')
      for (const [key, kind] of PROBES) {
        if (probed) validateProbe(c[key], kind, `${f}.${key}`, errs);
        else if (c[key] !== undefined && c[key] !== null)
          errs.forbidden(`${f}.${key}`, 'may not be set for init containers without restartPolicy=Always');
      }
  });
}

/**
 * A path that must stay below the directory it is joined to (subPath, a projected file's path),
 * as ValidateVolumeMounts checks it: relative, and no '..' element.
 */
function checkDescendingPath(errs: FieldErrors, field: string, p: unknown) {
  if (typeof p !== 'string') return;
  if (p.startsWith('/')) errs.invalid(field, p, 'must be a relative path');
  if (p.split('/').includes('..')) errs.invalid(field, p, "must not contain '..'");
}

/** The file paths a configMap, secret, downwardAPI or projected volume writes: below the volume. */
function validateVolumeItemPaths(v: KObject, field: string, errs: FieldErrors) {
  const items = (list: unknown, f: string) => {
    if (!Array.isArray(list)) return;
    list.forEach((it: KObject, i: number) => {
      const p = it?.path;
      if (typeof p !== 'string') return;
      checkDescendingPath(errs, `${f}[${i}].path`, p);
      if (p.startsWith('..')) errs.invalid(`${f}[${i}].path`, p, "must not start with '..'");
    });
  };
  items(v.configMap?.items, `${field}.configMap.items`);
  items(v.secret?.items, `${field}.secret.items`);
  items(v.downwardAPI?.items, `${field}.downwardAPI.items`);
  (v.projected?.sources ?? []).forEach((src: KObject, j: number) => {
    const f = `${field}.projected.sources[${j}]`;
    items(src?.configMap?.items, `${f}.configMap.items`);
    items(src?.secret?.items, `${f}.secret.items`);
    items(src?.downwardAPI?.items, `${f}.downwardAPI.items`);
    if (typeof src?.serviceAccountToken?.path === 'string')
      checkDescendingPath(errs, `${f}.serviceAccountToken.path`, src.serviceAccountToken.path);
  });
}

const usesRestartRules = (spec: KObject | undefined) =>
  (spec?.containers ?? []).some(
    (c: KObject) => (c.restartPolicy ?? null) !== null || (c.restartPolicyRules?.length ?? 0) > 0,
  ) || (spec?.initContainers ?? []).some((c: KObject) => (c.restartPolicyRules?.length ?? 0) > 0);

/**
 * As kube-apiserver's dropDisabledPodFields: without ContainerRestartRules a new pod's regular
 * container restartPolicy and every restartPolicyRules are dropped, unless the stored pod uses them.
 */
export function dropDisabledRestartFields(
  spec: KObject | undefined,
  old: KObject | undefined,
  gates: ApiFeatureGates = featureGates(),
) {
  if (gates.ContainerRestartRules || usesRestartRules(old) || spec === undefined || spec === null) return;
  for (const c of spec.containers ?? []) {
    delete c.restartPolicy;
    delete c.restartPolicyRules;
  }
  for (const c of spec.initContainers ?? []) delete c.restartPolicyRules;
}

/** Pod validation close to Kubernetes' ValidatePodCreate. */
export function validatePodSpec(
  spec: KObject | undefined,
  errs: FieldErrors,
  gates: ApiFeatureGates = featureGates(),
) {
  if (spec === undefined || spec === null) {
    errs.required('spec');
    return;
  }
  const volumes = new Set<string>();
  (spec.volumes ?? []).forEach((v: KObject, i: number) => {
    if (!v.name) errs.required(`spec.volumes[${i}].name`);
    else {
      checkDnsLabel(errs, `spec.volumes[${i}].name`, v.name);
      if (volumes.has(v.name)) errs.duplicate(`spec.volumes[${i}].name`, v.name);
      volumes.add(v.name);
    }
    if (v && typeof v === 'object') validateVolumeItemPaths(v, `spec.volumes[${i}]`, errs);
  });
  if (!Array.isArray(spec.containers) || spec.containers.length === 0) errs.required('spec.containers');
  const names = new Set<string>();
  validateContainers(spec.containers ?? [], 'spec.containers', volumes, errs, names, gates);
  validateContainers(spec.initContainers ?? [], 'spec.initContainers', volumes, errs, names, gates);
  validateEphemeralContainers(spec, volumes, errs, names, gates);
  if (!RESTART_POLICIES.includes(spec.restartPolicy))
    errs.notSupported('spec.restartPolicy', spec.restartPolicy, RESTART_POLICIES);
  if (!DNS_POLICIES.includes(spec.dnsPolicy))
    errs.notSupported('spec.dnsPolicy', spec.dnsPolicy, DNS_POLICIES);
  if (typeof spec.terminationGracePeriodSeconds === 'number' && spec.terminationGracePeriodSeconds < 0) {
    errs.invalid('spec.terminationGracePeriodSeconds', spec.terminationGracePeriodSeconds, 'must be >= 0');
  }
  if (typeof spec.activeDeadlineSeconds === 'number' && spec.activeDeadlineSeconds <= 0) {
    errs.invalid(
      'spec.activeDeadlineSeconds',
      spec.activeDeadlineSeconds,
      'must be between 1 and 2147483647, inclusive',
    );
  }
  for (const k of Object.keys(spec.nodeSelector ?? {})) checkQualifiedKey(errs, 'spec.nodeSelector', k);
  validateTolerations(spec.tolerations, errs, 'spec.tolerations');
  validateSysctls(spec.securityContext?.sysctls, errs);
  const fsGroupChangePolicy = spec.securityContext?.fsGroupChangePolicy;
  if (fsGroupChangePolicy !== undefined && !FS_GROUP_CHANGE_POLICIES.includes(fsGroupChangePolicy))
    errs.notSupported(
      'spec.securityContext.fsGroupChangePolicy',
      fsGroupChangePolicy,
      FS_GROUP_CHANGE_POLICIES,
    );
  validateHostUsers(spec, errs);
  if (spec.priorityClassName) checkDnsSubdomain(errs, 'spec.priorityClassName', spec.priorityClassName);
  if (spec.preemptionPolicy !== undefined)
    validatePreemptionPolicy(spec.preemptionPolicy, errs, 'spec.preemptionPolicy');
}

const PREEMPTION_POLICIES = ['PreemptLowerPriority', 'Never'];

/** A pod's or a PriorityClass's preemptionPolicy: set, and one of the two policies. */
export function validatePreemptionPolicy(policy: unknown, errs: FieldErrors, path: string) {
  if (policy === '' || policy === null) errs.required(path);
  else if (!PREEMPTION_POLICIES.includes(policy as string))
    errs.notSupported(path, policy, PREEMPTION_POLICIES);
}

/**
 * The container fields an ephemeral container may not set: it must not be relied on for the pod's
 * service (no ports, probes, lifecycle or resources), kube-apiserver's allow list turned around.
 */
const EPHEMERAL_FORBIDDEN = [
  'ports',
  'resources',
  'resizePolicy',
  'restartPolicy',
  'livenessProbe',
  'readinessProbe',
  'startupProbe',
  'lifecycle',
];

const isZero = (v: unknown): boolean =>
  v === undefined ||
  v === null ||
  (Array.isArray(v) && v.length === 0) ||
  (typeof v === 'object' && Object.values(v as KObject).every(isZero));

/**
 * validateEphemeralContainers: each as a container, named uniquely across all of the pod's
 * containers (`names` holds the others'), targeting a container or init container, without the
 * fields EPHEMERAL_FORBIDDEN lists nor subPath mounts (bind mounts that outlive the container).
 */
function validateEphemeralContainers(
  spec: KObject,
  volumes: Set<string>,
  errs: FieldErrors,
  names: Set<string>,
  gates: ApiFeatureGates,
) {
  const list: KObject[] = spec.ephemeralContainers ?? [];
  const targets = new Set(names);
  validateContainers(list, 'spec.ephemeralContainers', volumes, errs, names, gates);
  list.forEach((c, i) => {
    const f = `spec.ephemeralContainers[${i}]`;
    if (c.targetContainerName && !targets.has(c.targetContainerName))
      errs.notFound(`${f}.targetContainerName`, c.targetContainerName);
    for (const k of EPHEMERAL_FORBIDDEN)
      if (!isZero(c[k])) errs.forbidden(`${f}.${k}`, 'cannot be set for an Ephemeral Container');
    (c.volumeMounts ?? []).forEach((m: KObject, j: number) => {
      for (const k of ['subPath', 'subPathExpr'])
        if (m?.[k])
          errs.forbidden(`${f}.volumeMounts[${j}].${k}`, 'cannot be set for an Ephemeral Container');
    });
  });
}

/** A pod is created without ephemeral containers: they are added later, through their subresource. */
export function validatePodCreate(spec: KObject | undefined, errs: FieldErrors) {
  if ((spec?.ephemeralContainers ?? []).length > 0)
    errs.forbidden('spec.ephemeralContainers', 'cannot be set on create');
}

/**
 * ValidatePodEphemeralContainersUpdate over a pods/ephemeralcontainers write: `pod` is the stored
 * pod with the request's ephemeral containers. The spec must stay valid, and those already there
 * stay as they are: ephemeral containers are only ever added. (Upstream appends a Go diff to the
 * "changed" message, which has no equivalent here.)
 */
export function validateEphemeralContainersUpdate(pod: KObject, old: KObject, errs: FieldErrors) {
  if (old.metadata?.annotations?.['kubernetes.io/config.mirror'] !== undefined) {
    errs.forbidden('', 'static pods do not support ephemeral containers');
    return;
  }
  validatePodSpec(pod.spec, errs);
  const now = new Map<string, KObject>(
    (pod.spec?.ephemeralContainers ?? []).map((c: KObject) => [c.name, c]),
  );
  for (const before of (old.spec?.ephemeralContainers ?? []) as KObject[]) {
    const after = now.get(before.name);
    if (after === undefined) {
      errs.forbidden(
        'spec.ephemeralContainers',
        `existing ephemeral containers ${JSON.stringify(before.name)} may not be removed\n`,
      );
    } else if (!deepEqual(after, before)) {
      errs.forbidden(
        'spec.ephemeralContainers',
        `existing ephemeral containers ${JSON.stringify(before.name)} may not be changed\n`,
      );
    }
  }
}

/** PodFSGroupChangePolicy's values, in kube-apiserver's (sorted) order. */
const FS_GROUP_CHANGE_POLICIES = ['Always', 'OnRootMismatch'];

/**
 * A pod in its own user namespace may not share the host's network, PID or IPC namespace, as
 * ValidatePodSpec rules (the field names keep kube-apiserver's spelling, HostPID and HostIPC).
 */
function validateHostUsers(spec: KObject, errs: FieldErrors) {
  if (spec.hostUsers !== false) return;
  const detail = 'when `pod.Spec.HostUsers` is false';
  if (spec.hostNetwork === true) errs.forbidden('spec.hostNetwork', detail);
  if (spec.hostPID === true) errs.forbidden('spec.HostPID', detail);
  if (spec.hostIPC === true) errs.forbidden('spec.HostIPC', detail);
}

// A sysctl name: segments of lower-case alphanumerics, `-` and `_`, separated by `.` or `/`.
const SYSCTL_NAME = /^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$/;
const SYSCTL_MAX_LENGTH = 253;

/** Sysctl names, as ValidatePodSecurityContext checks them: present, well-formed, not repeated. */
function validateSysctls(sysctls: KObject[] | undefined, errs: FieldErrors) {
  const seen = new Set<string>();
  (sysctls ?? []).forEach((s: KObject, i: number) => {
    const field = `spec.securityContext.sysctls[${i}].name`;
    const name = s?.name;
    if (typeof name !== 'string' || name === '') errs.required(field);
    else if (name.length > SYSCTL_MAX_LENGTH || !SYSCTL_NAME.test(name)) {
      errs.invalid(
        field,
        name,
        `must have at most ${SYSCTL_MAX_LENGTH} characters and match regex ${SYSCTL_NAME.source}`,
      );
    } else if (seen.has(name)) errs.duplicate(field, name);
    if (typeof name === 'string') seen.add(name);
  });
}

/** Tolerations as a pod and a RuntimeClass's scheduling carry them. */
export function validateTolerations(tolerations: KObject[] | undefined, errs: FieldErrors, path: string) {
  (tolerations ?? []).forEach((t: KObject, i: number) => {
    const f = `${path}[${i}]`;
    if (t.operator !== undefined && !TOLERATION_OPS.includes(t.operator))
      errs.notSupported(`${f}.operator`, t.operator, TOLERATION_OPS);
    if (t.operator === 'Exists' && t.value)
      errs.invalid(`${f}.operator`, t.value, "value must be empty when `operator` is 'Exists'");
    if (t.effect && !EFFECTS.includes(t.effect)) errs.notSupported(`${f}.effect`, t.effect, EFFECTS);
    if (t.tolerationSeconds !== undefined && t.effect !== 'NoExecute') {
      errs.invalid(`${f}.effect`, t.effect, "effect must be 'NoExecute' when `tolerationSeconds` is set");
    }
  });
}

/** Only these pod spec fields may change after creation. */
export function validatePodSpecUpdate(spec: KObject, old: KObject, errs: FieldErrors) {
  const mutable = (s: KObject) => {
    const c = structuredClone(s);
    for (const list of ['containers', 'initContainers']) for (const x of c[list] ?? []) delete x.image;
    delete c.activeDeadlineSeconds;
    delete c.tolerations;
    delete c.terminationGracePeriodSeconds;
    delete c.schedulingGates;
    return c;
  };
  if (!deepEqual(mutable(spec), mutable(old))) {
    errs.forbidden(
      'spec',
      'pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)',
    );
  }
  if (old.nodeName && spec.nodeName !== old.nodeName)
    errs.invalid('spec.nodeName', spec.nodeName, 'field is immutable');
}

export function validatePodStatus(status: KObject | undefined, errs: FieldErrors) {
  if (status?.phase !== undefined && !PHASES.includes(status.phase))
    errs.notSupported('status.phase', status.phase, PHASES);
  (status?.conditions ?? []).forEach((c: KObject, i: number) => {
    if (!c.type) errs.required(`status.conditions[${i}].type`);
    if (!['True', 'False', 'Unknown'].includes(c.status)) {
      errs.notSupported(`status.conditions[${i}].status`, c.status, ['True', 'False', 'Unknown']);
    }
  });
}

/** Keys of `after` that `before` had and `after` lost. */
const removed = (after: KObject | undefined, before: KObject | undefined) =>
  Object.keys(before ?? {}).some((k) => RESIZABLE.includes(k) && after?.[k] === undefined);

/**
 * ValidatePodResize (kube-apiserver 1.33) over a pods/resize write: `pod` is the stored pod with
 * the request's containers' resources and resizePolicy (and names, to catch reordering) in it.
 */
export function validatePodResize(pod: KObject, old: KObject, errs: FieldErrors) {
  validatePodSpec(pod.spec, errs);
  if (old.metadata?.annotations?.['kubernetes.io/config.mirror'] !== undefined) {
    errs.forbidden('', 'static pods cannot be resized');
    return;
  }
  if (old.spec?.os?.name === 'windows') {
    errs.forbidden('', 'windows pods cannot be resized');
    return;
  }
  const oldQos = old.status?.qosClass ?? qosClass(old.spec);
  if (qosClass(pod.spec) !== oldQos)
    errs.invalid('spec', oldQos, 'Pod QOS Class may not change as a result of resizing');
  // Version skew guard: a node that reports no resources for its running containers cannot resize.
  const running = (old.status?.containerStatuses ?? []).find((s: KObject) => s.state?.running);
  if (running !== undefined && running.resources === undefined)
    errs.forbidden('spec', 'Pod running on node without support for resize');
  // The rest assumes both lists kept their order (validatePodResizeContainerOrdering).
  let reordered = false;
  for (const list of ['containers', 'initContainers'] as const) {
    const ctrs: KObject[] = pod.spec?.[list] ?? [];
    const oldCtrs: KObject[] = old.spec?.[list] ?? [];
    if (ctrs.length !== oldCtrs.length) {
      errs.forbidden(`spec.${list}`, `${list} may not be added or removed on resize`);
      reordered = true;
      continue;
    }
    oldCtrs.forEach((c, i) => {
      if (ctrs[i]!.name === c.name) return;
      errs.forbidden(`spec.${list}[${i}].name`, `${list} may not be renamed or reordered on resize`);
      reordered = true;
    });
  }
  if (reordered) return;
  // Sidecars are resized as containers are; a regular init container's resources never change.
  const resizable = (list: string, c: KObject) => list === 'containers' || c.restartPolicy === 'Always';
  for (const list of ['initContainers', 'containers'] as const) {
    (old.spec?.[list] ?? []).forEach((c: KObject, i: number) => {
      if (!resizable(list, c)) return;
      const f = `spec.${list}[${i}].resources`;
      const now = pod.spec[list][i].resources ?? {};
      if (removed(now.requests, c.resources?.requests))
        errs.forbidden(`${f}.requests`, 'resource requests cannot be removed');
      if (removed(now.limits, c.resources?.limits))
        errs.forbidden(`${f}.limits`, 'resource limits cannot be removed');
    });
  }
  // With cpu and memory put back as they were, nothing else may differ.
  const rest = (s: KObject) => {
    const c = structuredClone(s);
    for (const list of ['containers', 'initContainers'] as const) {
      for (const x of c[list] ?? []) {
        if (!resizable(list, x)) continue;
        delete x.resizePolicy;
        for (const kind of ['requests', 'limits']) {
          for (const r of RESIZABLE) delete x.resources?.[kind]?.[r];
          if (x.resources?.[kind] && Object.keys(x.resources[kind]).length === 0) delete x.resources[kind];
        }
      }
    }
    return c;
  };
  const now = rest(pod.spec ?? {});
  const before = rest(old.spec ?? {});
  const inits = (old.spec?.initContainers ?? []) as KObject[];
  if (
    inits.some(
      (c, i) =>
        !resizable('initContainers', c) && !deepEqual(now.initContainers[i], before.initContainers[i]),
    )
  )
    errs.forbidden('spec', 'resources for non-sidecar init containers are immutable');
  else if (!deepEqual(now, before)) errs.forbidden('spec', 'only cpu and memory resources are mutable');
}

const STANDARD_CONTAINER_RESOURCES = ['cpu', 'memory', 'ephemeral-storage'];

/** A container resource is a standard one, one in kubernetes.io's namespace, or an extended one. */
function containerResourceNameProblem(name: string): string | undefined {
  const qualified = qualifiedNameProblem(name);
  if (qualified) return qualified;
  if (!name.includes('/'))
    return STANDARD_CONTAINER_RESOURCES.includes(name) || isHugePageResourceName(name)
      ? undefined
      : 'must be a standard resource for containers';
  if (!isNativeResource(name) && !isExtendedResourceName(name))
    return "doesn't follow extended resource name standard";
  return undefined;
}
