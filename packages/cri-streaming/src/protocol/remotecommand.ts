// Serving one exec or attach session (remotecommand) on an upgraded connection, over SPDY or a
// WebSocket: the streams become a StreamIO, the runtime's outcome becomes the Status the client
// reads from the error stream.
import { refuseUpgrade } from './http_reply.js';
import { upgradeKind } from './negotiate.js';
import type {
  CommandSession,
  RemoteCommandHandler,
  RemoteCommandOptions,
  RemoteCommandStreams,
} from './remotecommand_session.js';
import { acceptSpdyRemoteCommand } from './remotecommand_spdy.js';
import { acceptWebSocketRemoteCommand } from './remotecommand_ws.js';
import type { UpgradeRequest } from './session_options.js';
import {
  failureStatus,
  nonZeroExitStatus,
  statusForError,
  successStatus,
  upgradeRequired,
} from './status.js';

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
    // A handler that rejects because its session ended (the client went away, the session idled
    // out, the server is closing) did not fail: that is how sessions end, and the idle timeout
    // reports itself. Only failures while the client still listens are reported.
    if (!session.signal.aborted) options.onError?.(err instanceof Error ? err : new Error(String(err)));
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
