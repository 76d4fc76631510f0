// The seam between the streaming server and a container runtime: what the kubelet's
// streaming.Runtime is. The server owns the protocol (SPDY, WebSocket, tokens, timeouts); the
// runtime only runs processes and opens sockets.
import type { Duplex, Readable, Writable } from 'node:stream';

export interface TerminalSize {
  width: number;
  height: number;
}

/**
 * The client's streams for one exec or attach. Each is present only when the client asked for
 * it. `stderr` is never present with `tty` (a terminal has one output).
 *
 * - `stdin` ends when the client closes its stdin (SPDY FIN, WebSocket v5 close signal); the
 *   runtime should then close the process's stdin.
 * - `stdout`/`stderr` respect backpressure (`write()` returning false, then 'drain'). The server
 *   ends them once the call settles; a runtime may end them earlier.
 * - `resize` yields the sizes the client sends (only with `tty`), first one usually right away;
 *   it finishes when the session ends.
 */
export interface StreamIO {
  stdin?: Readable;
  stdout?: Writable;
  stderr?: Writable;
  tty: boolean;
  resize?: AsyncIterable<TerminalSize>;
}

export interface ExecResult {
  /** The process's exit code; non-zero reaches the client as a NonZeroExitCode Status. */
  exitCode: number;
}

/**
 * What a runtime implements. Failures are CriError subclasses from @kh/cri-api; the server turns
 * them into the Kubernetes Status the client reads: NotFoundError -> 404 NotFound,
 * FailedPreconditionError (container not running) and InvalidArgumentError -> 400 BadRequest,
 * anything else -> 500 InternalError with the error's message.
 * `signal` aborts when the client goes away, the stream idles out or
 * the server closes: the runtime must then stop what it started (kill the exec'd process, detach,
 * close the forwarded socket) and settle promptly.
 */
export interface StreamingRuntime {
  /** Runs `cmd` in the container and resolves with its exit code once it has exited. */
  exec(containerId: string, cmd: string[], io: StreamIO, signal: AbortSignal): Promise<ExecResult>;
  /** Attaches to the container's main process; resolves when it exits or the client detaches. */
  attach(containerId: string, io: StreamIO, signal: AbortSignal): Promise<void>;
  /**
   * Connects `stream` to TCP `port` inside the pod sandbox's network namespace and copies both
   * ways. `stream`'s readable side ends when the client closes its side; the runtime ends the
   * writable side when the pod closes the connection. Resolves when both directions are done.
   */
  portForward(podSandboxId: string, port: number, stream: Duplex, signal: AbortSignal): Promise<void>;
}
