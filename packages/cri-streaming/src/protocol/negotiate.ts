// Which upgrade a request asks for, the subprotocols each side of the streaming API speaks, and
// the choice between them (the client's order of preference wins, as in apimachinery's
// httpstream.Handshake).
import type { IncomingMessage } from 'node:http';

/** remotecommand over SPDY: what crictl/critest v1.26, kubectl < 1.30 and the kubelet offer. */
export const REMOTE_COMMAND_SPDY_PROTOCOLS = [
  'v4.channel.k8s.io',
  'v3.channel.k8s.io',
  'v2.channel.k8s.io',
  'channel.k8s.io',
] as const;

/** remotecommand over WebSocket; v5 adds the stdin close signal (kubectl 1.30+). */
export const REMOTE_COMMAND_WS_PROTOCOLS = [
  'v5.channel.k8s.io',
  'v4.channel.k8s.io',
  'v4.base64.channel.k8s.io',
  'channel.k8s.io',
  'base64.channel.k8s.io',
] as const;

export const PORT_FORWARD_SPDY_PROTOCOLS = ['portforward.k8s.io'] as const;

/** Port-forward over WebSocket: the kubelet's channel pairs (data 2n, error 2n+1). */
export const PORT_FORWARD_WS_PROTOCOLS = ['v4.channel.k8s.io', 'v4.base64.channel.k8s.io'] as const;

export const PROTOCOL_HEADER = 'X-Stream-Protocol-Version';
export const ACCEPTED_PROTOCOLS_HEADER = 'X-Accepted-Stream-Protocol-Versions';

export type UpgradeKind = 'spdy' | 'websocket';

/** 'spdy' for `Upgrade: SPDY/3.1`, 'websocket' for `Upgrade: websocket`, else undefined. */
export function upgradeKind(req: IncomingMessage): UpgradeKind | undefined {
  const connection = String(req.headers.connection ?? '').toLowerCase();
  if (!connection.split(',').some((t) => t.trim() === 'upgrade')) return undefined;
  const upgrade = String(req.headers.upgrade ?? '').toLowerCase();
  if (upgrade.includes('spdy/3.1')) return 'spdy';
  if (upgrade.split(',').some((t) => t.trim() === 'websocket')) return 'websocket';
  return undefined;
}

/** Comma-separated header values, from one or several header lines. */
export function headerList(value: string | string[] | undefined): string[] {
  const lines = Array.isArray(value) ? value : value === undefined ? [] : [value];
  return lines
    .flatMap((l) => l.split(','))
    .map((p) => p.trim())
    .filter((p) => p !== '');
}

/** The first protocol the client offers that the server speaks, or undefined. */
export function negotiate(client: readonly string[], server: readonly string[]): string | undefined {
  return client.find((p) => server.includes(p));
}
