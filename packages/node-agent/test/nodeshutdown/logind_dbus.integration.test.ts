// LogindBus on a real dbus-daemon (a private one, standing in for the system bus) with a fake
// logind on it: the inhibit delay property, the drop-in and the SIGHUP that makes logind read
// it, the inhibitor lock taken by the inhibit tool and released with its pipe, and the
// PrepareForShutdown signal as an outside client (dbus-send) emits it. Needs dbus-daemon and
// dbus-send (the `dbus` package; scripts/setup-host.sh installs it).
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { realClock } from '@kh/apimachinery';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { defaultKubeletConfiguration } from '../../src/config/types.js';
import { NodeShutdownManager } from '../../src/nodeshutdown/manager.js';
import { DBusConnection } from '../../src/nodeshutdown/systemd/bus.js';
import { KUBELET_LOGIND_CONF } from '../../src/nodeshutdown/systemd/logind.js';
import {
  connectLogind,
  LOGIND_INTERFACE,
  LOGIND_OBJECT,
  prepareForShutdownSignal,
} from '../../src/nodeshutdown/systemd/logind_dbus.js';
import { MessageType } from '../../src/nodeshutdown/systemd/wire.js';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'kh-logind-'));
const address = `unix:path=${join(dir, 'system_bus_socket')}`;
const confDir = join(dir, 'logind.conf.d');
const argsFile = join(dir, 'inhibit-args');
const inhibitTool = join(dir, 'fake-inhibit');
let daemon: ChildProcess;
let logind: DBusConnection;
let delayUsec = 5_000_000n;
const inhibitors: [string, string, string, string, number, number][] = [];

// logind reads its drop-ins again on SIGHUP; the fake logind runs in this process.
const onHup = () => {
  const conf = readFileSync(join(confDir, KUBELET_LOGIND_CONF), 'utf8');
  const sec = /InhibitDelayMaxSec=(\d+)/.exec(conf)?.[1];
  if (sec) delayUsec = BigInt(sec) * 1_000_000n;
};

async function startFakeLogind(): Promise<DBusConnection> {
  const conn = await DBusConnection.open(address);
  conn.onMethodCall((m) => {
    const reply = (signature: string, body: never[]) =>
      conn.send({
        type: MessageType.MethodReturn,
        replySerial: m.serial,
        destination: m.sender,
        signature,
        body,
      });
    if (m.member === 'Get' && m.body[1] === 'InhibitDelayMaxUSec')
      reply('v', [{ signature: 't', value: delayUsec }] as never[]);
    else if (m.member === 'ListInhibitors') reply('a(ssssuu)', [inhibitors] as never[]);
    else if (m.member === 'TestInhibit') {
      inhibitors.push(m.body as (typeof inhibitors)[number]);
      reply('', []);
    } else
      conn.send({
        type: MessageType.Error,
        replySerial: m.serial,
        destination: m.sender,
        errorName: 'org.freedesktop.DBus.Error.UnknownMethod',
        signature: 's',
        body: [`no ${m.member}`],
      });
  });
  await conn.call({
    destination: 'org.freedesktop.DBus',
    path: '/org/freedesktop/DBus',
    interface: 'org.freedesktop.DBus',
    member: 'RequestName',
    signature: 'su',
    body: ['org.freedesktop.login1', 4],
  });
  return conn;
}

const emit = (shuttingDown: boolean) => {
  const [program, ...args] = prepareForShutdownSignal(shuttingDown);
  return run(program!, args, { env: { ...process.env, DBUS_SYSTEM_BUS_ADDRESS: address } });
};

