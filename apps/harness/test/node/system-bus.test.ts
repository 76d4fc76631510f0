import { LOGIND_CONF_DIR } from '@kh/node-agent';
import { NODE_ELOGIND_PATH } from '@kh/testkit';
import { describe, expect, it } from 'vitest';
import type { NodeHost, NodeProcess } from '../../src/node/host.js';
import {
  ELOGIND_COMMAND,
  ELOGIND_CONF_DIR,
  LOGIND_PROBE,
  startSystemBus,
} from '../../src/node/system-bus.js';

/**
 * A node whose bus socket appears after `socketAfter` looks and whose logind answers from the
 * `answerAfter`th probe on (never when undefined); it records what ran, in order.
 */
function fakeNode(opts: { socketAfter?: number; answerAfter?: number }) {
  const ran: string[] = [];
  const stopped: string[] = [];
  let socketLooks = 0;
  let probes = 0;
  const host: NodeHost = {
    exec: async (cmd) => {
      if (cmd[0] === 'test') {
        ran.push('test socket');
        return { exitCode: ++socketLooks > (opts.socketAfter ?? 0) ? 0 : 1, output: '' };
      }
      if (cmd.join(' ') === LOGIND_PROBE.join(' ')) {
        ran.push('probe');
        probes++;
        return opts.answerAfter !== undefined && probes > opts.answerAfter
          ? { exitCode: 0, output: 'method return ... variant uint64 5000000' }
          : {
              exitCode: 1,
              output:
                'Error org.freedesktop.DBus.Error.ServiceUnknown: The name org.freedesktop.login1 was not provided',
            };
      }
      ran.push(`exec ${cmd.join(' ')}`);
      return { exitCode: 0, output: '' };
    },
    spawn: async (cmd, { name, env }) => {
      ran.push(`spawn ${name}: ${cmd.join(' ')}${env ? ` ${JSON.stringify(env)}` : ''}`);
      const p: NodeProcess = {
        name,
        exited: new Promise(() => {}),
        tail: () => [`${name} says hello`],
        stop: async () => {
          stopped.push(name);
        },
      };
      return p;
    },
    writeFile: async () => {},
  };
  return { host, ran, stopped };
}

describe('startSystemBus', () => {
  it("runs elogind in a cgroup namespace of its own, over the node's unified cgroup, where it mounts nothing on the host", () => {
    expect(ELOGIND_COMMAND.slice(0, 5)).toEqual([
      'unshare',
      '--mount',
      '--cgroup',
      '--propagation',
      'private',
    ]);
    expect(ELOGIND_COMMAND.at(-1)).toBe(
      `mount -t cgroup2 kh-elogind /sys/fs/cgroup && exec ${NODE_ELOGIND_PATH}`,
    );
  });

  it("links elogind's drop-ins to the kubelet's, starts dbus-daemon, then elogind once the socket listens, and returns once logind answers", async () => {
    const node = fakeNode({ socketAfter: 1, answerAfter: 2 });
    const bus = await startSystemBus(node.host, { intervalMs: 1 });
    expect(node.ran).toEqual([
      `exec sh -c mkdir -p /run/dbus ${LOGIND_CONF_DIR} && rm -rf ${ELOGIND_CONF_DIR} && ln -s ${LOGIND_CONF_DIR} ${ELOGIND_CONF_DIR}`,
      'spawn dbus-daemon: dbus-daemon --system --nofork --nopidfile --nosyslog',
      'test socket',
      'test socket',
      `spawn elogind: ${ELOGIND_COMMAND.join(' ')} {"SYSTEMD_LOG_TARGET":"console"}`,
      'probe',
      'probe',
      'probe',
    ]);
    expect(bus.tail(5)).toEqual(['dbus-daemon: dbus-daemon says hello', 'elogind: elogind says hello']);
    await bus.stop();
    expect(node.stopped).toEqual(['elogind', 'dbus-daemon']);
  });

  it("fails when logind never answers, with what the bus said and both daemons' last lines, and stops them", async () => {
    const node = fakeNode({});
    const err = await startSystemBus(node.host, { timeoutMs: 20, intervalMs: 1 }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    const message = (err as Error).message;
    expect(message).toContain("org.freedesktop.login1 on the node's system bus");
    expect(message).toContain('ServiceUnknown');
    expect(message).toContain('elogind: elogind says hello');
    expect(message).toContain('dbus-daemon: dbus-daemon says hello');
    expect(node.stopped).toEqual(['elogind', 'dbus-daemon']);
  });
});
