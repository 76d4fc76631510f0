// What every streaming protocol handler receives: the upgrade the HTTP server handed over, and
// the limits of the session it becomes.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';

/** The arguments of an HTTP server's 'upgrade' event. */
export interface UpgradeRequest {
  req: IncomingMessage;
  socket: Duplex;
  head: Buffer;
}

export interface SessionOptions {
  /** Close a session after this long without traffic (the kubelet: 4 h). */
  idleTimeoutMs: number;
  /** How long a SPDY client has to open its streams (the kubelet: 30 s). */
  creationTimeoutMs: number;
  /** Aborting it ends the session at once (the server is closing). */
  signal?: AbortSignal;
  /** Told about protocol errors and refused or timed-out sessions; for logs. */
  onError?: (err: Error) => void;
}

/** An AbortController that also aborts when any of `signals` does. */
export function linkedAbort(...signals: (AbortSignal | undefined)[]): AbortController {
  const abort = new AbortController();
  for (const s of signals) {
    if (!s) continue;
    if (s.aborted) abort.abort(s.reason);
    else s.addEventListener('abort', () => abort.abort(s.reason), { once: true, signal: abort.signal });
  }
  return abort;
}
