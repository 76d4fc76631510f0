// The kubelet's conversion of a pod's and a container's security context into the CRI's.
import { SecurityProfile_ProfileType } from '@kh/cri-api';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  appArmorProfile,
  DefaultMaskedPaths,
  DefaultReadonlyPaths,
  DefaultSecurityOptions,
  imageUserOf,
  linuxContainerSecurityContext,
  normalizeSysctlName,
  podRequiresAppArmor,
  seccompProfile,
  verifyRunAsNonRoot,
} from '../../src/kuberuntime/security_context.js';

const pod = (
  spec: Partial<NonNullable<V1Pod['spec']>> = {},
  annotations?: Record<string, string>,
): V1Pod => ({
  metadata: { name: 'p', namespace: 'ns', uid: 'u1', annotations },
  spec: { containers: [{ name: 'c' }], ...spec },
});
const c = (securityContext: V1Container['securityContext'] = undefined): V1Container => ({
  name: 'c',
  securityContext,
});
const { RuntimeDefault, Unconfined, Localhost } = SecurityProfile_ProfileType;
const opts = DefaultSecurityOptions;

describe('seccomp', () => {
  it('is Unconfined when nothing asks, RuntimeDefault under seccompDefault', () => {
    expect(seccompProfile(opts, pod(), c()).profileType).toBe(Unconfined);
    expect(seccompProfile({ ...opts, seccompDefault: true }, pod(), c()).profileType).toBe(RuntimeDefault);
  });

  it('takes the container field over the pod field', () => {
    const p = pod({ securityContext: { seccompProfile: { type: 'RuntimeDefault' } } });
    expect(seccompProfile(opts, p, c()).profileType).toBe(RuntimeDefault);
    expect(seccompProfile(opts, p, c({ seccompProfile: { type: 'Unconfined' } })).profileType).toBe(
      Unconfined,
    );
    // An explicit Unconfined wins over seccompDefault.
    expect(
      seccompProfile({ ...opts, seccompDefault: true }, pod(), c({ seccompProfile: { type: 'Unconfined' } }))
        .profileType,
    ).toBe(Unconfined);
  });

  it('finds Localhost profiles under the seccomp root, and needs a name', () => {
    const got = seccompProfile(
      { ...opts, seccompProfileRoot: '/var/lib/kubelet/seccomp/' },
      pod(),
      c({ seccompProfile: { type: 'Localhost', localhostProfile: 'profiles/audit.json' } }),
    );
    expect(got).toEqual({
      profileType: Localhost,
      localhostRef: '/var/lib/kubelet/seccomp/profiles/audit.json',
    });
    expect(() => seccompProfile(opts, pod(), c({ seccompProfile: { type: 'Localhost' } }))).toThrow(
      'localhostProfile must be set if seccompProfile type is Localhost.',
    );
  });
});

describe('AppArmor', () => {
  it('reads the container field, then the annotation, then the pod field', () => {
    const annotated = pod(
      { securityContext: { appArmorProfile: { type: 'Unconfined' } } },
      { 'container.apparmor.security.beta.kubernetes.io/c': 'localhost/k8s-deny-write' },
    );
    expect(appArmorProfile(annotated, c())).toEqual({
      apparmor: { profileType: Localhost, localhostRef: 'k8s-deny-write' },
      apparmorProfile: 'localhost/k8s-deny-write',
    });
    expect(
      appArmorProfile(annotated, c({ appArmorProfile: { type: 'RuntimeDefault' } }))?.apparmorProfile,
    ).toBe('runtime/default');
    expect(
      appArmorProfile(pod({ securityContext: { appArmorProfile: { type: 'Unconfined' } } }), c()),
    ).toEqual({
      apparmor: { profileType: Unconfined, localhostRef: '' },
      apparmorProfile: 'unconfined',
    });
    expect(appArmorProfile(pod(), c())).toBeUndefined();
  });

  it('is required by any profile but Unconfined', () => {
    expect(podRequiresAppArmor(pod())).toBe(false);
    expect(podRequiresAppArmor(pod({ securityContext: { appArmorProfile: { type: 'Unconfined' } } }))).toBe(
      false,
    );
    expect(
      podRequiresAppArmor(pod({ securityContext: { appArmorProfile: { type: 'RuntimeDefault' } } })),
    ).toBe(true);
    expect(
      podRequiresAppArmor(pod({}, { 'container.apparmor.security.beta.kubernetes.io/c': 'runtime/default' })),
    ).toBe(true);
  });
});

