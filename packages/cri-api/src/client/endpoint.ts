import path from 'node:path';

/** A parsed CRI endpoint. `target` is the address grpc-js dials or binds. */
export type CriEndpoint =
  | { kind: 'unix'; path: string; target: string; uri: string }
  | { kind: 'tcp'; host: string; port: number; target: string; uri: string };

export class EndpointError extends Error {
  constructor(endpoint: string, reason: string) {
    super(
      `invalid CRI endpoint ${JSON.stringify(endpoint)}: ${reason} ` +
        '(expected unix:///path/to.sock, /path/to.sock or tcp://host:port)',
    );
    this.name = 'EndpointError';
  }
}

function unixEndpoint(socketPath: string): CriEndpoint {
  const abs = path.resolve(socketPath);
  return { kind: 'unix', path: abs, target: `unix://${abs}`, uri: `unix://${abs}` };
}

/**
 * Parses the endpoint forms the kubelet accepts for --container-runtime-endpoint:
 * `unix:///abs/path`, a plain path (treated as a unix socket, relative paths resolved against cwd),
 * and `tcp://host:port`. Port 0 is allowed only when `allowPortZero` (servers picking a free port).
 */
export function parseEndpoint(endpoint: string, opts: { allowPortZero?: boolean } = {}): CriEndpoint {
  const ep = endpoint.trim();
  if (ep === '') throw new EndpointError(endpoint, 'empty');
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\//.exec(ep)?.[1];
  if (scheme === undefined) {
    if (ep.includes('://')) throw new EndpointError(endpoint, 'malformed scheme');
    return unixEndpoint(ep);
  }
  const rest = ep.slice(scheme.length + 3);
  switch (scheme.toLowerCase()) {
    case 'unix':
      if (!rest.startsWith('/')) throw new EndpointError(endpoint, 'unix endpoints need an absolute path');
      return unixEndpoint(rest);
    case 'tcp': {
      const m = /^(\[[0-9a-fA-F:.]+\]|[^:/[\]]+):(\d{1,5})\/?$/.exec(rest);
      if (!m) throw new EndpointError(endpoint, 'tcp endpoints need host:port');
      const host = m[1]!;
      const port = Number(m[2]);
      if (port > 65535 || (port === 0 && !opts.allowPortZero)) {
        throw new EndpointError(endpoint, `port ${port} out of range`);
      }
      return { kind: 'tcp', host, port, target: `${host}:${port}`, uri: `tcp://${host}:${port}` };
    }
    default:
      throw new EndpointError(endpoint, `unsupported scheme "${scheme}"`);
  }
}
