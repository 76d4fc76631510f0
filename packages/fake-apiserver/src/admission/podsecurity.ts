// Pod Security admission (kube-apiserver's PodSecurity plugin): each namespace's
// `pod-security.kubernetes.io/{enforce,audit,warn}[-version]` labels pick a level of the Pod
// Security Standards (privileged, baseline, restricted) at a version; pods that break the enforce
// level are refused with 403, those that break the warn level get a Warning header, those that
// break the audit level are reported to the audit sink. Exempt users, runtime classes and
// namespaces skip every check. The checks are upstream's, worded as its messages word them.
import type { KObject } from '../meta/object.js';
import { FieldErrors, forbidden } from '../meta/status.js';
import type { Store } from '../storage/store.js';
import type { AdmissionAttributes, AdmissionPlugin } from './attributes.js';

export const LEVELS = ['privileged', 'baseline', 'restricted'] as const;
export type Level = (typeof LEVELS)[number];
export const MODES = ['enforce', 'audit', 'warn'] as const;
export type Mode = (typeof MODES)[number];
const LABEL_PREFIX = 'pod-security.kubernetes.io/';
/** The server's own minor version: a newer version label means `latest`. */
const SERVER_MINOR = 33;

export interface LevelVersion {
  level: Level;
  /** 'latest', or the minor version of a `v1.<minor>` label. */
  version: 'latest' | number;
}

/** kube-apiserver's PodSecurityConfiguration (pod-security.admission.config.k8s.io/v1). */
export interface PodSecurityConfiguration {
  defaults?: Partial<Record<Mode | `${Mode}-version`, string>>;
  exemptions?: { usernames?: string[]; runtimeClasses?: string[]; namespaces?: string[] };
}

/** What an audit-level violation reports (kube-apiserver puts it in the audit log's annotations). */
export interface PodSecurityAuditRecord {
  user: string;
  namespace: string;
  name: string;
  policy: string;
  violations: string;
}

const policyName = (p: LevelVersion) => `${p.level}:${p.version === 'latest' ? 'latest' : `v1.${p.version}`}`;

function parseLevel(v: string | undefined): Level | undefined {
  return LEVELS.find((l) => l === v);
}

function parseVersion(v: string | undefined): LevelVersion['version'] | undefined {
  if (v === undefined || v === 'latest') return 'latest';
  const m = /^v1\.(0|[1-9]\d{0,3})$/.exec(v);
  if (!m) return undefined;
  const minor = Number(m[1]);
  return minor >= SERVER_MINOR ? 'latest' : minor;
}

/**
 * The policy a namespace's labels give each mode, over the defaults; an invalid label value is
 * reported, and evaluated as restricted:latest, as upstream fails closed.
 */
export function namespacePolicy(
  labels: Record<string, string> | undefined,
  defaults: Record<Mode, LevelVersion>,
): { policy: Record<Mode, LevelVersion>; errs: FieldErrors } {
  const errs = new FieldErrors();
  const policy = {} as Record<Mode, LevelVersion>;
  for (const mode of MODES) {
    const levelKey = `${LABEL_PREFIX}${mode}`;
    const versionKey = `${levelKey}-version`;
    const rawLevel = labels?.[levelKey];
    const rawVersion = labels?.[versionKey];
    let level = rawLevel === undefined ? defaults[mode].level : parseLevel(rawLevel);
    if (level === undefined) {
      errs.notSupported(`metadata.labels[${levelKey}]`, rawLevel, [...LEVELS]);
      level = 'restricted';
    }
    let version = rawVersion === undefined ? defaults[mode].version : parseVersion(rawVersion);
    if (version === undefined) {
      errs.invalid(`metadata.labels[${versionKey}]`, rawVersion, 'must be "latest" or "v1.x"');
      version = 'latest';
    }
    policy[mode] = { level, version };
  }
  return { policy, errs };
}

// ---- The checks of the Pod Security Standards ----

interface Container extends KObject {
  name: string;
}

