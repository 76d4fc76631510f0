/** One field of /proc/<pid>/status as text, e.g. field(status, 'Seccomp') === '2'. */
export function statusField(status: string, name: string): string {
  const m = new RegExp(`^${name}:\\s*(.*)$`, 'm').exec(status);
  if (m?.[1] === undefined) throw new Error(`no ${name} in /proc/<pid>/status: ${status.slice(0, 200)}`);
  return m[1].trim();
}

/** A capability set of /proc/<pid>/status (CapEff, CapBnd, ...) as a bit mask. */
export function capabilitySet(
  status: string,
  name: 'CapInh' | 'CapPrm' | 'CapEff' | 'CapBnd' | 'CapAmb',
): bigint {
  return BigInt(`0x${statusField(status, name)}`);
}

/** Linux capability names by bit number (capability.h, up to 6.x kernels). */
const CAPABILITIES = (
  'CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP ' +
  'LINUX_IMMUTABLE NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER ' +
  'SYS_MODULE SYS_RAWIO SYS_CHROOT SYS_PTRACE SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE ' +
  'SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE AUDIT_WRITE AUDIT_CONTROL SETFCAP ' +
  'MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ PERFMON BPF ' +
  'CHECKPOINT_RESTORE'
).split(' ');

/** The names of the capabilities in a mask, e.g. ['CAP_BPF', 'CAP_PERFMON']. */
export function capabilityNames(mask: bigint): string[] {
  const names: string[] = [];
  for (let bit = 0; mask >> BigInt(bit) !== 0n; bit++)
    if ((mask >> BigInt(bit)) & 1n) names.push(`CAP_${CAPABILITIES[bit] ?? bit}`);
  return names;
}

/** Why a capability set is not `expected`, by name; undefined when it is. */
export function capabilityDifference(actual: bigint, expected: bigint): string | undefined {
  if (actual === expected) return undefined;
  const missing = capabilityNames(expected & ~actual);
  const extra = capabilityNames(actual & ~expected);
  return [
    missing.length > 0 ? `lacks ${missing.join(', ')}` : '',
    extra.length > 0 ? `has ${extra.join(', ')} beyond it` : '',
  ]
    .filter(Boolean)
    .join(' and ');
}
