// The kubelet's sysctl admission (pkg/kubelet/sysctl): a pod may set the safe sysctls, and the
// unsafe ones the node allows with KubeletConfiguration allowedUnsafeSysctls; any other sysctl
// fails the pod with reason SysctlForbidden. Only sysctls of the pod's own network or IPC
// namespace can be allowed at all, and none of those when the pod shares that namespace with
// the host.
import { release } from 'node:os';
import { normalizeSysctlName } from '@kh/runtime-manager';
import type { AdmitHandler, AdmitResult, PodAdmitAttributes } from '../admission/handler.js';

export const SysctlForbiddenReason = 'SysctlForbidden';

type Namespace = 'ipc' | 'net';

/** Which namespace isolates a sysctl; undefined for the node-wide ones. */
export function sysctlNamespace(name: string): Namespace | undefined {
  if (name === 'kernel.sem') return 'ipc';
  if (['kernel.shm', 'kernel.msg', 'fs.mqueue.'].some((p) => name.startsWith(p))) return 'ipc';
  if (name.startsWith('net.')) return 'net';
  return undefined;
}

/** The safe sysctls, each with the kernel that first namespaced it. */
const SAFE_SYSCTLS: { name: string; kernel?: [number, number] }[] = [
  { name: 'kernel.shm_rmid_forced' },
  { name: 'net.ipv4.ip_local_port_range' },
  { name: 'net.ipv4.tcp_syncookies' },
  { name: 'net.ipv4.ping_group_range' },
  { name: 'net.ipv4.ip_unprivileged_port_start' },
  { name: 'net.ipv4.ip_local_reserved_ports', kernel: [3, 16] },
  { name: 'net.ipv4.tcp_keepalive_time', kernel: [4, 5] },
  { name: 'net.ipv4.tcp_fin_timeout', kernel: [4, 6] },
  { name: 'net.ipv4.tcp_keepalive_intvl', kernel: [4, 5] },
  { name: 'net.ipv4.tcp_keepalive_probes', kernel: [4, 5] },
  { name: 'net.ipv4.tcp_rmem', kernel: [4, 15] },
  { name: 'net.ipv4.tcp_wmem', kernel: [4, 15] },
];

/** The safe sysctls this kernel namespaces; an unreadable version leaves the gated ones out. */
export function safeSysctls(kernelRelease = release()): string[] {
  const m = /^(\d+)\.(\d+)/.exec(kernelRelease);
  const [major, minor] = m ? [Number(m[1]), Number(m[2])] : [0, 0];
  return SAFE_SYSCTLS.filter(
    (s) => !s.kernel || major > s.kernel[0] || (major === s.kernel[0] && minor >= s.kernel[1]),
  ).map((s) => s.name);
}

// A sysctl name, or a prefix of one ending in `*` (`kernel.msg*`, `net.*`).
const SYSCTL_PATTERN = /^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[./])*([a-z0-9]([-_a-z0-9]*[a-z0-9])?\*?|\*)$/;

/** The problem with one allowedUnsafeSysctls entry, or undefined. */
export function invalidSysctlPattern(pattern: string): string | undefined {
  if (pattern.length > 253 || !SYSCTL_PATTERN.test(pattern)) {
    return `sysctl ${JSON.stringify(pattern)} must have at most 253 characters and match regex ${SYSCTL_PATTERN.source}`;
  }
  const name = normalizeSysctlName(pattern.replace(/\*$/, ''));
  if (!sysctlNamespace(name)) return `the sysctls ${JSON.stringify(name)} are not known to be namespaced`;
  return undefined;
}

export class SysctlAllowlist implements AdmitHandler {
  readonly #names = new Map<string, Namespace>();
  readonly #prefixes = new Map<string, Namespace>();

  /** `patterns`: the safe sysctls and allowedUnsafeSysctls. Throws on a pattern the kubelet refuses. */
  constructor(patterns: string[]) {
    for (const p of patterns) {
      const problem = invalidSysctlPattern(p);
      if (problem) throw new Error(problem);
      const prefixed = p.endsWith('*');
      const name = normalizeSysctlName(prefixed ? p.slice(0, -1) : p);
      const ns = sysctlNamespace(name) as Namespace;
      (prefixed ? this.#prefixes : this.#names).set(name, ns);
    }
  }

  #validate(raw: string, hostNet: boolean, hostIPC: boolean): string | undefined {
    const name = normalizeSysctlName(raw);
    const ns = this.#names.get(name) ?? [...this.#prefixes].find(([prefix]) => name.startsWith(prefix))?.[1];
    if (!ns) return `${JSON.stringify(name)} not allowlisted`;
    if ((ns === 'ipc' && hostIPC) || (ns === 'net' && hostNet)) {
      return `${JSON.stringify(name)} not allowed with host ${ns} enabled`;
    }
    return undefined;
  }

  admit({ pod }: PodAdmitAttributes): AdmitResult {
    for (const s of pod.spec?.securityContext?.sysctls ?? []) {
      const problem = this.#validate(s.name, pod.spec?.hostNetwork === true, pod.spec?.hostIPC === true);
      if (problem) {
        return { admit: false, reason: SysctlForbiddenReason, message: `forbidden sysctl: ${problem}` };
      }
    }
    return { admit: true };
  }
}
