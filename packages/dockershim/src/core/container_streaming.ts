import { type ChildProcess, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import net from 'node:net';
import type { Duplex, Writable } from 'node:stream';
import {
  type AttachRequest,
  type AttachResponse,
  type ExecRequest,
  type ExecResponse,
  FailedPreconditionError,
  type PortForwardRequest,
  type PortForwardResponse,
} from '@kh/cri-api';
import type {
  ExecResult,
  StreamIO,
  StreamingRuntime,
  StreamingServer,
  TerminalSize,
} from '@kh/cri-streaming';
import { FrameSplitter, StreamType } from '../docker/stream.js';
import { ContainerType } from '../model/labels.js';
import { killExecProcess, waitExitCode } from './container_exec.js';
import type { ShimContext } from './context.js';
import { docker } from './errors.js';
import { getManaged } from './lookup.js';

// CRI Exec, Attach and PortForward only hand out a URL of the streaming server; the session itself
// runs later, when a client dials that URL, through DockerStreamingRuntime below.

/** What the three calls need of the streaming server: a single-use URL for each request. */
export type StreamingUrls = Pick<StreamingServer, 'getExec' | 'getAttach' | 'getPortForward'>;

// The streaming server validates the request itself (cmd, which streams, tty with stderr) when it
// hands out the URL; the shim first checks the container or sandbox is there and running.
export async function exec(
  ctx: ShimContext,
  streaming: StreamingUrls,
  req: ExecRequest,
): Promise<ExecResponse> {
  await runningContainer(ctx, req.containerId);
  return streaming.getExec(req);
}

export async function attach(
  ctx: ShimContext,
  streaming: StreamingUrls,
  req: AttachRequest,
): Promise<AttachResponse> {
  await runningContainer(ctx, req.containerId);
  return streaming.getAttach(req);
}

export async function portForward(
  ctx: ShimContext,
  streaming: StreamingUrls,
  req: PortForwardRequest,
): Promise<PortForwardResponse> {
  await readySandbox(ctx, req.podSandboxId);
  return streaming.getPortForward(req);
}

async function runningContainer(ctx: ShimContext, id: string) {
  const info = await getManaged(ctx, id, ContainerType.container, 'container_id');
  if (!info.State.Running)
    throw new FailedPreconditionError(`container ${JSON.stringify(id)} is not running`);
  return info;
}

async function readySandbox(ctx: ShimContext, id: string) {
  const info = await getManaged(ctx, id, ContainerType.sandbox, 'pod_sandbox_id');
  if (!info.State.Running)
    throw new FailedPreconditionError(`pod sandbox ${JSON.stringify(id)} is not ready`);
  return info;
}

/** The dockershim's side of streaming sessions: Docker exec, attach, and connections into pod netns. */
export class DockerStreamingRuntime implements StreamingRuntime {
  private readonly dialers = new NetnsDialers();

  constructor(private readonly ctx: ShimContext) {}

  async exec(containerId: string, cmd: string[], io: StreamIO, signal: AbortSignal): Promise<ExecResult> {
    // CRI Exec checked the container when it handed out the URL; should it have gone or stopped
    // since, Docker's 404 / 409 answer maps to NOT_FOUND / FAILED_PRECONDITION.
    const what = `exec ${JSON.stringify(cmd)} in container ${JSON.stringify(containerId)}`;
    const engine = this.ctx.docker;
    const execution = await docker(what, () =>
      engine.createExec(containerId, {
        Cmd: cmd,
        AttachStdin: io.stdin !== undefined,
        AttachStdout: io.stdout !== undefined,
        AttachStderr: io.stderr !== undefined,
        Tty: io.tty,
      }),
    );
    const connection = await docker(what, () =>
      engine.startExec(execution, { stdin: io.stdin !== undefined, tty: io.tty }),
    );
    const ended = await relay(connection, io, signal, (size) => engine.resizeExecTty(execution, size));
    if (!ended) {
      // The client went away: nobody can read the command's output or end it any more.
      await killExecProcess(engine, execution);
      throw signal.reason ?? new Error('client disconnected');
    }
    // No more output can come: the client gets its end while the exit code is looked up.
    io.stdout?.end();
    io.stderr?.end();
    let exitCode = await waitExitCode(engine, execution);
    if (exitCode === -1) {
      // Output closed while the command runs on (it handed its stdout to a daemon, say): end it.
      await killExecProcess(engine, execution);
      exitCode = await waitExitCode(engine, execution);
    }
    return { exitCode };
  }

  async attach(containerId: string, io: StreamIO, signal: AbortSignal): Promise<void> {
    const info = await runningContainer(this.ctx, containerId);
    const stdin = io.stdin !== undefined && info.Config.OpenStdin;
    const connection = await docker(`attach to container ${JSON.stringify(containerId)}`, () =>
      this.ctx.docker.attachContainer(info.Id, {
        stdin,
        stdout: io.stdout !== undefined,
        stderr: io.stderr !== undefined,
      }),
    );
    const tty = info.Config.Tty;
    await relay(connection, { ...io, stdin: stdin ? io.stdin : undefined, tty }, signal, (size) =>
      tty ? this.ctx.docker.resizeContainerTty(info.Id, size) : Promise.resolve(),
    );
  }

  async portForward(podSandboxId: string, port: number, stream: Duplex, signal: AbortSignal): Promise<void> {
    const info = await readySandbox(this.ctx, podSandboxId);
    const socket = await this.dialers.dial(info.Id, info.State.Pid, port, signal);
    await splice(stream, socket, signal);
  }

  close(): void {
    this.dialers.close();
  }
}

/**
 * Copies a session's streams to and from Docker's hijacked connection until Docker closes it (true) or
 * the client goes away (false). Without a TTY Docker multiplexes stdout and stderr into frames. With a
 * TTY the end of stdin is not passed on: a terminal has no end of input, and Docker would take it as a
 * detach and close the output while the command runs on.
 */
async function relay(
  connection: Duplex,
  io: StreamIO,
  signal: AbortSignal,
  resize: (size: TerminalSize) => Promise<unknown>,
): Promise<boolean> {
  if (io.tty && io.resize) void applyResizes(io.resize, resize, signal);
  io.stdin?.pipe(connection, { end: !io.tty });
  // Frames are passed on as their bytes arrive, each piece a view of Docker's chunk: no copy and
  // no wait for a frame's end. A full reader pauses Docker's connection until it drains.
  const frames = new FrameSplitter();
  const waiting = new Set<Writable>();
  const write = (target: Writable | undefined, data: Buffer) => {
    if (!target || data.length === 0 || target.write(data) || waiting.has(target)) return;
    waiting.add(target);
    connection.pause();
    target.once('drain', () => {
      waiting.delete(target);
      if (waiting.size === 0) connection.resume();
    });
  };
  return await new Promise<boolean>((resolve) => {
    const abort = () => {
      connection.destroy();
      resolve(false);
    };
    if (signal.aborted) return abort();
    signal.addEventListener('abort', abort, { once: true });
    connection.on('data', (chunk: Buffer) => {
      if (io.tty) return write(io.stdout, chunk);
      try {
        for (const f of frames.push(chunk))
          write(f.stream === StreamType.Stderr ? io.stderr : io.stdout, f.payload);
      } catch {
        connection.destroy();
      }
    });
    connection.once('close', () => {
      signal.removeEventListener('abort', abort);
      io.stdin?.unpipe(connection);
      resolve(!signal.aborted);
    });
    connection.on('error', () => connection.destroy());
  });
}

async function applyResizes(
  sizes: AsyncIterable<TerminalSize>,
  resize: (size: TerminalSize) => Promise<unknown>,
  signal: AbortSignal,
): Promise<void> {
  try {
    for await (const size of sizes) {
      if (signal.aborted) return;
      // A resize racing the command's exit fails; the next one (if any) may still apply.
      await resize(size).catch(() => undefined);
    }
  } catch {
    // The session ended.
  }
}

/** Pipes a port-forward stream and a pod connection both ways; resolves once both are closed. */
async function splice(stream: Duplex, socket: net.Socket, signal: AbortSignal): Promise<void> {
  stream.pipe(socket);
  socket.pipe(stream);
  await new Promise<void>((resolve) => {
    const end = () => {
      socket.destroy();
      stream.destroy();
    };
    signal.addEventListener('abort', end, { once: true });
    // A client stream torn down without ending (a reset) must take the pod connection with it.
    stream.once('close', end);
    stream.once('error', end);
    socket.once('error', end);
    socket.once('close', () => {
      signal.removeEventListener('abort', end);
      if (!stream.writableEnded) stream.end();
      resolve();
    });
  });
}

export const DIALER_NAME = 'dockershim-portforward-dialer';
/** How long a pod's dialer process stays around for the next connection. */
const DIALER_IDLE_MS = 10_000;

// The dialer: a Node process in the pod's network namespace that opens TCP connections to localhost
// (IPv4, then IPv6, as containerd does) and hands each connected socket to the shim over its IPC
// channel. The shim then owns a socket that lives in the pod's namespace: no process relays the bytes.
const DIALER_SCRIPT = `
const net = require('node:net');
process.on('message', ({ id, port }) => {
  const errors = [];
  const dial = (hosts) => {
    if (hosts.length === 0) return process.send({ id, error: errors.join('; ') });
    const s = net.connect({ host: hosts[0], port });
    s.once('connect', () => process.send({ id }, s));
    s.once('error', (e) => { errors.push(e.message); dial(hosts.slice(1)); });
  };
  dial(['127.0.0.1', '::1']);
});
process.on('disconnect', () => process.exit(0));
`;

interface Pending {
  resolve(socket: net.Socket): void;
  reject(err: Error): void;
}

class Dialer {
  private readonly child: ChildProcess;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private idle: NodeJS.Timeout | undefined;
  private stderr = '';
  exited = false;

  constructor(
    sandboxId: string,
    pid: number,
    private readonly onExit: () => void,
  ) {
    // The trailing arguments only name the process for whoever lists it (ps shows node's argv).
    const argv = ['-e', DIALER_SCRIPT, DIALER_NAME, sandboxId];
    this.child = spawn('nsenter', [`--target=${pid}`, '--net', '--', process.execPath, ...argv], {
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin' },
    });
    this.child.stderr?.on('data', (b: Buffer) => {
      if (this.stderr.length < 4096) this.stderr += b.toString();
    });
    this.child.on('message', (m: { id: number; error?: string }, handle: unknown) => {
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      this.armIdle();
      if (!p) return (handle as net.Socket | undefined)?.destroy();
      if (m.error !== undefined || !(handle instanceof net.Socket))
        p.reject(new Error(m.error ?? 'no socket'));
      else p.resolve(handle);
    });
    const exited = (why: string) => {
      if (this.exited) return;
      this.exited = true;
      clearTimeout(this.idle);
      this.onExit();
      const err = new Error(this.stderr.trim() || why);
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
    };
    this.child.on('error', (err) => exited(`cannot run nsenter: ${err.message}`));
    this.child.on('exit', (code, sig) => exited(`dialer exited (${sig ?? `code ${code}`})`));
  }

  dial(port: number): Promise<net.Socket> {
    clearTimeout(this.idle);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.child.send({ id, port }, (err) => {
        if (err) reject(err);
      });
    });
  }

  private armIdle(): void {
    clearTimeout(this.idle);
    if (this.pending.size === 0) this.idle = setTimeout(() => this.stop(), DIALER_IDLE_MS);
  }

  stop(): void {
    clearTimeout(this.idle);
    this.child.kill('SIGKILL');
  }
}

