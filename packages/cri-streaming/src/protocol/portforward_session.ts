// One forwarded connection, whatever the transport: the handler's shape and how its failure is
// worded, shared by the SPDY and WebSocket port-forward sessions.
import type { Duplex } from 'node:stream';
import type { SessionOptions } from './session_options.js';

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
    // Rejected because the connection ended (the client reset it or went away, the session idled
    // out or is closing): not a failure, as in remotecommand.ts.
    if (!signal.aborted) options.onError?.(e);
    // The pod's side reset or stopped reading: reset the stream rather than report (as the kubelet).
    const code = (e as NodeJS.ErrnoException).code;
    const reset = code === 'EPIPE' || code === 'ECONNRESET';
    const details = 'details' in e && typeof e.details === 'string' ? e.details : e.message;
    return { ok: false, reset, message: `error forwarding port ${port} to ${options.target}: ${details}` };
  }
}
