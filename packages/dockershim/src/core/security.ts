import { readFile } from 'node:fs/promises';
import { isAbsolute } from 'node:path';
import {
  type Capability,
  InvalidArgumentError,
  type SecurityProfile,
  SecurityProfile_ProfileType,
} from '@kh/cri-api';
import type { HostConfig } from '../docker/client.js';

// Security profiles, capabilities and privilege of sandboxes and containers, as Docker HostConfig
// fields. The choices follow containerd 1.6's CRI plugin, so a pod behaves the same on both:
// - seccomp: the `seccomp` SecurityProfile wins over the deprecated `seccomp_profile_path` string;
//   nothing set means unconfined (the kubelet's and containerd's default, not Docker's);
//   RuntimeDefault is Docker's default profile; Localhost reads a JSON profile from an absolute path.
// - privileged ignores every profile and capability request.

const LOCALHOST_PREFIX = 'localhost/';
// Sandbox and container configs both carry their security context here; errors name its fields.
const SECURITY_CONTEXT = 'config.linux.security_context';

type ProfileKind = 'seccomp' | 'apparmor';
const DEPRECATED_FIELD: Record<ProfileKind, string> = {
  seccomp: 'seccomp_profile_path',
  apparmor: 'apparmor_profile',
};

/** The reference of a Localhost profile (the `localhost/` prefix of the deprecated form removed). */
function localhostRef(profile: SecurityProfile): string {
  return profile.localhostRef.startsWith(LOCALHOST_PREFIX)
    ? profile.localhostRef.slice(LOCALHOST_PREFIX.length)
    : profile.localhostRef;
}

/**
 * The profile a security context asks for: its SecurityProfile field, else the deprecated string
 * (`runtime/default`, `docker/default`, `unconfined`, `localhost/<ref>`), else undefined (not set).
 */
export function requestedProfile(
  kind: ProfileKind,
  profile: SecurityProfile | undefined,
  deprecated: string,
): SecurityProfile | undefined {
  if (profile) {
    const field = `${SECURITY_CONTEXT}.${kind}`;
    switch (profile.profileType) {
      case SecurityProfile_ProfileType.RuntimeDefault:
      case SecurityProfile_ProfileType.Unconfined:
        if (profile.localhostRef) {
          throw new InvalidArgumentError(
            `${field}.localhost_ref may only be set with profile_type Localhost`,
          );
        }
        return profile;
      case SecurityProfile_ProfileType.Localhost:
        if (!localhostRef(profile)) {
          throw new InvalidArgumentError(`${field}.localhost_ref is required with profile_type Localhost`);
        }
        return profile;
      default:
        throw new InvalidArgumentError(
          `${field}.profile_type ${profile.profileType} is not a known profile type`,
        );
    }
  }
  switch (deprecated) {
    case '':
      return undefined;
    case 'runtime/default':
    case 'docker/default':
      return { profileType: SecurityProfile_ProfileType.RuntimeDefault, localhostRef: '' };
    case 'unconfined':
      return { profileType: SecurityProfile_ProfileType.Unconfined, localhostRef: '' };
  }
  if (deprecated.startsWith(LOCALHOST_PREFIX) && deprecated.length > LOCALHOST_PREFIX.length) {
    return { profileType: SecurityProfile_ProfileType.Localhost, localhostRef: deprecated };
  }
  throw new InvalidArgumentError(
    `${SECURITY_CONTEXT}.${DEPRECATED_FIELD[kind]} ${JSON.stringify(deprecated)} is not one of runtime/default, docker/default, unconfined, localhost/<profile>`,
  );
}

/** The seccomp profile of a sandbox's or a container's security context, validated. */
export function requestedSeccomp(
  sc: { seccomp: SecurityProfile | undefined; seccompProfilePath: string } | undefined,
): SecurityProfile | undefined {
  return requestedProfile('seccomp', sc?.seccomp, sc?.seccompProfilePath ?? '');
}

/**
 * Reads a Localhost seccomp profile, which Docker takes inline; undefined for any other profile, and
 * for a privileged container, which runs unconfined whatever it asked for.
 */