/** One dialer per pod (by pause container and its pid), started on the first connection. */
class NetnsDialers {
  private readonly dialers = new Map<string, Dialer>();

  async dial(sandboxId: string, pid: number, port: number, signal: AbortSignal): Promise<net.Socket> {
    const where = `port ${port} in the network namespace of pod sandbox ${JSON.stringify(sandboxId)}`;
    // The pause container's pid is only meaningful if the shim sees dockerd's pid namespace.
    const cgroups = await readFile(`/proc/${pid}/cgroup`, 'utf8').catch(() => '');
    if (pid <= 0 || !cgroups.includes(sandboxId)) {
      throw new Error(
        `cannot reach ${where}: its pause process (pid ${pid}) is not visible here; the dockershim must share dockerd's pid namespace`,
      );
    }
    const key = `${sandboxId}/${pid}`;
    let dialer = this.dialers.get(key);
    if (!dialer || dialer.exited) {
      const fresh = new Dialer(sandboxId, pid, () => {
        if (this.dialers.get(key) === fresh) this.dialers.delete(key);
      });
      this.dialers.set(key, fresh);
      dialer = fresh;
    }
    let socket: net.Socket;
    try {
      socket = await dialer.dial(port);
    } catch (err) {
      throw new Error(`cannot connect to ${where}: ${(err as Error).message}`);
    }
    if (signal.aborted) {
      socket.destroy();
      throw signal.reason;
    }
    return socket;
  }

  close(): void {
    for (const d of this.dialers.values()) d.stop();
    this.dialers.clear();
  }
}
