// The security context the kubelet sends with every sandbox and container (its kuberuntime
// security_context.go and helpers, and pkg/securitycontext): the effective container context
// (container fields over the pod's), seccomp with KubeletConfiguration seccompDefault, AppArmor
// from the field or the annotation it replaced, the default masked and read-only /proc paths,
// no_new_privs, and the runAsNonRoot check against the user the image would run as.
import {
  type LinuxContainerSecurityContext,
  type SELinuxOption,
  type SecurityProfile,
  SecurityProfile_ProfileType,
  SupplementalGroupsPolicy,
} from '@kh/cri-api';
import type { V1Container, V1Pod, V1SELinuxOptions, V1SecurityContext } from '@kubernetes/client-node';

/** What a node's configuration decides about security profiles. */
export interface SecurityOptions {
  /** KubeletConfiguration seccompDefault: RuntimeDefault for every container that names no profile. */
  seccompDefault: boolean;
  /** Where Localhost seccomp profiles live: `<root-dir>/seccomp` (/var/lib/kubelet/seccomp). */
  seccompProfileRoot: string;
}

export const DefaultSecurityOptions: SecurityOptions = {
  seccompDefault: false,
  seccompProfileRoot: '/var/lib/kubelet/seccomp',
};

/** /proc and /sys entries hidden from every container whose procMount is Default. */
export const DefaultMaskedPaths: readonly string[] = [
  '/proc/asound',
  '/proc/acpi',
  '/proc/kcore',
  '/proc/keys',
  '/proc/latency_stats',
  '/proc/timer_list',
  '/proc/timer_stats',
  '/proc/sched_debug',
  '/proc/scsi',
  '/sys/firmware',
  '/sys/devices/virtual/powercap',
];

/** /proc entries every container whose procMount is Default sees read-only. */
export const DefaultReadonlyPaths: readonly string[] = [
  '/proc/bus',
  '/proc/fs',
  '/proc/irq',
  '/proc/sys',
  '/proc/sysrq-trigger',
];

/** The AppArmor annotation the field replaced; the kubelet still honours it. */
export const AppArmorAnnotationPrefix = 'container.apparmor.security.beta.kubernetes.io/';

/**
 * The container's context with the pod's fields filled in where the container leaves them unset
 * (securitycontext.DetermineEffectiveSecurityContext).
 */
export function effectiveSecurityContext(pod: V1Pod, container: V1Container): V1SecurityContext {
  const psc = pod.spec?.securityContext;
  const sc = container.securityContext ?? {};
  return {
    ...sc,
    runAsUser: sc.runAsUser ?? psc?.runAsUser,
    runAsGroup: sc.runAsGroup ?? psc?.runAsGroup,
    runAsNonRoot: sc.runAsNonRoot ?? psc?.runAsNonRoot,
    seLinuxOptions: sc.seLinuxOptions ?? psc?.seLinuxOptions,
    seccompProfile: sc.seccompProfile ?? psc?.seccompProfile,
    appArmorProfile: sc.appArmorProfile ?? psc?.appArmorProfile,
  };
}

const profile = (profileType: SecurityProfile_ProfileType, localhostRef = ''): SecurityProfile => ({
  profileType,
  localhostRef,
});

/**
 * The seccomp profile of a container: its own field, else the pod's,
 * else RuntimeDefault under seccompDefault and Unconfined without. Localhost profiles are files
 * under the seccomp root.
 */
export function seccompProfile(opts: SecurityOptions, pod: V1Pod, container: V1Container): SecurityProfile {
  const field = container.securityContext?.seccompProfile ?? pod.spec?.securityContext?.seccompProfile;
  if (!field) {
    return profile(
      opts.seccompDefault
        ? SecurityProfile_ProfileType.RuntimeDefault
        : SecurityProfile_ProfileType.Unconfined,
    );
  }
  switch (field.type) {
    case 'RuntimeDefault':
      return profile(SecurityProfile_ProfileType.RuntimeDefault);
    case 'Localhost': {
      if (!field.localhostProfile) {
        throw new Error('localhostProfile must be set if seccompProfile type is Localhost.');
      }
      const root = opts.seccompProfileRoot.replace(/\/+$/, '');
      return profile(SecurityProfile_ProfileType.Localhost, `${root}/${field.localhostProfile}`);
    }
    default:
      return profile(SecurityProfile_ProfileType.Unconfined);
  }
}

/** An AppArmor profile as the API names it: the field's type and name, or the annotation's value. */
interface AppArmorRequest {
  type: string;
  localhostProfile?: string;
}

