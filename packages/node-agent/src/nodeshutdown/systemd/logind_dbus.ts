// LogindBus on the real system bus. Calls, properties and the PrepareForShutdown signal go over
// our own D-Bus connection (bus.ts). The inhibitor lock is the exception: logind hands it out as
// a file descriptor, which Node cannot receive over a socket, so a child process takes it for us
// with logind's own tool (elogind-inhibit, or systemd-inhibit), and holds it while it runs `cat`
// on a pipe from the agent. Closing the pipe releases the lock, and so does the agent's death, as
// closing the kubelet's descriptor would. The lock is confirmed on the bus (ListInhibitors lists
// the child's pid) before inhibitShutdown resolves.
import { type ChildProcess, spawn } from 'node:child_process';
import { access, constants } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DBusConnection, systemBusAddress } from './bus.js';
import {
  INHIBIT_MODE,
  INHIBIT_WHAT,
  INHIBIT_WHO,
  INHIBIT_WHY,
  type InhibitLock,
  LOGIND_CONF_DIR,
  type LogindBus,
  writeInhibitDelayOverride,
} from './logind.js';
import type { Value } from './wire.js';

export const LOGIND_SERVICE = 'org.freedesktop.login1';
export const LOGIND_OBJECT = '/org/freedesktop/login1';
export const LOGIND_INTERFACE = 'org.freedesktop.login1.Manager';
export const PREPARE_FOR_SHUTDOWN_MATCH = `type='signal',interface='${LOGIND_INTERFACE}',member='PrepareForShutdown',path='${LOGIND_OBJECT}'`;
/**
 * The dbus-send argv of an outside client announcing (true) or cancelling (false) a shutdown as
 * logind would, the way upstream's e2e emits it on the system bus.
 */
export const prepareForShutdownSignal = (shuttingDown: boolean): string[] => [
  'dbus-send',
  '--system',
  '--type=signal',
  LOGIND_OBJECT,
  `${LOGIND_INTERFACE}.PrepareForShutdown`,
  `boolean:${shuttingDown}`,
];

/** logind's inhibit tools, the standalone one first (nodes without systemd as PID 1). */
export const INHIBIT_TOOLS = ['elogind-inhibit', 'systemd-inhibit'];

const LOCK_CONFIRM_TIMEOUT_MS = 5_000;
const POLL_MS = 50;
const RELOAD_SETTLE_MS = 1_000;

export interface LogindConnectOptions {
  /** Defaults to the system bus (DBUS_SYSTEM_BUS_ADDRESS, else /var/run/dbus/system_bus_socket). */
  address?: string;
  /** Where the kubelet's drop-in goes; /etc/systemd/logind.conf.d by default. */
  confDir?: string;
  /** The inhibit tool; found on PATH by default. */
  inhibitTool?: string;
}

/** Opens the system bus; logind's absence shows at the first call (org.freedesktop.DBus.Error.ServiceUnknown). */
export async function connectLogind(opts: LogindConnectOptions = {}): Promise<LogindBus> {
  const address = opts.address ?? systemBusAddress();
  return new DBusLogind(await DBusConnection.open(address), address, opts);
}

class DBusLogind implements LogindBus {
  private readonly locks = new Set<ChildProcess>();

  constructor(
    private readonly conn: DBusConnection,
    private readonly address: string,
    private readonly opts: LogindConnectOptions,
  ) {}

  async currentInhibitDelayMs(): Promise<number> {
    const [usec] = await this.conn.call({
      destination: LOGIND_SERVICE,
      path: LOGIND_OBJECT,
      interface: 'org.freedesktop.DBus.Properties',
      member: 'Get',
      signature: 'ss',
      body: [LOGIND_INTERFACE, 'InhibitDelayMaxUSec'],
    });
    if (typeof usec !== 'bigint') throw new Error(`InhibitDelayMaxUSec is not a uint64: ${String(usec)}`);
    return Number(usec / 1000n);
  }

