// The transport-independent vocabulary of one exec or attach session, shared by the SPDY and
// WebSocket acceptors and the dispatcher in remotecommand.ts.
import type { ExecResult, StreamIO } from '../runtime/streaming_runtime.js';
import type { SessionOptions } from './session_options.js';
import type { KubeStatus } from './status.js';

/** Which streams the client asked for (the CRI ExecRequest/AttachRequest flags). */
export interface RemoteCommandStreams {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

/** Runs the command (or attaches); resolves with the exit code for exec, nothing for attach. */
export type RemoteCommandHandler = (io: StreamIO, signal: AbortSignal) => Promise<ExecResult | undefined>;

export interface RemoteCommandOptions extends SessionOptions {
  /** Prefix of the Status message when the handler fails, e.g. "error executing command in container". */
  failurePrefix: string;
}

/** An accepted session, protocol-independent. */
export interface CommandSession {
  io: StreamIO;
  /** Aborts when the client goes away or the session idles out. */
  signal: AbortSignal;
  /** Ends the output streams, sends `status` as the protocol version wants it, closes. */
  finish(status: KubeStatus): Promise<void>;
}

/** The error stream's content for a negotiated protocol: JSON from v4 on, a bare message before. */
export function encodeStatus(status: KubeStatus, protocol: string): Buffer {
  if (/^v[45]\./.test(protocol)) return Buffer.from(JSON.stringify(status));
  return Buffer.from(status.status === 'Success' ? '' : (status.message ?? 'unknown error'));
}
