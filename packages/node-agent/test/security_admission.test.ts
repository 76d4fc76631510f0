// The kubelet's sysctl and AppArmor admission, and the KubeletConfiguration fields behind them.
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { AppArmorAdmitHandler } from '../src/admission/apparmor.js';
import { SysctlAllowlist, safeSysctls } from '../src/sysctl/allowlist.js';

const pod = (
  sysctls: string[],
  spec: Partial<NonNullable<V1Pod['spec']>> = {},
  annotations?: Record<string, string>,
): V1Pod => ({
  metadata: { name: 'p', namespace: 'default', uid: 'p', annotations },
  spec: {
    containers: [{ name: 'c', image: 'busybox' }],
    securityContext: { sysctls: sysctls.map((name) => ({ name, value: '1' })) },
    ...spec,
  },
});
const admit = (list: SysctlAllowlist, p: V1Pod) => list.admit({ pod: p, otherPods: [] });

describe('sysctl admission', () => {
  const safeOnly = new SysctlAllowlist(safeSysctls('6.1.0-13-amd64'));

  it('admits the safe sysctls, in either separator form', () => {
    expect(admit(safeOnly, pod(['kernel.shm_rmid_forced', 'net/ipv4/ip_local_port_range']))).toEqual({
      admit: true,
    });
    expect(admit(safeOnly, pod([]))).toEqual({ admit: true });
  });

  it('rejects an unsafe sysctl the node does not allow with SysctlForbidden', () => {
    expect(admit(safeOnly, pod(['kernel.msgmax']))).toEqual({
      admit: false,
      reason: 'SysctlForbidden',
      message: 'forbidden sysctl: "kernel.msgmax" not allowlisted',
    });
  });

  it('admits the unsafe sysctls allowedUnsafeSysctls names, by name or prefix', () => {
    const list = new SysctlAllowlist([...safeSysctls('6.1.0'), 'kernel.msg*', 'net.core.somaxconn']);
    expect(admit(list, pod(['kernel.msgmax', 'kernel.msgmnb', 'net.core.somaxconn']))).toEqual({
      admit: true,
    });
    expect(admit(list, pod(['net.core.rmem_max'])).admit).toBe(false);
  });

  it('refuses a namespaced sysctl when the pod shares that namespace with the host', () => {
    expect(admit(safeOnly, pod(['net.ipv4.tcp_syncookies'], { hostNetwork: true }))).toEqual({
      admit: false,
      reason: 'SysctlForbidden',
      message: 'forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host net enabled',
    });
    expect(admit(safeOnly, pod(['kernel.shm_rmid_forced'], { hostIPC: true })).admit).toBe(false);
    expect(admit(safeOnly, pod(['kernel.shm_rmid_forced'], { hostNetwork: true })).admit).toBe(true);
  });

  it('leaves out the safe sysctls an older kernel does not namespace', () => {
    expect(safeSysctls('4.4.0')).not.toContain('net.ipv4.tcp_keepalive_time');
    expect(safeSysctls('4.4.0')).toContain('net.ipv4.ip_local_reserved_ports');
    expect(safeSysctls('4.15.0')).toContain('net.ipv4.tcp_rmem');
  });

  it('refuses to allow a sysctl no namespace isolates', () => {
    expect(() => new SysctlAllowlist(['vm.swappiness'])).toThrow(
      'the sysctls "vm.swappiness" are not known to be namespaced',
    );
  });
});

describe('AppArmor admission', () => {
  const annotated = (value: string) =>
    pod([], {}, { 'container.apparmor.security.beta.kubernetes.io/c': value });

  it('fails a pod that needs AppArmor where it is off, with the kubelet reason', () => {
    const off = new AppArmorAdmitHandler(false);
    expect(off.admit({ pod: annotated('runtime/default'), otherPods: [] })).toEqual({
      admit: false,
      reason: 'AppArmor',
      message: 'Cannot enforce AppArmor: AppArmor is not enabled on the host',
    });
    const field = pod([], { securityContext: { appArmorProfile: { type: 'RuntimeDefault' } } });
    expect(off.admit({ pod: field, otherPods: [] }).admit).toBe(false);
  });

  it('admits Unconfined, no profile at all, and anything where AppArmor is on', () => {
    const off = new AppArmorAdmitHandler(false);
    expect(off.admit({ pod: annotated('unconfined'), otherPods: [] })).toEqual({ admit: true });
    expect(off.admit({ pod: pod([]), otherPods: [] })).toEqual({ admit: true });
    expect(
      new AppArmorAdmitHandler(true).admit({ pod: annotated('runtime/default'), otherPods: [] }),
    ).toEqual({
      admit: true,
    });
  });
});