const containersOf = (spec: KObject): Container[] => [
  ...(spec.initContainers ?? []),
  ...(spec.containers ?? []),
  ...(spec.ephemeralContainers ?? []),
];

const quote = (v: unknown) => JSON.stringify(String(v));
const joinQuote = (vs: unknown[]) => vs.map(quote).join(', ');
const plural = (n: number, one: string, many: string) => (n === 1 ? one : many);
const containerWord = (names: string[]) =>
  `${plural(names.length, 'container', 'containers')} ${joinQuote(names)}`;

interface Violation {
  reason: string;
  detail: string;
}

interface Check {
  /** Evaluated from this minor version on (0: always). */
  since?: number;
  /** A check whose violations a stricter one reports instead at the restricted level. */
  id: string;
  overrides?: string;
  run(pod: KObject, spec: KObject, version: number): Violation | undefined;
}

const BASELINE_CAPABILITIES = new Set([
  'AUDIT_WRITE',
  'CHOWN',
  'DAC_OVERRIDE',
  'FOWNER',
  'FSETID',
  'KILL',
  'MKNOD',
  'NET_BIND_SERVICE',
  'SETFCAP',
  'SETGID',
  'SETPCAP',
  'SETUID',
  'SYS_CHROOT',
]);

/** The safe sysctls, with the version each joined the list. */
const SAFE_SYSCTLS: [string, number][] = [
  ['kernel.shm_rmid_forced', 0],
  ['net.ipv4.ip_local_port_range', 0],
  ['net.ipv4.ip_unprivileged_port_start', 0],
  ['net.ipv4.tcp_syncookies', 0],
  ['net.ipv4.ping_group_range', 0],
  ['net.ipv4.ip_local_reserved_ports', 27],
  ['net.ipv4.tcp_keepalive_time', 29],
  ['net.ipv4.tcp_fin_timeout', 29],
  ['net.ipv4.tcp_keepalive_intvl', 29],
  ['net.ipv4.tcp_keepalive_probes', 29],
  ['net.ipv4.tcp_rmem', 32],
  ['net.ipv4.tcp_wmem', 32],
];

const SELINUX_TYPES = new Set([
  '',
  'container_t',
  'container_init_t',
  'container_kvm_t',
  'container_engine_t',
]);
const RESTRICTED_VOLUME_TYPES = new Set([
  'configMap',
  'csi',
  'downwardAPI',
  'emptyDir',
  'ephemeral',
  'persistentVolumeClaim',
  'projected',
  'secret',
]);

const sc = (o: KObject): KObject => o.securityContext ?? {};
const windows = (spec: KObject) => spec.os?.name === 'windows';