function fromAnnotation(value: string): AppArmorRequest {
  if (value === 'runtime/default') return { type: 'RuntimeDefault' };
  if (value === 'unconfined') return { type: 'Unconfined' };
  if (value.startsWith('localhost/')) {
    return { type: 'Localhost', localhostProfile: value.slice('localhost/'.length) };
  }
  return { type: value };
}

/** The container's AppArmor request: its field, then its annotation, then the pod's field. */
export function appArmorRequest(pod: V1Pod, container: V1Container): AppArmorRequest | undefined {
  const own = container.securityContext?.appArmorProfile;
  if (own) return { type: own.type, localhostProfile: own.localhostProfile };
  const annotation = pod.metadata?.annotations?.[`${AppArmorAnnotationPrefix}${container.name}`];
  if (annotation !== undefined) return fromAnnotation(annotation);
  const podLevel = pod.spec?.securityContext?.appArmorProfile;
  return podLevel ? { type: podLevel.type, localhostProfile: podLevel.localhostProfile } : undefined;
}

/**
 * The CRI AppArmor profile and its deprecated string form; undefined when nothing is asked (the
 * runtime's default applies).
 */
export function appArmorProfile(
  pod: V1Pod,
  container: V1Container,
): { apparmor: SecurityProfile; apparmorProfile: string } | undefined {
  const req = appArmorRequest(pod, container);
  if (!req) return undefined;
  switch (req.type) {
    case 'RuntimeDefault':
      return {
        apparmor: profile(SecurityProfile_ProfileType.RuntimeDefault),
        apparmorProfile: 'runtime/default',
      };
    case 'Unconfined':
      return { apparmor: profile(SecurityProfile_ProfileType.Unconfined), apparmorProfile: 'unconfined' };
    case 'Localhost':
      if (!req.localhostProfile) throw new Error('missing localhost apparmor profile name');
      return {
        apparmor: profile(SecurityProfile_ProfileType.Localhost, req.localhostProfile),
        apparmorProfile: `localhost/${req.localhostProfile}`,
      };
    default:
      throw new Error(`unknown apparmor profile type: ${JSON.stringify(req.type)}`);
  }
}

/** True when some container of the pod asks for an AppArmor profile other than Unconfined. */
export function podRequiresAppArmor(pod: V1Pod): boolean {
  const containers = [
    ...(pod.spec?.initContainers ?? []),
    ...(pod.spec?.containers ?? []),
    ...(pod.spec?.ephemeralContainers ?? []),
  ] as V1Container[];
  return containers.some((c) => {
    const req = appArmorRequest(pod, c);
    return req !== undefined && req.type !== 'Unconfined';
  });
}

/**
 * A sysctl name with dots as separators: `kernel/shm_rmid_forced` is `kernel.shm_rmid_forced`.
 * When the first separator is a slash, slashes and dots swap (a dot then belongs to a name part,
 * as in `net/ipv4/conf/eno2.100/rp_filter`).
 */
export function normalizeSysctlName(name: string): string {
  const firstSep = name.search(/[./]/);
  if (firstSep < 0 || name[firstSep] === '.') return name;
  return name.replace(/[./]/g, (c) => (c === '/' ? '.' : '/'));
}

/** procMount Unmasked turns the default masks off; anything else keeps them. */
export function maskedPaths(sc: V1SecurityContext): string[] {
  return sc.procMount === 'Unmasked' ? [] : [...DefaultMaskedPaths];
}

export function readonlyPaths(sc: V1SecurityContext): string[] {
  return sc.procMount === 'Unmasked' ? [] : [...DefaultReadonlyPaths];
}

/** The user an image runs as, from CRI ImageStatus: a numeric uid, or a name the runtime resolves. */
export interface ImageUser {
  uid: bigint | undefined;
  username: string;
}

/** ImageStatus's uid, else its username; an image that names neither runs as root. */
export function imageUserOf(
  image: { uid?: { value: bigint } | undefined; username: string } | undefined,
): ImageUser {
  if (image?.uid) return { uid: image.uid.value, username: '' };
  if (image?.username) return { uid: undefined, username: image.username };
  return { uid: 0n, username: '' };
}

/** The largest user id the API accepts (apimachinery IsValidUserID: 0 to MaxInt32). */
const MAX_USER_ID = 2147483647n;

/**
 * The kubelet's runAsNonRoot check: an explicit runAsUser 0 breaks it; without runAsUser the
 * image's user must be numeric, not 0 and a valid user id. The message becomes
 * CreateContainerConfigError's.
 */
