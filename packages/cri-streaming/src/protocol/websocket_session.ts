// What both WebSocket sessions (remotecommand and port-forward) do first: pick the subprotocol,
// accept the upgrade, and wrap the socket in server-side channels that end with the session.
import { ChannelSocket } from '../websocket/channels.js';
import { acceptWebSocket } from '../websocket/upgrade.js';
import { refuseUpgrade } from './http_reply.js';
import { headerList, negotiate } from './negotiate.js';
import type { SessionOptions, UpgradeRequest } from './session_options.js';
import { failureStatus } from './status.js';

/**
 * Picks the subprotocol: the client's first one this side speaks; none offered means the original
 * binary channel protocol, as with the kubelet. Refuses with 403 when nothing matches.
 */
export function chooseWebSocketProtocol(
  upgrade: UpgradeRequest,
  supported: readonly string[],
): string | undefined {
  const offered = headerList(upgrade.req.headers['sec-websocket-protocol']);
  if (offered.length === 0) return '';
  const protocol = negotiate(offered, supported);
  if (protocol === undefined) {
    refuseUpgrade(
      upgrade.socket,
      failureStatus(
        403,
        'Forbidden',
        `unable to upgrade: requested WebSocket subprotocols [${offered.join(' ')}] are not supported; supported: [${supported.join(' ')}]`,
      ),
    );
  }
  return protocol;
}

/**
 * Accepts the upgrade as `protocol` and returns its channels, not yet started (the caller opens its
 * channels first, then starts them with `early`). Aborting `options.signal` terminates them.
 */
export async function acceptServerChannels(
  upgrade: UpgradeRequest,
  protocol: string,
  closeSignal: boolean,
  options: SessionOptions,
) {
  const accepted = await acceptWebSocket(upgrade.req, upgrade.socket, upgrade.head, protocol);
  if (!accepted) return undefined;
  const channels = new ChannelSocket(accepted.ws, {
    base64: protocol.includes('base64'),
    closeSignal,
    role: 'server',
    idleTimeoutMs: options.idleTimeoutMs,
    onError: options.onError,
  });
  options.signal?.addEventListener('abort', () => channels.terminate(), {
    once: true,
    signal: channels.signal,
  });
  return { channels, early: accepted.early };
}
