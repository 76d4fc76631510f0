// Serving a port-forward upgrade: SPDY (a data and an error stream per forwarded connection),
// or a WebSocket (channel pairs per port, or SPDY tunneled through it).
import { refuseUpgrade } from './http_reply.js';
import { upgradeKind } from './negotiate.js';
import type { PortForwardHandler, PortForwardOptions } from './portforward_session.js';
import { serveSpdyPortForward } from './portforward_spdy.js';
import { serveWebSocketPortForward } from './portforward_ws.js';
import type { UpgradeRequest } from './session_options.js';
import { upgradeRequired } from './status.js';

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