const BASELINE: Check[] = [
  {
    id: 'hostProcess',
    run(_pod, spec) {
      const names = containersOf(spec)
        .filter((c) => sc(c).windowsOptions?.hostProcess === true)
        .map((c) => c.name);
      const podSet = sc(spec).windowsOptions?.hostProcess === true;
      if (!podSet && names.length === 0) return undefined;
      const who = [podSet ? 'pod' : '', names.length ? containerWord(names) : '']
        .filter(Boolean)
        .join(' and ');
      return {
        reason: 'hostProcess',
        detail: `${who} must not set securityContext.windowsOptions.hostProcess=true`,
      };
    },
  },
  {
    id: 'hostNamespaces',
    run(_pod, spec) {
      const set = ['hostNetwork', 'hostPID', 'hostIPC']
        .filter((k) => spec[k] === true)
        .map((k) => `${k}=true`);
      return set.length ? { reason: 'host namespaces', detail: set.join(', ') } : undefined;
    },
  },
  {
    id: 'privileged',
    run(_pod, spec) {
      const names = containersOf(spec)
        .filter((c) => sc(c).privileged === true)
        .map((c) => c.name);
      return names.length
        ? {
            reason: 'privileged',
            detail: `${containerWord(names)} must not set securityContext.privileged=true`,
          }
        : undefined;
    },
  },
  {
    id: 'capabilities_baseline',
    run(_pod, spec) {
      const names: string[] = [];
      const caps = new Set<string>();
      for (const c of containersOf(spec)) {
        const bad = (sc(c).capabilities?.add ?? []).filter((x: string) => !BASELINE_CAPABILITIES.has(x));
        if (bad.length) {
          names.push(c.name);
          for (const x of bad) caps.add(x);
        }
      }
      return names.length
        ? {
            reason: 'non-default capabilities',
            detail: `${containerWord(names)} must not include ${joinQuote([...caps])} in securityContext.capabilities.add`,
          }
        : undefined;
    },
  },
  {
    id: 'hostPathVolumes',
    run(_pod, spec) {
      const names = (spec.volumes ?? [])
        .filter((v: KObject) => v?.hostPath != null)
        .map((v: KObject) => v.name);
      return names.length
        ? {
            reason: 'hostPath volumes',
            detail: `${plural(names.length, 'volume', 'volumes')} ${joinQuote(names)}`,
          }
        : undefined;
    },
  },
  {
    id: 'hostPorts',
    run(_pod, spec) {
      const names: string[] = [];
      const ports = new Set<number>();
      for (const c of containersOf(spec)) {
        const used = (c.ports ?? [])
          .map((p: KObject) => p?.hostPort)
          .filter((p: unknown) => typeof p === 'number' && p !== 0);
        if (used.length) {
          names.push(c.name);
          for (const p of used) ports.add(p);
        }
      }
      if (!names.length) return undefined;
      const one = names.length === 1;
      return {
        reason: 'hostPort',
        detail: `${containerWord(names)} ${one ? 'uses' : 'use'} ${plural(ports.size, 'hostPort', 'hostPorts')} ${[...ports].join(', ')}`,
      };
    },
  },
  {
    id: 'appArmorProfile',
    run(pod, spec) {
      const bad: string[] = [];
      for (const [k, v] of Object.entries<string>(pod.metadata?.annotations ?? {})) {
        if (!k.startsWith('container.apparmor.security.beta.kubernetes.io/')) continue;
        if (v !== 'runtime/default' && !v.startsWith('localhost/')) bad.push(`${k}=${quote(v)}`);
      }
      const field = (o: KObject, who: string) => {
        if (sc(o).appArmorProfile?.type === 'Unconfined')
          bad.push(`${who} must not set securityContext.appArmorProfile.type to "Unconfined"`);
      };
      field(spec, 'pod');
      for (const c of containersOf(spec)) field(c, `container ${quote(c.name)}`);
      return bad.length
        ? {
            reason: plural(bad.length, 'forbidden AppArmor profile', 'forbidden AppArmor profiles'),
            detail: bad.join(', '),
          }
        : undefined;
    },
  },
  {
    id: 'seLinuxOptions',
    run(_pod, spec) {
      const bad: string[] = [];
      const check = (o: KObject, who: string) => {
        const se = sc(o).seLinuxOptions;
        if (!se) return;
        const parts: string[] = [];
        if (!SELINUX_TYPES.has(se.type ?? '')) parts.push(`type ${quote(se.type)}`);
        if (se.user) parts.push(`user ${quote(se.user)}`);
        if (se.role) parts.push(`role ${quote(se.role)}`);
        if (parts.length)
          bad.push(`${who} set forbidden securityContext.seLinuxOptions: ${parts.join('; ')}`);
      };
      check(spec, 'pod');
      for (const c of containersOf(spec)) check(c, `container ${quote(c.name)}`);
      return bad.length ? { reason: 'seLinuxOptions', detail: bad.join(', ') } : undefined;
    },
  },
  {
    id: 'procMount',
    run(_pod, spec) {
      const names: string[] = [];
      const types = new Set<string>();
      for (const c of containersOf(spec)) {
        const pm = sc(c).procMount;
        if (pm !== undefined && pm !== null && pm !== 'Default') {
          names.push(c.name);
          types.add(pm);
        }
      }
      return names.length
        ? {
            reason: 'procMount',
            detail: `${containerWord(names)} must not set securityContext.procMount to ${joinQuote([...types])}`,
          }
        : undefined;
    },
  },
  {
    id: 'seccompProfile_baseline',
    run(_pod, spec) {
      const bad: string[] = [];
      if (sc(spec).seccompProfile?.type === 'Unconfined')
        bad.push('pod must not set securityContext.seccompProfile.type to "Unconfined"');
      const names = containersOf(spec)
        .filter((c) => sc(c).seccompProfile?.type === 'Unconfined')
        .map((c) => c.name);
      if (names.length)
        bad.push(`${containerWord(names)} must not set securityContext.seccompProfile.type to "Unconfined"`);
      return bad.length ? { reason: 'seccompProfile', detail: bad.join(', ') } : undefined;
    },
  },
  {
    id: 'sysctls',
    run(_pod, spec, version) {
      const safe = new Set(SAFE_SYSCTLS.filter(([, since]) => version >= since).map(([n]) => n));
      const bad = (sc(spec).sysctls ?? []).map((s: KObject) => s?.name).filter((n: string) => !safe.has(n));
      return bad.length ? { reason: 'forbidden sysctls', detail: bad.join(', ') } : undefined;
    },
  },
];

