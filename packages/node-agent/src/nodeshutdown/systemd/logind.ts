// What the shutdown manager needs from logind on the system bus (the kubelet's
// nodeshutdown/systemd package): the inhibit delay logind grants, a delay inhibitor lock on
// shutdown, and its PrepareForShutdown signal. dbus_logind.ts talks to the real bus; unit
// tests give the manager a fake.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** A held delay lock: logind waits (up to InhibitDelayMaxSec) for it before shutting down. */
export interface InhibitLock {
  release(): Promise<void>;
}

export interface LogindBus {
  /** logind's InhibitDelayMaxUSec, in milliseconds. */
  currentInhibitDelayMs(): Promise<number>;
  /** Manager.Inhibit("shutdown", "kubelet", ..., "delay"). */
  inhibitShutdown(): Promise<InhibitLock>;
  /** Makes logind read its configuration again (the kubelet SIGHUPs systemd-logind.service). */
  reloadLogindConf(): Promise<void>;
  /** Writes the drop-in that raises InhibitDelayMaxSec; reloadLogindConf applies it. */
  overrideInhibitDelay(ms: number): Promise<void>;
  /**
   * Calls `onEvent` with each PrepareForShutdown's argument (true: shutting down, false:
   * cancelled) and `onClose` once when the connection is lost.
   */
  monitorShutdown(onEvent: (shuttingDown: boolean) => void, onClose: () => void): Promise<void>;
  close(): void;
}

/** Where the kubelet puts its logind drop-in, and the drop-in's name. */
export const LOGIND_CONF_DIR = '/etc/systemd/logind.conf.d';
export const KUBELET_LOGIND_CONF = '99-kubelet.conf';

export const INHIBIT_WHAT = 'shutdown';
export const INHIBIT_WHO = 'kubelet';
export const INHIBIT_WHY = 'Kubelet needs time for critical node shutdown';
export const INHIBIT_MODE = 'delay';

/** The kubelet's drop-in: logind lets inhibitors delay a shutdown for up to `ms`. */
export async function writeInhibitDelayOverride(ms: number, dir = LOGIND_CONF_DIR): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o755 });
  const body = `# Kubelet logind override\n[Login]\nInhibitDelayMaxSec=${Math.round(ms / 1000)}\n`;
  await writeFile(join(dir, KUBELET_LOGIND_CONF), body, { mode: 0o644 });
}
