// Serving one exec or attach session (remotecommand) on an upgraded connection, over SPDY or a
// WebSocket: the streams become a StreamIO, the runtime's outcome becomes the Status the client
// reads from the error stream.
import type { ExecResult, StreamIO } from '../runtime.js';
import { refuseUpgrade } from './http_reply.js';
import { upgradeKind } from './negotiate.js';
import { acceptSpdyRemoteCommand } from './remotecommand_spdy.js';
import { acceptWebSocketRemoteCommand } from './remotecommand_ws.js';
import type { SessionOptions, UpgradeRequest } from './session_options.js';
import {
  failureStatus,
  type KubeStatus,
  nonZeroExitStatus,
  statusForError,
  successStatus,
} from './status.js';

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

/** The Status for the handler's outcome. */
async function outcome(
  handler: RemoteCommandHandler,
  session: CommandSession,
  options: RemoteCommandOptions,
) {
  try {
    const result = await handler(session.io, session.signal);
    const code = result?.exitCode ?? 0;
    if (!Number.isInteger(code) || code < 0 || code > 255) {
      return failureStatus(
        500,
        'InternalError',
        `${options.failurePrefix}: runtime reported exit code ${code}`,
      );
    }
    return code === 0 ? successStatus() : nonZeroExitStatus(code);
  } catch (err) {
    options.onError?.(err instanceof Error ? err : new Error(String(err)));
    return statusForError(err, options.failurePrefix);
  }
}

/**
 * Serves an exec/attach upgrade to the end. Requests that are not SPDY/3.1 or WebSocket upgrades,
 * or offer no protocol this side speaks, are refused with a Status naming what is supported.
 * Never rejects.
 */
export async function serveRemoteCommand(
  upgrade: UpgradeRequest,
  streams: RemoteCommandStreams,
  handler: RemoteCommandHandler,
  options: RemoteCommandOptions,
): Promise<void> {
  const kind = upgradeKind(upgrade.req);
  // A terminal has one output: stderr is folded into stdout, as the kubelet does.
  const wanted = { ...streams, stderr: streams.stderr && !streams.tty };
  let session: CommandSession | undefined;
  try {
    if (kind === 'spdy') session = await acceptSpdyRemoteCommand(upgrade, wanted, options);
    else if (kind === 'websocket') session = await acceptWebSocketRemoteCommand(upgrade, wanted, options);
    else refuseUpgrade(upgrade.socket, upgradeRequired());
  } catch (err) {
    options.onError?.(err instanceof Error ? err : new Error(String(err)));
    upgrade.socket.destroy();
    return;
  }
  if (!session) return;
  await session.finish(await outcome(handler, session, options));
}

/** The Status for a request that is not an upgrade this server speaks. */
export function upgradeRequired(): KubeStatus {
  return failureStatus(
    400,
    'BadRequest',
    'unable to upgrade: streaming requires "Connection: Upgrade" with "Upgrade: SPDY/3.1" ' +
      '(and X-Stream-Protocol-Version) or "Upgrade: websocket" (and Sec-WebSocket-Protocol)',
  );
}