const RESTRICTED: Check[] = [
  {
    id: 'restrictedVolumes',
    overrides: 'hostPathVolumes',
    run(_pod, spec) {
      const names: string[] = [];
      const types = new Set<string>();
      for (const v of spec.volumes ?? []) {
        const type = Object.keys(v ?? {}).find((k) => k !== 'name');
        if (type !== undefined && !RESTRICTED_VOLUME_TYPES.has(type)) {
          names.push(v.name);
          types.add(type);
        }
      }
      if (!names.length) return undefined;
      const one = names.length === 1;
      return {
        reason: 'restricted volume types',
        detail: `${plural(names.length, 'volume', 'volumes')} ${joinQuote(names)} ${one ? 'uses' : 'use'} restricted volume ${plural(types.size, 'type', 'types')} ${joinQuote([...types])}`,
      };
    },
  },
  {
    id: 'allowPrivilegeEscalation',
    run(_pod, spec) {
      if (windows(spec)) return undefined;
      const names = containersOf(spec)
        .filter((c) => sc(c).allowPrivilegeEscalation !== false)
        .map((c) => c.name);
      return names.length
        ? {
            reason: 'allowPrivilegeEscalation != false',
            detail: `${containerWord(names)} must set securityContext.allowPrivilegeEscalation=false`,
          }
        : undefined;
    },
  },
  {
    id: 'runAsNonRoot',
    run(_pod, spec) {
      // Who sets it to false says so; otherwise containers not covered by the pod's true.
      const podValue = sc(spec).runAsNonRoot;
      const setters = podValue === false ? ['pod'] : [];
      const explicit: string[] = [];
      const implicit: string[] = [];
      for (const c of containersOf(spec)) {
        const v = sc(c).runAsNonRoot;
        if (v === false) explicit.push(c.name);
        else if (v !== true && podValue !== true) implicit.push(c.name);
      }
      if (explicit.length) setters.push(containerWord(explicit));
      if (setters.length)
        return {
          reason: 'runAsNonRoot != true',
          detail: `${setters.join(' and ')} must not set securityContext.runAsNonRoot=false`,
        };
      return implicit.length
        ? {
            reason: 'runAsNonRoot != true',
            detail: `pod or ${containerWord(implicit)} must set securityContext.runAsNonRoot=true`,
          }
        : undefined;
    },
  },
  {
    id: 'runAsUser',
    run(_pod, spec) {
      const setters = sc(spec).runAsUser === 0 ? ['pod'] : [];
      const names = containersOf(spec)
        .filter((c) => sc(c).runAsUser === 0)
        .map((c) => c.name);
      if (names.length) setters.push(containerWord(names));
      return setters.length
        ? { reason: 'runAsUser=0', detail: `${setters.join(' and ')} must not set runAsUser=0` }
        : undefined;
    },
  },
  {
    id: 'seccompProfile_restricted',
    overrides: 'seccompProfile_baseline',
    run(_pod, spec) {
      if (windows(spec)) return undefined;
      const ok = (t: unknown) => t === 'RuntimeDefault' || t === 'Localhost';
      const podType = sc(spec).seccompProfile?.type;
      const setters: string[] = [];
      const values = new Set<string>();
      if (podType !== undefined && !ok(podType)) {
        setters.push('pod');
        values.add(podType);
      }
      const explicit: string[] = [];
      const implicit: string[] = [];
      for (const c of containersOf(spec)) {
        const t = sc(c).seccompProfile?.type;
        if (t !== undefined && !ok(t)) {
          explicit.push(c.name);
          values.add(t);
        } else if (t === undefined && !ok(podType)) implicit.push(c.name);
      }
      if (explicit.length) setters.push(containerWord(explicit));
      if (setters.length)
        return {
          reason: 'seccompProfile',
          detail: `${setters.join(' and ')} must not set securityContext.seccompProfile.type to ${joinQuote([...values])}`,
        };
      return implicit.length
        ? {
            reason: 'seccompProfile',
            detail: `pod or ${containerWord(implicit)} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"`,
          }
        : undefined;
    },
  },
  {
    id: 'capabilities_restricted',
    since: 22,
    run(_pod, spec) {
      if (windows(spec)) return undefined;
      const noDrop: string[] = [];
      const added: string[] = [];
      const addedCaps = new Set<string>();
      for (const c of containersOf(spec)) {
        const caps = sc(c).capabilities ?? {};
        if (!(caps.drop ?? []).includes('ALL')) noDrop.push(c.name);
        const bad = (caps.add ?? []).filter((x: string) => x !== 'NET_BIND_SERVICE');
        if (bad.length) {
          added.push(c.name);
          for (const x of bad) addedCaps.add(x);
        }
      }
      const bad: string[] = [];
      if (noDrop.length)
        bad.push(`${containerWord(noDrop)} must set securityContext.capabilities.drop=["ALL"]`);
      if (added.length)
        bad.push(
          `${containerWord(added)} must not include ${joinQuote([...addedCaps])} in securityContext.capabilities.add`,
        );
      return bad.length ? { reason: 'unrestricted capabilities', detail: bad.join('; ') } : undefined;
    },
  },
];

