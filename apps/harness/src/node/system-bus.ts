// The node's system D-Bus and logind, which the agent's graceful node shutdown needs as the
// kubelet does: logind grants its delay inhibitor lock and announces PrepareForShutdown. A node's
// PID 1 is tini, not systemd, so logind is elogind, standalone; the harness starts both before
// the agent, as a node's init starts them before the kubelet's unit.
import { LOGIND_CONF_DIR, LOGIND_INTERFACE, LOGIND_OBJECT, LOGIND_SERVICE } from '@kh/node-agent';
import { done, NODE_ELOGIND_PATH, notYet, until } from '@kh/testkit';
import type { NodeHost, NodeProcess } from './host.js';

/**
 * Where elogind reads its drop-ins. It becomes a link to the kubelet's directory, so the
 * agent's InhibitDelayMaxSec override reaches elogind when the agent makes it reload.
 */
export const ELOGIND_CONF_DIR = '/etc/elogind/logind.conf.d';
/** The system bus socket's directory; dbus-daemon does not make it (a distribution's init does). */
const DBUS_RUN_DIR = '/run/dbus';
/** Where dbus-daemon --system listens (Debian's system.conf), and where clients look for it. */
const SYSTEM_BUS_SOCKET = `${DBUS_RUN_DIR}/system_bus_socket`;
const READY_TIMEOUT_MS = 15_000;

/** A question only a working logind answers: the inhibit delay it grants, read over the system bus. */
export const LOGIND_PROBE = [
  'dbus-send',
  '--system',
  '--print-reply',
  `--dest=${LOGIND_SERVICE}`,
  LOGIND_OBJECT,
  'org.freedesktop.DBus.Properties.Get',
  `string:${LOGIND_INTERFACE}`,
  'string:InhibitDelayMaxUSec',
];

/**
 * elogind, seeing no unified cgroup2 at /sys/fs/cgroup, mounts a named v1 hierarchy of its own
 * (name=elogind, kernel-wide: every process on the host shows it) and makes its mount point in
 * the node's /sys/fs/cgroup, the host's, where it outlives the node. In a cgroup and mount
 * namespace of its own, with cgroup2 mounted there, it sees the node's unified cgroup as its
 * whole tree and leaves the host's alone. It needs no cgroup at all here: no one logs in.
 */
export const ELOGIND_COMMAND = [
  'unshare',
  '--mount',
  '--cgroup',
  '--propagation',
  'private',
  'sh',
  '-c',
  `mount -t cgroup2 kh-elogind /sys/fs/cgroup && exec ${NODE_ELOGIND_PATH}`,
];

export interface SystemBus {
  /** dbus-daemon's and elogind's last lines, for the report. */
  tail(lines: number): string[];
  stop(): Promise<void>;
}

/**
 * Starts dbus-daemon --system and then elogind on the node, and returns once logind answers on the
 * bus. elogind is started, not bus-activated: activation through dbus-daemon's helper timed out
 * in a node. Both log to their output (no syslog in a node), which `tail` keeps.
 */
export async function startSystemBus(
  host: NodeHost,
  opts: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<SystemBus> {
  const prepared = await host.exec([
    'sh',
    '-c',
    `mkdir -p ${DBUS_RUN_DIR} ${LOGIND_CONF_DIR} && rm -rf ${ELOGIND_CONF_DIR} && ln -s ${LOGIND_CONF_DIR} ${ELOGIND_CONF_DIR}`,
  ]);
  if (prepared.exitCode !== 0) throw new Error(`preparing the node's system bus failed: ${prepared.output}`);
  const processes: NodeProcess[] = [];
  const tail = (lines: number) => processes.flatMap((p) => p.tail(lines).map((l) => `${p.name}: ${l}`));
  const stop = async () => {
    for (const p of [...processes].reverse()) await p.stop('SIGTERM');
  };
  try {
    processes.push(
      await host.spawn(['dbus-daemon', '--system', '--nofork', '--nopidfile', '--nosyslog'], {
        name: 'dbus-daemon',
      }),
    );
    // elogind connects once, at its start: the bus must listen by then.
    await waitFor(host, ['test', '-S', SYSTEM_BUS_SOCKET], 'the system bus socket', opts);
    // SYSTEMD_LOG_TARGET: elogind's log goes to its output rather than to a syslog there is none of.
    processes.push(
      await host.spawn(ELOGIND_COMMAND, { name: 'elogind', env: { SYSTEMD_LOG_TARGET: 'console' } }),
    );
    await waitFor(host, LOGIND_PROBE, `${LOGIND_SERVICE} on the node's system bus`, opts);
  } catch (err) {
    const lines = tail(20);
    await stop().catch(() => {});
    throw new Error([(err as Error).message, ...lines].join('\n'), { cause: err });
  }
  return { tail, stop };
}

/** Runs `cmd` on the node until it exits 0. */
async function waitFor(
  host: NodeHost,
  cmd: string[],
  what: string,
  opts: { timeoutMs?: number; intervalMs?: number },
): Promise<void> {
  await until(
    async () => {
      const r = await host.exec(cmd, { timeoutMs: 5_000 }).catch((err: Error) => ({
        exitCode: -1,
        output: err.message,
      }));
      return r.exitCode === 0 ? done(undefined) : notYet(r.output.trim() || `exit ${r.exitCode}`);
    },
    { timeoutMs: opts.timeoutMs ?? READY_TIMEOUT_MS, intervalMs: opts.intervalMs ?? 200, describe: what },
  );
}
