import { refuseUpgrade } from './http_reply.js';
import { PORT_FORWARD_WS_PROTOCOLS } from './negotiate.js';
import { forwardOne, type PortForwardHandler, type PortForwardOptions } from './portforward_session.js';
import { linkedAbort, type UpgradeRequest } from './session_options.js';
import { failureStatus } from './status.js';
import { acceptServerChannels, chooseWebSocketProtocol } from './websocket_session.js';

export async function serveWebSocketPortForward(
  upgrade: UpgradeRequest,
  handler: PortForwardHandler,
  options: PortForwardOptions,
): Promise<void> {
  const protocol = chooseWebSocketProtocol(upgrade, PORT_FORWARD_WS_PROTOCOLS);
  if (protocol === undefined) return;
  const parsed = options.ports?.length
    ? { ports: [...options.ports] }
    : portsFromQuery(upgrade.req.url ?? '/');
  if ('error' in parsed) {
    refuseUpgrade(upgrade.socket, failureStatus(400, 'BadRequest', parsed.error));
    return;
  }
  const { ports } = parsed;
  const accepted = await acceptServerChannels(upgrade, protocol, false, options);
  if (!accepted) return;
  const { channels } = accepted;
  const data = ports.map((_, i) => channels.stream(2 * i));
  channels.start(accepted.early);
  await Promise.all(
    ports.map(async (port, i) => {
      const prefix = Buffer.alloc(2);
      prefix.writeUInt16LE(port);
      await Promise.all([channels.send(2 * i, prefix), channels.send(2 * i + 1, prefix)]);
      const abort = linkedAbort(channels.signal);
      const result = await forwardOne(handler, port, data[i]!, abort.signal, options);
      abort.abort();
      if (!result.ok) await channels.send(2 * i + 1, Buffer.from(result.message));
    }),
  );
  channels.close(1000);
  await channels.closed;
}

/** The `port` query parameters (repeatable, comma-separated), as the kubelet reads them. */
export function portsFromQuery(url: string): { ports: number[] } | { error: string } {
  const values = new URL(url, 'http://x').searchParams.getAll('port');
  if (values.length === 0) return { error: 'query parameter "port" is required' };
  const ports: number[] = [];
  for (const value of values) {
    if (value === '') return { error: 'query parameter "port" cannot be empty' };
    for (const p of value.split(',')) {
      if (!/^\d{1,5}$/.test(p) || Number(p) > 65535) return { error: `unable to parse "${p}" as a port` };
      if (Number(p) < 1) return { error: `port "${p}" must be > 0` };
      ports.push(Number(p));
    }
  }
  return { ports };
}