/** What a pod breaks at a level and version, as upstream's message lists it ('' when nothing). */
export function evaluatePod(pod: KObject, p: LevelVersion): string {
  if (p.level === 'privileged') return '';
  const version = p.version === 'latest' ? SERVER_MINOR : p.version;
  const spec = pod.spec ?? {};
  let checks = BASELINE;
  if (p.level === 'restricted') {
    const overridden = new Set(RESTRICTED.map((c) => c.overrides).filter(Boolean));
    checks = [...BASELINE.filter((c) => !overridden.has(c.id)), ...RESTRICTED];
  }
  return checks
    .filter((c) => version >= (c.since ?? 0))
    .map((c) => c.run(pod, spec, version))
    .filter((v): v is Violation => v !== undefined)
    .map((v) => `${v.reason} (${v.detail})`)
    .join(', ');
}

const images = (spec: KObject | undefined) => containersOf(spec ?? {}).map((c) => `${c.name}=${c.image}`);

export interface PodSecurityOptions {
  config?: PodSecurityConfiguration;
  onAudit?: (r: PodSecurityAuditRecord) => void;
}

/** Checks a configuration as kube-apiserver does at start; throws naming what is wrong. */
export function resolveDefaults(config: PodSecurityConfiguration | undefined): Record<Mode, LevelVersion> {
  const out = {} as Record<Mode, LevelVersion>;
  for (const mode of MODES) {
    const rawLevel = config?.defaults?.[mode];
    const rawVersion = config?.defaults?.[`${mode}-version`];
    const level = rawLevel === undefined ? 'privileged' : parseLevel(rawLevel);
    const version = parseVersion(rawVersion);
    if (level === undefined)
      throw new Error(`PodSecurity defaults.${mode}: "${rawLevel}" is not one of ${LEVELS.join(', ')}`);
    if (version === undefined)
      throw new Error(`PodSecurity defaults.${mode}-version: "${rawVersion}" must be "latest" or "v1.x"`);
    out[mode] = { level, version };
  }
  return out;
}

