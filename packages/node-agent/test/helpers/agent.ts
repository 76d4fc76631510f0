import { newKubeletCommand } from '../../src/cli.js';
import { freePort } from './net.js';

/** The node-agent command with its stdout and stderr captured. */
export function agentCommand(signal?: AbortSignal) {
  const io = { out: '', err: '' };
  const cmd = newKubeletCommand({
    out: (s) => {
      io.out += s;
    },
    err: (s) => {
      io.err += s;
    },
    ...(signal ? { signal } : {}),
  });
  return { io, cmd };
}

export interface RunningAgent {
  /** What the command has printed so far. */
  readonly io: { out: string; err: string };
  /** Its exit code, once it ends. */
  readonly exited: Promise<number>;
  /** SIGTERM (the command's abort signal); resolves to the exit code. */
  stop(): Promise<number>;
  /**
   * Polls `get` until it gives a value (a failed read counts as none); on timeout the error
   * carries the agent's recent log, which is where the reason usually is.
   */
  until<T>(what: string, get: () => Promise<T | undefined>, timeoutMs?: number): Promise<T>;
}

/** Runs the node-agent command in this process, as `node-agent <args>` would. */
export function startAgent(args: string[]): RunningAgent {
  const abort = new AbortController();
  const { io, cmd } = agentCommand(abort.signal);
  const exited = cmd.execute(args);
  return {
    io,
    exited,
    stop: () => {
      abort.abort();
      return exited;
    },
    async until(what, get, timeoutMs = 20_000) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const v = await get().catch(() => undefined);
        if (v !== undefined) return v;
        if (Date.now() > end) throw new Error(`timed out waiting for ${what}\n${io.err.slice(-3000)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
  };
}

/**
 * The flags that put an in-process agent on loopback: its node name, addresses and ports. Its
 * pods stay in one flat cgroup root (no QoS or pod cgroups): an agent in a test process must not
 * write the test host's /sys/fs/cgroup.
 */
export async function loopbackFlags(nodeName: string, healthzPort = 0): Promise<string[]> {
  return [
    '--cgroups-per-qos=false',
    `--hostname-override=${nodeName}`,
    '--node-ip=127.0.0.1',
    '--address=127.0.0.1',
    `--port=${await freePort()}`,
    `--healthz-port=${healthzPort}`,
  ];
}
