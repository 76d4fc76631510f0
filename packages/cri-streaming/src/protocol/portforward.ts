// Serving a port-forward upgrade: SPDY (a data and an error stream per forwarded connection),
// or a WebSocket (channel pairs per port, or SPDY tunneled through it).
import type { Duplex } from 'node:stream';
import { refuseUpgrade } from './http_reply.js';
import { upgradeKind } from './negotiate.js';
import { serveSpdyPortForward } from './portforward_spdy.js';
import { serveWebSocketPortForward } from './portforward_ws.js';
import { upgradeRequired } from './remotecommand.js';
import type { SessionOptions, UpgradeRequest } from './session_options.js';

/** Connects `stream` to `port` in the pod; resolves when both directions are done. */
export type PortForwardHandler = (port: number, stream: Duplex, signal: AbortSignal) => Promise<void>;

export interface PortForwardOptions extends SessionOptions {
  /** What is forwarded to, for error messages: "pod <id>". */
  target: string;
  /**
   * The ports of a WebSocket session (the CRI request's `port` list). When empty, the request's
   * `port` query parameters are used, as the kubelet's /portForward endpoint does.
   */
  ports?: readonly number[];
}

/** Serves a port-forward upgrade until the client disconnects. Never rejects. */
export async function servePortForward(
  upgrade: UpgradeRequest,
  handler: PortForwardHandler,
  options: PortForwardOptions,
): Promise<void> {
  try {
    const kind = upgradeKind(upgrade.req);
    if (kind === 'spdy') await serveSpdyPortForward(upgrade, handler, options);
    else if (kind === 'websocket') await serveWebSocketPortForward(upgrade, handler, options);
    else refuseUpgrade(upgrade.socket, upgradeRequired());
  } catch (err) {
    options.onError?.(err instanceof Error ? err : new Error(String(err)));
    upgrade.socket.destroy();
  }
}

/** Runs the handler for one forwarded connection and words its failure like the kubelet. */
export async function forwardOne(
  handler: PortForwardHandler,
  port: number,
  stream: Duplex,
  signal: AbortSignal,
  options: PortForwardOptions,
): Promise<{ ok: true } | { ok: false; reset: boolean; message: string }> {
  try {
    await handler(port, stream, signal);
    return { ok: true };
  } catch (err) {
    const e = err instanceof Error ? err : new Error(String(err));
    options.onError?.(e);
    // The pod's side reset or stopped reading: reset the stream rather than report (as the kubelet).
    const code = (e as NodeJS.ErrnoException).code;
    const reset = code === 'EPIPE' || code === 'ECONNRESET';
    const details = 'details' in e && typeof e.details === 'string' ? e.details : e.message;
    return { ok: false, reset, message: `error forwarding port ${port} to ${options.target}: ${details}` };
  }
}