export function podSecurity(store: Store, opts: PodSecurityOptions = {}): AdmissionPlugin {
  const defaults = resolveDefaults(opts.config);
  const ex = opts.config?.exemptions ?? {};
  const exemptUser = new Set(ex.usernames ?? []);
  const exemptClass = new Set(ex.runtimeClasses ?? []);
  const exemptNamespace = new Set(ex.namespaces ?? []);

  const admitNamespace = (a: AdmissionAttributes) => {
    if (a.operation === 'DELETE' || a.subresource !== '') return;
    const labels = a.object?.metadata?.labels;
    const { policy, errs } = namespacePolicy(labels, defaults);
    errs.throwIfAny('Namespace', a.name);
    if (a.operation !== 'UPDATE' || exemptNamespace.has(a.name)) return;
    const before = namespacePolicy(a.oldObject?.metadata?.labels, defaults).policy.enforce;
    if (policyName(before) === policyName(policy.enforce) || policy.enforce.level === 'privileged') return;
    // A stricter enforce level: which pods already there it would refuse (warnings only).
    const offenders = store
      .list('pods', a.name)
      .filter((p) => !exemptClass.has(p.spec?.runtimeClassName))
      .map((p) => [p.metadata.name, evaluatePod(p, policy.enforce)] as const)
      .filter(([, v]) => v !== '');
    if (offenders.length === 0) return;
    a.warnings?.push(
      `existing pods in namespace "${a.name}" violate the new PodSecurity enforce level "${policyName(policy.enforce)}"`,
    );
    for (const [name, v] of offenders) a.warnings?.push(`${name}: ${v}`);
  };

  const admitPod = (a: AdmissionAttributes) => {
    // Only the pod and its ephemeral containers carry a spec to judge; status, binding, eviction
    // and the rest do not.
    if (a.operation === 'DELETE' || (a.subresource !== '' && a.subresource !== 'ephemeralcontainers')) return;
    const pod = a.object ?? {};
    // An update judges only a changed workload (its images), as upstream's significant-update rule.
    if (a.operation === 'UPDATE' && images(pod.spec).join() === images(a.oldObject?.spec).join()) return;
    if (exemptUser.has(a.user.name) || exemptNamespace.has(a.namespace)) return;
    if (exemptClass.has(pod.spec?.runtimeClassName)) return;
    const ns = store.get('namespaces', '', a.namespace);
    const { policy } = namespacePolicy(ns?.metadata?.labels, defaults);
    const enforced = evaluatePod(pod, policy.enforce);
    if (enforced !== '')
      throw forbidden(
        { group: '', resource: 'pods' },
        a.name,
        `violates PodSecurity "${policyName(policy.enforce)}": ${enforced}`,
      );
    const warned = evaluatePod(pod, policy.warn);
    if (warned !== '') a.warnings?.push(`would violate PodSecurity "${policyName(policy.warn)}": ${warned}`);
    const audited = evaluatePod(pod, policy.audit);
    if (audited !== '')
      opts.onAudit?.({
        user: a.user.name,
        namespace: a.namespace,
        name: a.name,
        policy: policyName(policy.audit),
        violations: audited,
      });
  };

  return (a) => {
    if (a.group !== '') return;
    if (a.resource === 'namespaces') admitNamespace(a);
    else if (a.resource === 'pods') admitPod(a);
  };
}