beforeAll(async () => {
  daemon = spawn('dbus-daemon', ['--session', '--nofork', `--address=${address}`, '--print-address'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  await new Promise((resolve) => daemon.stdout?.once('data', resolve));
  process.on('SIGHUP', onHup);
  logind = await startFakeLogind();
  // The inhibit tool's stand-in: it records its arguments, registers its pid with the fake
  // logind as the lock holder, and becomes the command it was given (cat), as the real tool runs it.
  writeFileSync(
    inhibitTool,
    `#!/bin/sh\necho "$@" > ${argsFile}\ndbus-send --system --print-reply --dest=org.freedesktop.login1 ${LOGIND_OBJECT} ${LOGIND_INTERFACE}.TestInhibit string:\${1#--what=} string:\${2#--who=} string:"\${3#--why=}" string:\${4#--mode=} uint32:0 uint32:$$ >/dev/null\nexec "$5"\n`,
  );
  chmodSync(inhibitTool, 0o755);
});

afterAll(() => {
  process.off('SIGHUP', onHup);
  logind?.close();
  daemon?.kill();
});

describe('LogindBus over D-Bus', () => {
  it('reads InhibitDelayMaxUSec, and raises it with the drop-in and a SIGHUP to logind', async () => {
    const bus = await connectLogind({ address, confDir, inhibitTool });
    expect(await bus.currentInhibitDelayMs()).toBe(5_000);
    await bus.overrideInhibitDelay(30_000);
    expect(readFileSync(join(confDir, KUBELET_LOGIND_CONF), 'utf8')).toBe(
      '# Kubelet logind override\n[Login]\nInhibitDelayMaxSec=30\n',
    );
    await bus.reloadLogindConf();
    expect(await bus.currentInhibitDelayMs()).toBe(30_000);
    bus.close();
  });

  it('takes the delay lock through the inhibit tool, confirmed by logind, and releases it with the pipe', async () => {
    const bus = await connectLogind({ address, confDir, inhibitTool });
    const lock = await bus.inhibitShutdown();
    expect(readFileSync(argsFile, 'utf8')).toBe(
      '--what=shutdown --who=kubelet --why=Kubelet needs time for critical node shutdown --mode=delay cat\n',
    );
    const holder = inhibitors.at(-1) as (typeof inhibitors)[number];
    expect(holder.slice(0, 4)).toEqual([
      'shutdown',
      'kubelet',
      'Kubelet needs time for critical node shutdown',
      'delay',
    ]);
    expect(() => process.kill(holder[5], 0)).not.toThrow();
    await lock.release();
    expect(() => process.kill(holder[5], 0)).toThrow();
    bus.close();
  });

  it('says why when the inhibit tool cannot take the lock', async () => {
    const bus = await connectLogind({ address, confDir, inhibitTool: join(dir, 'missing-inhibit') });
    await expect(bus.inhibitShutdown()).rejects.toThrow(/did not take the shutdown inhibitor lock: .*ENOENT/);
    bus.close();
  });

  it('hears PrepareForShutdown from an outside client, and the bus going away', async () => {
    const bus = await connectLogind({ address, confDir, inhibitTool });
    const events: boolean[] = [];
    let closed = false;
    await bus.monitorShutdown(
      (b) => events.push(b),
      () => {
        closed = true;
      },
    );
    await emit(true);
    await emit(false);
    await vi.waitFor(() => expect(events).toEqual([true, false]));
    bus.close();
    await vi.waitFor(() => expect(closed).toBe(true));
  });

  it('fails its first call when logind is not on the bus', async () => {
    logind.close();
    try {
      const bus = await connectLogind({ address, confDir, inhibitTool });
      await expect(bus.currentInhibitDelayMs()).rejects.toThrow('org.freedesktop.DBus.Error.ServiceUnknown');
      bus.close();
    } finally {
      await vi.waitFor(async () => {
        logind = await startFakeLogind();
      });
    }
  });

  it('drives the shutdown manager: the lock is held, PrepareForShutdown kills the pods and lets it go', async () => {
    delayUsec = 5_000_000n;
    const killed: string[] = [];
    const manager = NodeShutdownManager.create(
      { ...defaultKubeletConfiguration(), shutdownGracePeriod: '10s', shutdownGracePeriodCriticalPods: '5s' },
      {
        connect: () => connectLogind({ address, confDir, inhibitTool }),
        activePods: () => [{ metadata: { name: 'p', uid: 'p' }, spec: { containers: [] } }],
        killer: { killPod: async (pod) => void killed.push(pod.metadata?.name ?? '') },
        syncNodeStatus: () => {},
        rootDir: dir,
        clock: realClock,
      },
    );
    const ac = new AbortController();
    const running = manager?.run(ac.signal);
    // The 10 s asked for is over logind's 5 s: the manager writes the drop-in and reloads logind.
    await vi.waitFor(() => expect(delayUsec).toBe(10_000_000n));
    const holder = await vi.waitFor(() => {
      const h = inhibitors.at(-1) as (typeof inhibitors)[number];
      process.kill(h[5], 0);
      return h;
    });
    // The match on PrepareForShutdown is added right after the lock is taken: emit until heard.
    await vi.waitFor(async () => {
      await emit(true);
      expect(manager?.shutdownStatus()).toBe('node is shutting down');
    });
    await vi.waitFor(() => expect(killed).toContain('p'));
    await vi.waitFor(() => expect(() => process.kill(holder[5], 0)).toThrow());
    ac.abort();
    await running;
  });
});
