// An in-memory StreamingRuntime for the tests: a few commands that exercise every stream, and
// port-forward to real TCP servers on loopback.
import { createHash } from 'node:crypto';
import { connect, createServer, type Server } from 'node:net';
import type { Duplex, Readable } from 'node:stream';
import { NotFoundError } from '@kh/cri-api';
import type { ExecResult, StreamIO, StreamingRuntime } from '../src/index.js';

export interface RuntimeCall {
  kind: 'exec' | 'attach' | 'portForward';
  id: string;
  args: string[] | number;
  tty?: boolean;
  streams?: string[];
  /** Set when the call's signal aborted before it settled. */
  aborted?: boolean;
}

/** The containers and sandboxes that exist; anything else is NotFound. */
export const CONTAINER = 'c1';
export const SANDBOX = 'p1';

export class MemoryRuntime implements StreamingRuntime {
  readonly calls: RuntimeCall[] = [];

  async exec(containerId: string, cmd: string[], io: StreamIO, signal: AbortSignal): Promise<ExecResult> {
    const call = this.record(
      { kind: 'exec', id: containerId, args: cmd, tty: io.tty, streams: present(io) },
      signal,
    );
    if (containerId !== CONTAINER) throw new NotFoundError(`container "${containerId}" not found`);
    const [name, ...args] = cmd;
    switch (name) {
      case 'echo': {
        // Copies stdin to stdout until it ends or, on a terminal, until ^D (a line discipline's EOF).
        for await (const chunk of io.stdin ?? []) {
          const eof = io.tty ? (chunk as Buffer).indexOf(4) : -1;
          await write(io.stdout, eof < 0 ? chunk : (chunk as Buffer).subarray(0, eof));
          if (eof >= 0) break;
        }
        return { exitCode: 0 };
      }
      case 'print': {
        // print <stdout> <stderr> <exit code>
        await write(io.stdout, args[0] ?? '');
        await write(io.stderr, args[1] ?? '');
        return { exitCode: Number(args[2] ?? 0) };
      }
      case 'sha256': {
        // Hashes stdin, prints the hex digest and the byte count.
        const hash = createHash('sha256');
        let n = 0;
        for await (const chunk of io.stdin ?? []) {
          hash.update(chunk as Buffer);
          n += (chunk as Buffer).length;
        }
        await write(io.stdout, `${hash.digest('hex')} ${n}\n`);
        return { exitCode: 0 };
      }
      case 'sizes': {
        // Reports each terminal size until `count` arrived.
        const count = Number(args[0] ?? 1);
        let seen = 0;
        for await (const size of io.resize ?? []) {
          await write(io.stdout, `${size.width}x${size.height}\n`);
          if (++seen === count) break;
        }
        return { exitCode: 0 };
      }
      case 'wait': {
        // Runs until the session ends, like a shell nobody types into.
        await new Promise<void>((resolve) =>
          signal.addEventListener('abort', () => resolve(), { once: true }),
        );
        call.aborted = true;
        return { exitCode: 137 };
      }
      case 'detach': {
        // detach <ms> <exit code>: containerd's exec with a TTY, whose stdin ending closes stdout
        // while the process runs on; what it prints then goes nowhere; it exits after <ms>.
        for await (const _ of io.stdin ?? []);
        io.stdout?.end();
        await new Promise((r) => setTimeout(r, Number(args[0] ?? 0)));
        return { exitCode: Number(args[1] ?? 0) };
      }
      case 'fail':
        throw new Error(`the runtime broke: ${args.join(' ')}`);
      default:
        await write(io.stderr ?? io.stdout, `${name}: not found\n`);
        return { exitCode: 127 };
    }
  }

  async attach(containerId: string, io: StreamIO, signal: AbortSignal): Promise<void> {
    const call = this.record(
      { kind: 'attach', id: containerId, args: [], tty: io.tty, streams: present(io) },
      signal,
    );
    if (containerId !== CONTAINER) throw new NotFoundError(`container "${containerId}" not found`);
    // The container's main process echoes what it reads, upper-cased, until its stdin closes.
    await write(io.stdout, 'attached\n');
    for await (const chunk of io.stdin ?? []) await write(io.stdout, String(chunk).toUpperCase());
    if (signal.aborted) call.aborted = true;
  }

  async portForward(podSandboxId: string, port: number, stream: Duplex, signal: AbortSignal): Promise<void> {
    const call = this.record({ kind: 'portForward', id: podSandboxId, args: port }, signal);
    if (podSandboxId !== SANDBOX) throw new NotFoundError(`pod sandbox "${podSandboxId}" not found`);
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    const onAbort = () => {
      call.aborted = true;
      socket.destroy();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    stream.pipe(socket);
    socket.pipe(stream);
    await new Promise<void>((resolve) => socket.once('close', () => resolve()));
    signal.removeEventListener('abort', onAbort);
  }

  private record(call: RuntimeCall, signal: AbortSignal): RuntimeCall {
    this.calls.push(call);
    signal.addEventListener('abort', () => {
      call.aborted = true;
    });
    return call;
  }
}

function present(io: StreamIO): string[] {
  return (['stdin', 'stdout', 'stderr', 'resize'] as const).filter((k) => io[k] !== undefined);
}

/** Writes with backpressure; a missing stream swallows the data. */
function write(to: StreamIO['stdout'], data: string | Buffer): Promise<void> {
  if (!to || data.length === 0) return Promise.resolve();
  return new Promise((resolve) => {
    if (to.write(data)) resolve();
    else to.once('drain', resolve);
  });
}

/** A TCP server on loopback that echoes what it reads and closes when the client does. */
export async function echoServer(): Promise<{ port: number; server: Server }> {
  const server = createServer((s) => {
    s.on('error', () => {});
    s.pipe(s);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  return { port: address.port, server };
}

/** A deterministic pseudo-random payload and its SHA-256. */
export function payload(bytes: number): { data: Buffer; sha256: string } {
  const data = Buffer.alloc(bytes);
  let x = 0x12345678;
  for (let i = 0; i < bytes; i += 4) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    data.writeInt32LE(x | 0, Math.min(i, bytes - 4));
  }
  return { data, sha256: createHash('sha256').update(data).digest('hex') };
}

/** Reads a stream to its end. */
export async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}