export function verifyRunAsNonRoot(
  pod: V1Pod,
  container: V1Container,
  imageUser: ImageUser | undefined,
): void {
  const sc = effectiveSecurityContext(pod, container);
  if (!sc.runAsNonRoot) return;
  const where = `(pod: "${pod.metadata?.name ?? ''}_${pod.metadata?.namespace ?? ''}(${pod.metadata?.uid ?? ''})", container: ${container.name})`;
  if (sc.runAsUser != null) {
    if (sc.runAsUser === 0) throw new Error(`container's runAsUser breaks non-root policy ${where}`);
    return;
  }
  const uid = imageUser?.uid;
  if (uid === 0n) throw new Error(`container has runAsNonRoot and image will run as root ${where}`);
  if (uid !== undefined && (uid < 0n || uid > MAX_USER_ID)) {
    throw new Error(
      `container has runAsNonRoot and image has an invalid user id (${uid}). (Must be 1-(${MAX_USER_ID})): must be between 0 and ${MAX_USER_ID}, inclusive ${where}`,
    );
  }
  if (imageUser?.username) {
    throw new Error(
      `container has runAsNonRoot and image has non-numeric user (${imageUser.username}), cannot verify user is non-root ${where}`,
    );
  }
}

/** The pod's supplementalGroupsPolicy for CRI: Strict, or Merge (the default, and anything else). */
export function supplementalGroupsPolicy(pod: V1Pod): SupplementalGroupsPolicy {
  return pod.spec?.securityContext?.supplementalGroupsPolicy === 'Strict'
    ? SupplementalGroupsPolicy.Strict
    : SupplementalGroupsPolicy.Merge;
}

export function toSELinuxOption(o: V1SELinuxOptions | undefined): SELinuxOption | undefined {
  return o ? { user: o.user ?? '', role: o.role ?? '', type: o.type ?? '', level: o.level ?? '' } : undefined;
}

/** Whether the check needs the image's user: runAsNonRoot without an explicit runAsUser. */
export function needsImageUser(pod: V1Pod, container: V1Container): boolean {
  const sc = effectiveSecurityContext(pod, container);
  return sc.runAsNonRoot === true && sc.runAsUser == null;
}

/**
 * The container's CRI security context except namespaces (the caller owns them): the effective
 * context converted field by field, profiles, masks, and supplemental groups (fsGroup first).
 */
export function linuxContainerSecurityContext(
  opts: SecurityOptions,
  pod: V1Pod,
  container: V1Container,
  imageUser: ImageUser | undefined,
): Omit<LinuxContainerSecurityContext, 'namespaceOptions'> {
  const sc = effectiveSecurityContext(pod, container);
  const psc = pod.spec?.securityContext;
  const apparmor = appArmorProfile(pod, container);
  // Without runAsUser, the image's own user (what the runtime would pick anyway).
  const runAsUser =
    sc.runAsUser != null
      ? { value: BigInt(sc.runAsUser) }
      : imageUser?.uid !== undefined
        ? { value: imageUser.uid }
        : undefined;
  return {
    capabilities: sc.capabilities
      ? {
          addCapabilities: sc.capabilities.add ?? [],
          dropCapabilities: sc.capabilities.drop ?? [],
          addAmbientCapabilities: [],
        }
      : undefined,
    privileged: sc.privileged === true,
    selinuxOptions: toSELinuxOption(sc.seLinuxOptions),
    runAsUser,
    runAsGroup: sc.runAsGroup != null ? { value: BigInt(sc.runAsGroup) } : undefined,
    runAsUsername: sc.runAsUser == null ? (imageUser?.username ?? '') : '',
    readonlyRootfs: sc.readOnlyRootFilesystem === true,
    supplementalGroups: [
      ...(psc?.fsGroup != null ? [psc.fsGroup] : []),
      ...(psc?.supplementalGroups ?? []),
    ].map((g) => BigInt(g)),
    supplementalGroupsPolicy: supplementalGroupsPolicy(pod),
    // Only an explicit allowPrivilegeEscalation: false sets no_new_privs.
    noNewPrivs: sc.allowPrivilegeEscalation === false,
    maskedPaths: maskedPaths(sc),
    readonlyPaths: readonlyPaths(sc),
    seccomp: seccompProfile(opts, pod, container),
    apparmor: apparmor?.apparmor,
    apparmorProfile: apparmor?.apparmorProfile ?? '',
    seccompProfilePath: '',
  };
}