describe('the container security context', () => {
  it('masks and makes read-only the default paths unless procMount is Unmasked', () => {
    const sc = linuxContainerSecurityContext(opts, pod(), c(), undefined);
    expect(sc.maskedPaths).toEqual([...DefaultMaskedPaths]);
    expect(sc.maskedPaths).toContain('/proc/kcore');
    expect(sc.readonlyPaths).toEqual([...DefaultReadonlyPaths]);
    expect(sc.readonlyPaths).toContain('/proc/sys');
    const unmasked = linuxContainerSecurityContext(opts, pod(), c({ procMount: 'Unmasked' }), undefined);
    expect(unmasked.maskedPaths).toEqual([]);
    expect(unmasked.readonlyPaths).toEqual([]);
  });

  it('sets no_new_privs only for an explicit allowPrivilegeEscalation: false', () => {
    expect(linuxContainerSecurityContext(opts, pod(), c(), undefined).noNewPrivs).toBe(false);
    expect(
      linuxContainerSecurityContext(opts, pod(), c({ allowPrivilegeEscalation: true }), undefined).noNewPrivs,
    ).toBe(false);
    expect(
      linuxContainerSecurityContext(opts, pod(), c({ allowPrivilegeEscalation: false }), undefined)
        .noNewPrivs,
    ).toBe(true);
  });

  it('converts capabilities, users, groups, read-only root and profiles, container over pod', () => {
    const p = pod({
      securityContext: {
        runAsUser: 1000,
        runAsGroup: 2000,
        fsGroup: 3000,
        supplementalGroups: [4000],
        seccompProfile: { type: 'RuntimeDefault' },
      },
    });
    const sc = linuxContainerSecurityContext(
      opts,
      p,
      c({
        runAsUser: 65534,
        readOnlyRootFilesystem: true,
        capabilities: { add: ['NET_ADMIN'], drop: ['ALL'] },
      }),
      undefined,
    );
    expect(sc.runAsUser).toEqual({ value: 65534n });
    expect(sc.runAsGroup).toEqual({ value: 2000n });
    expect(sc.supplementalGroups).toEqual([3000n, 4000n]);
    expect(sc.readonlyRootfs).toBe(true);
    expect(sc.capabilities).toEqual({
      addCapabilities: ['NET_ADMIN'],
      dropCapabilities: ['ALL'],
      addAmbientCapabilities: [],
    });
    expect(sc.seccomp?.profileType).toBe(RuntimeDefault);
  });

  it("runs as the image's user when runAsUser is not set", () => {
    expect(linuxContainerSecurityContext(opts, pod(), c(), { uid: 1234n, username: '' }).runAsUser).toEqual({
      value: 1234n,
    });
    const named = linuxContainerSecurityContext(opts, pod(), c(), { uid: undefined, username: 'nobody' });
    expect(named.runAsUser).toBeUndefined();
    expect(named.runAsUsername).toBe('nobody');
  });
});

describe('runAsNonRoot', () => {
  const nonRoot = (runAsUser?: number) => c({ runAsNonRoot: true, runAsUser });

  it('rejects an explicit runAsUser 0 and accepts any other', () => {
    expect(() => verifyRunAsNonRoot(pod(), nonRoot(0), undefined)).toThrow(
      `container's runAsUser breaks non-root policy (pod: "p_ns(u1)", container: c)`,
    );
    expect(() => verifyRunAsNonRoot(pod(), nonRoot(1000), undefined)).not.toThrow();
  });

  it("judges the image's user without runAsUser: root and names are refused", () => {
    expect(() => verifyRunAsNonRoot(pod(), nonRoot(), imageUserOf(undefined))).toThrow(
      'container has runAsNonRoot and image will run as root',
    );
    expect(() =>
      verifyRunAsNonRoot(pod(), nonRoot(), imageUserOf({ uid: undefined, username: 'nobody' })),
    ).toThrow(
      'container has runAsNonRoot and image has non-numeric user (nobody), cannot verify user is non-root',
    );
    expect(() =>
      verifyRunAsNonRoot(pod(), nonRoot(), imageUserOf({ uid: { value: 1234n }, username: '' })),
    ).not.toThrow();
  });

  it("refuses an image uid outside 0..MaxInt32, as the API's IsValidUserID would", () => {
    const image = (value: bigint) => imageUserOf({ uid: { value }, username: '' });
    expect(() => verifyRunAsNonRoot(pod(), nonRoot(), image(2147483647n))).not.toThrow();
    for (const value of [2147483648n, 4294967294n, -5n]) {
      expect(() => verifyRunAsNonRoot(pod(), nonRoot(), image(value))).toThrow(
        `container has runAsNonRoot and image has an invalid user id (${value}). (Must be 1-(2147483647)): must be between 0 and 2147483647, inclusive (pod: "p_ns(u1)", container: c)`,
      );
    }
  });

  it('takes runAsNonRoot from the pod when the container leaves it unset', () => {
    const p = pod({ securityContext: { runAsNonRoot: true } });
    expect(() => verifyRunAsNonRoot(p, c(), imageUserOf({ uid: { value: 0n }, username: '' }))).toThrow(
      'image will run as root',
    );
    expect(() => verifyRunAsNonRoot(pod(), c(), imageUserOf(undefined))).not.toThrow();
  });
});

describe('sysctl names', () => {
  it('turns slash separators into dots, keeping dots that belong to a name part', () => {
    expect(normalizeSysctlName('kernel/shm_rmid_forced')).toBe('kernel.shm_rmid_forced');
    expect(normalizeSysctlName('kernel.shm_rmid_forced')).toBe('kernel.shm_rmid_forced');
    expect(normalizeSysctlName('net/ipv4/conf/eno2.100/rp_filter')).toBe('net.ipv4.conf.eno2/100.rp_filter');
  });
});