export async function loadSeccompProfile(
  profile: SecurityProfile | undefined,
  privileged: boolean,
): Promise<string | undefined> {
  if (privileged || profile?.profileType !== SecurityProfile_ProfileType.Localhost) return undefined;
  const path = localhostRef(profile);
  if (!isAbsolute(path)) {
    throw new InvalidArgumentError(
      `${SECURITY_CONTEXT}.seccomp: localhost profile ${JSON.stringify(path)} is not an absolute path`,
    );
  }
  const text = await readFile(path, 'utf8').catch((err: NodeJS.ErrnoException) => {
    throw new InvalidArgumentError(
      `seccomp profile ${JSON.stringify(path)} cannot be read: ${err.code ?? err.message}`,
    );
  });
  try {
    JSON.parse(text);
  } catch (err) {
    throw new InvalidArgumentError(
      `seccomp profile ${JSON.stringify(path)} is not JSON: ${(err as Error).message}`,
    );
  }
  return text;
}

/** What a sandbox or container asks for, security-wise, with profiles already resolved. */
export interface SecurityRequest {
  privileged: boolean;
  seccomp: SecurityProfile | undefined;
  /** Content of a Localhost seccomp profile (loadSeccompProfile). */
  seccompJson: string | undefined;
  apparmor: SecurityProfile | undefined;
  noNewPrivs: boolean;
  capabilities: Capability | undefined;
  maskedPaths: string[];
  readonlyPaths: string[];
  /** Capabilities the host cannot grant that Docker can name (withCapabilitiesToDrop). */
  missingCapabilities: string[];
}

type SecurityFields = Pick<
  HostConfig,
  'Privileged' | 'CapAdd' | 'CapDrop' | 'SecurityOpt' | 'MaskedPaths' | 'ReadonlyPaths' | 'DeviceCgroupRules'
>;

/**
 * True when a privileged request must be emulated: Docker's Privileged flag would ask for
 * capabilities outside the host's bounding set, and runc would refuse to start the container.
 */
export function emulatesPrivileged(
  req: Pick<SecurityRequest, 'privileged' | 'missingCapabilities'>,
): boolean {
  return req.privileged && req.missingCapabilities.length > 0;
}

function seccompOpt(req: SecurityRequest): string | undefined {
  if (req.privileged) return 'seccomp=unconfined';
  switch (req.seccomp?.profileType) {
    case SecurityProfile_ProfileType.RuntimeDefault:
      return undefined;
    case SecurityProfile_ProfileType.Localhost:
      if (req.seccompJson === undefined) throw new Error('localhost seccomp profile was not loaded');
      return `seccomp=${req.seccompJson}`;
    default:
      return 'seccomp=unconfined';
  }
}

function apparmorOpt(req: SecurityRequest): string | undefined {
  if (req.privileged) return 'apparmor=unconfined';
  // Not set or RuntimeDefault: Docker's default profile where AppArmor is enabled.
  if (req.apparmor?.profileType === SecurityProfile_ProfileType.Unconfined) return 'apparmor=unconfined';
  if (req.apparmor?.profileType === SecurityProfile_ProfileType.Localhost) {
    return `apparmor=${localhostRef(req.apparmor)}`;
  }
  return undefined;
}

/** Docker HostConfig security fields of one sandbox or container. Pure: unit-tested without a daemon. */
export function securityHostConfig(req: SecurityRequest): SecurityFields {
  const SecurityOpt = [seccompOpt(req), apparmorOpt(req)].filter((o): o is string => o !== undefined);
  if (req.noNewPrivs) SecurityOpt.push('no-new-privileges');
  if (req.privileged && !emulatesPrivileged(req)) return { Privileged: true, SecurityOpt };
  if (req.privileged) {
    // containerd's privileged, within the bounding set: every capability the host has, no masked or
    // read-only paths, every device (the caller lists them). /sys and /sys/fs/cgroup stay read-only:
    // Docker makes them writable only with its Privileged flag.
    return {
      Privileged: false,
      CapAdd: ['ALL'],
      CapDrop: req.missingCapabilities,
      SecurityOpt,
      MaskedPaths: [],
      ReadonlyPaths: [],
      DeviceCgroupRules: ['a *:* rwm'],
    };
  }
  const add = req.capabilities?.addCapabilities ?? [];
  let drop = req.capabilities?.dropCapabilities ?? [];
  // Docker's ALL is every capability it knows; the host may lack some of them.
  if (add.some((c) => c.toUpperCase() === 'ALL')) drop = [...drop, ...req.missingCapabilities];
  return {
    Privileged: false,
    CapAdd: add.length > 0 ? add : undefined,
    CapDrop: drop.length > 0 ? drop : undefined,
    SecurityOpt,
    MaskedPaths: req.maskedPaths.length > 0 ? req.maskedPaths : undefined,
    ReadonlyPaths: req.readonlyPaths.length > 0 ? req.readonlyPaths : undefined,
  };
}