  async inhibitShutdown(): Promise<InhibitLock> {
    const tool = this.opts.inhibitTool ?? (await findOnPath(INHIBIT_TOOLS));
    const child = spawn(
      tool,
      [
        `--what=${INHIBIT_WHAT}`,
        `--who=${INHIBIT_WHO}`,
        `--why=${INHIBIT_WHY}`,
        `--mode=${INHIBIT_MODE}`,
        'cat',
      ],
      { stdio: ['pipe', 'ignore', 'pipe'], env: { ...process.env, DBUS_SYSTEM_BUS_ADDRESS: this.address } },
    );
    let stderr = '';
    child.stderr?.on('data', (b: Buffer) => {
      stderr += b.toString();
    });
    let running = true;
    const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
    child.once('exit', () => {
      running = false;
    });
    child.once('error', (err) => {
      running = false;
      stderr += err.message;
    });
    this.locks.add(child);
    const release = async () => {
      this.locks.delete(child);
      child.stdin?.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), LOCK_CONFIRM_TIMEOUT_MS);
      await exited;
      clearTimeout(timer);
    };
    const deadline = Date.now() + LOCK_CONFIRM_TIMEOUT_MS;
    while (running) {
      if (child.pid !== undefined && (await this.holdsLock(child.pid))) return { release };
      if (Date.now() >= deadline) break;
      await sleep(POLL_MS);
    }
    await release();
    throw new Error(`${tool} did not take the shutdown inhibitor lock${stderr ? `: ${stderr.trim()}` : ''}`);
  }

  /** Whether logind lists a delay lock on shutdown held by `pid` for the kubelet. */
  private async holdsLock(pid: number): Promise<boolean> {
    const [inhibitors] = await this.conn.call({
      destination: LOGIND_SERVICE,
      path: LOGIND_OBJECT,
      interface: LOGIND_INTERFACE,
      member: 'ListInhibitors',
    });
    return ((inhibitors ?? []) as Value[][]).some(
      ([what, who, , mode, , holder]) =>
        String(what).split(':').includes(INHIBIT_WHAT) &&
        who === INHIBIT_WHO &&
        mode === INHIBIT_MODE &&
        holder === pid,
    );
  }

  /**
   * The kubelet asks systemd to SIGHUP systemd-logind.service; without systemd the bus tells
   * logind's pid and the signal goes there. logind reloads asynchronously, so this waits (a
   * little) for InhibitDelayMaxUSec to change.
   */
  async reloadLogindConf(): Promise<void> {
    const before = await this.currentInhibitDelayMs();
    const [pid] = await this.conn.call({
      destination: 'org.freedesktop.DBus',
      path: '/org/freedesktop/DBus',
      interface: 'org.freedesktop.DBus',
      member: 'GetConnectionUnixProcessID',
      signature: 's',
      body: [LOGIND_SERVICE],
    });
    process.kill(pid as number, 'SIGHUP');
    const deadline = Date.now() + RELOAD_SETTLE_MS;
    while (Date.now() < deadline && (await this.currentInhibitDelayMs()) === before) await sleep(POLL_MS);
  }

  overrideInhibitDelay(ms: number): Promise<void> {
    return writeInhibitDelayOverride(ms, this.opts.confDir ?? LOGIND_CONF_DIR);
  }

  async monitorShutdown(onEvent: (shuttingDown: boolean) => void, onClose: () => void): Promise<void> {
    this.conn.onSignal((m) => {
      if (m.interface === LOGIND_INTERFACE && m.member === 'PrepareForShutdown' && m.path === LOGIND_OBJECT)
        onEvent(m.body[0] === true);
    });
    this.conn.onClose(onClose);
    await this.conn.call({
      destination: 'org.freedesktop.DBus',
      path: '/org/freedesktop/DBus',
      interface: 'org.freedesktop.DBus',
      member: 'AddMatch',
      signature: 's',
      body: [PREPARE_FOR_SHUTDOWN_MATCH],
    });
  }

  close(): void {
    for (const child of this.locks) child.stdin?.end();
    this.conn.close();
  }
}

async function findOnPath(names: readonly string[]): Promise<string> {
  const dirs = (process.env.PATH ?? '').split(delimiter).filter(Boolean);
  for (const name of names)
    for (const dir of dirs) {
      const candidate = join(dir, name);
      if (
        await access(candidate, constants.X_OK).then(
          () => true,
          () => false,
        )
      )
        return candidate;
    }
  throw new Error(`none of ${names.join(', ')} found on PATH`);
}
