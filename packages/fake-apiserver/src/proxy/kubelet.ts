// The apiserver's kubelet client: where a pod's or node's kubelet is, and proxying plain HTTP
// (logs, nodes/proxy), logs over WebSocket and upgraded connections (exec, attach, port-forward)
// to it, authenticated
// with the apiserver's kubelet client certificate as kube-apiserver does.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { request } from 'node:https';
import { BlockList, isIPv4 } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect } from 'node:tls';
import { spliceConnections } from '@kh/apimachinery';
import { serveBinaryStream, serveRemoteCommand, streamRemoteCommand, upgradeKind } from '@kh/cri-streaming';
import type { KObject } from '../meta/object.js';
import { ApiError, badRequest, notFound } from '../meta/status.js';
import type { Store } from '../storage/store.js';
import { isNodeIp } from '../validation/node.js';

/** kube-apiserver's --kubelet-client-certificate/-key and --kubelet-certificate-authority. */
export interface KubeletClientConfig {
  certPem?: string;
  keyPem?: string;
  /** Without it the kubelet's (self-signed) serving certificate is not verified. */
  caPem?: string;
  /**
   * Whether a node may report a loopback address (a kubelet on this very machine). kube-apiserver
   * refuses them for nodes/proxy; a server that listens on loopback only has its kubelets there.
   */
  allowLoopback?: boolean;
}

/** Addresses no kubelet has, which a node could name to make the apiserver dial something else. */
const NEVER_KUBELETS = new BlockList();
NEVER_KUBELETS.addSubnet('0.0.0.0', 8, 'ipv4');
NEVER_KUBELETS.addSubnet('169.254.0.0', 16, 'ipv4');
NEVER_KUBELETS.addSubnet('224.0.0.0', 4, 'ipv4');
NEVER_KUBELETS.addAddress('255.255.255.255', 'ipv4');
NEVER_KUBELETS.addAddress('::', 'ipv6');
NEVER_KUBELETS.addSubnet('fe80::', 10, 'ipv6');
NEVER_KUBELETS.addSubnet('ff00::', 8, 'ipv6');
const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** Why the apiserver will not dial this kubelet address, or undefined when it may. */
export function refusedKubeletAddress(ip: string, allowLoopback: boolean): string | undefined {
  if (!isNodeIp(ip)) return 'not an IP address';
  // An IPv4-mapped IPv6 address is judged as the IPv4 address it carries.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)?.[1];
  const addr = mapped ?? ip;
  const family = isIPv4(addr) ? 'ipv4' : 'ipv6';
  if (NEVER_KUBELETS.check(addr, family)) return 'address not allowed';
  if (!allowLoopback && LOOPBACK.check(addr, family)) return 'address not allowed';
  return undefined;
}

/** One request for a kubelet: which node, and the kubelet API path with its query. */
export interface KubeletRequest {
  node: string;
  path: string;
}

// The kubelet's limits for a streaming session: 4 h idle, 30 s for a client to open its streams.
const STREAM_IDLE_TIMEOUT_MS = 4 * 3600_000;
const STREAM_CREATION_TIMEOUT_MS = 30_000;

/** pods/<sub> that are upgraded connections. */
export const STREAMING = ['exec', 'attach', 'portforward'];

const LOG_PARAMS = [
  'follow',
  'previous',
  'timestamps',
  'tailLines',
  'limitBytes',
  'sinceSeconds',
  'sinceTime',
];

// Hop-by-hop headers (RFC 9110 7.6.1) stay on their hop; the caller's credentials are the
// apiserver's business, never the kubelet's.
const NOT_FORWARDED = new Set([
  'host',
  'authorization',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
]);

const truthy = (v: string | null) => v === 'true' || v === '1';

/**
 * The kubelet request for pods/{log,exec,attach,portforward}, validated as kube-apiserver does:
 * unknown pod 404, unknown or ambiguous container 400, pod without a node 400.
 */
export function podKubeletRequest(
  store: Store,
  ns: string,
  name: string,
  sub: string,
  q: URLSearchParams,
): KubeletRequest {
  const pod = store.get('pods', ns, name);
  if (pod === undefined) throw notFound({ group: '', resource: 'pods' }, name);
  const node: string | undefined = pod.spec?.nodeName;
  if (!node) throw badRequest(`pod ${name} does not have a host assigned`);
  const enc = encodeURIComponent;
  if (sub === 'portforward') {
    // kubectl's WebSocket port-forward names its ports in the query; SPDY opens them as streams.
    return { node, path: `/portForward/${enc(ns)}/${enc(name)}${q.size > 0 ? `?${q}` : ''}` };
  }
  const container = podContainer(pod, name, q.get('container'));
  const base = `${enc(ns)}/${enc(name)}/${enc(container)}`;
  const params = new URLSearchParams();
  if (sub === 'log') {
    for (const p of LOG_PARAMS) {
      const v = q.get(p);
      if (v !== null) params.set(p, v);
    }
    return { node, path: `/containerLogs/${base}${params.size > 0 ? `?${params}` : ''}` };
  }
  if (sub === 'exec') {
    const command = q.getAll('command');
    if (command.length === 0) throw badRequest('you must specify at least 1 command');
    for (const c of command) params.append('command', c);
  }
  // The kubelet's parameter names (core/v1 ExecStdinParam...), as kube-apiserver sends them.
  const flags: [string, string][] = [
    ['stdin', 'input'],
    ['stdout', 'output'],
    ['stderr', 'error'],
    ['tty', 'tty'],
  ];
  for (const [option, param] of flags) if (truthy(q.get(option))) params.set(param, '1');
  return { node, path: `/${sub}/${base}?${params}` };
}

/** The container a request names, or the pod's only one. */
function podContainer(pod: KObject, name: string, wanted: string | null): string {
  const containers: string[] = (pod.spec?.containers ?? []).map((c: KObject) => c.name);
  if (!wanted) {
    if (containers.length !== 1) {
      throw badRequest(
        `a container name must be specified for pod ${name}, choose one of: [${containers.join(' ')}]`,
      );
    }
    return containers[0]!;
  }
  const all = [
    ...containers,
    ...(pod.spec?.initContainers ?? []).map((c: KObject) => c.name),
    ...(pod.spec?.ephemeralContainers ?? []).map((c: KObject) => c.name),
  ];
  if (!all.includes(wanted)) throw badRequest(`container ${wanted} is not valid for pod ${name}`);
  return wanted;
}

/** nodes/<name>/proxy/<path>: the path after proxy/, on an existing node. */
export function nodeKubeletRequest(
  store: Store,
  name: string,
  rest: string[],
  query: string,
): KubeletRequest {
  if (store.get('nodes', '', name) === undefined) throw notFound({ group: '', resource: 'nodes' }, name);
  return { node: name, path: `/${rest.map(encodeURIComponent).join('/')}${query}` };
}

export class KubeletClient {
  /** The last TLS session per kubelet: resuming it spares each exec a full handshake. */
  private readonly sessions = new Map<string, Buffer>();

  constructor(
    private readonly store: Store,
    private readonly tls: KubeletClientConfig = {},
  ) {}

  /** host:port of a node's kubelet (InternalIP and status.daemonEndpoints.kubeletEndpoint.Port). */
  endpoint(nodeName: string): { host: string; port: number } {
    // A pod bound to a node that never registered has no kubelet to reach either.
    const node = this.store.get('nodes', '', nodeName);
    const port = node?.status?.daemonEndpoints?.kubeletEndpoint?.Port;
    const ip = (node?.status?.addresses ?? []).find((a: KObject) => a.type === 'InternalIP')?.address;
    if (!port || !ip) {
      throw new ApiError(
        503,
        'ServiceUnavailable',
        `node "${nodeName}" advertises no kubelet endpoint (status.daemonEndpoints.kubeletEndpoint.Port and an InternalIP address)`,
      );
    }
    // Validation keeps bad addresses out of the store; this also covers objects stored before it.
    const refused = refusedKubeletAddress(ip, this.tls.allowLoopback ?? false);
    if (refused !== undefined || !Number.isInteger(port) || port < 1 || port > 65535) {
      throw badRequest(
        `node "${nodeName}" reports a kubelet endpoint the apiserver will not dial (${JSON.stringify(ip)}, port ${JSON.stringify(port)}): ${refused ?? 'port out of range'}`,
      );
    }
    return { host: ip, port };
  }

  private tlsOptions() {
    return {
      cert: this.tls.certPem,
      key: this.tls.keyPem,
      ca: this.tls.caPem,
      rejectUnauthorized: this.tls.caPem !== undefined,
    };
  }

  /** Plain HTTP: the kubelet's answer is relayed as it comes (status, headers, streamed body). */
  proxy(req: IncomingMessage, res: ServerResponse, target: KubeletRequest): void {
    const { host, port } = this.endpoint(target.node);
    const url = `https://${hostPort(host, port)}${target.path}`;
    const upstream = request(
      url,
      { ...this.tlsOptions(), method: req.method, headers: forwardedHeaders(req), timeout: 30_000 },
      (up) => {
        const headers = { ...up.headers };
        delete headers.connection;
        delete headers['transfer-encoding'];
        delete headers['keep-alive'];
        res.writeHead(up.statusCode ?? 502, headers);
        up.pipe(res);
        up.on('error', () => res.destroy());
      },
    );
    // No answer within the timeout: the request fails as a dial failure would.
    upstream.on('timeout', () => upstream.destroy(new Error('timeout awaiting response headers')));
    upstream.on('error', (e) => {
      if (res.headersSent) res.destroy();
      else sendStatus(res, dialError(req.method, url, e));
    });
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  }

  /**
   * An upgrade. A WebSocket exec or attach is translated, as kube-apiserver's StreamTranslator
   * does: this side speaks the client's WebSocket protocol (v1-v5) and SPDY to the kubelet, since
   * kubelets and runtimes serve exec over SPDY (containerd refuses a v5 WebSocket with 403, which
   * would cost kubectl a fallback round trip and leave WebSocket-only clients without exec).
   * Anything else goes through as bytes.
   */
  proxyUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, target: KubeletRequest): void {
    if (target.path.startsWith('/containerLogs/')) {
      if (upgradeKind(req) === 'websocket') this.streamLog(req, socket, head, target);
      else writeSocketStatus(socket, badRequest('pod logs are served over WebSocket or plain HTTP'));
      return;
    }
    const sub = /^\/(exec|attach)\//.exec(target.path)?.[1];
    if (sub && upgradeKind(req) === 'websocket') this.translate(req, socket, head, target, sub);
    else this.pipeUpgrade(req, socket, head, target);
  }

  /**
   * A pod's log over WebSocket, as kube-apiserver's log streamer serves one (wsstream.Reader):
   * the kubelet's answer read over HTTPS, then sent as messages until it ends. A kubelet refusal
   * reaches the client as its HTTP answer, before any handshake.
   */
  private streamLog(req: IncomingMessage, socket: Duplex, head: Buffer, target: KubeletRequest): void {
    const { host, port } = this.endpoint(target.node);
    const url = `https://${hostPort(host, port)}${target.path}`;
    const upstream = request(url, { ...this.tlsOptions(), method: 'GET', timeout: 30_000 }, (up) => {
      upstream.setTimeout(0);
      const code = up.statusCode ?? 502;
      if (code === 200) {
        void serveBinaryStream({ req, socket, head }, up);
        return;
      }
      const chunks: Buffer[] = [];
      up.on('data', (c: Buffer) => chunks.push(c));
      up.on('end', () => {
        const body = Buffer.concat(chunks).toString();
        let message = body;
        try {
          message = JSON.parse(body).message ?? body;
        } catch {}
        writeSocketStatus(socket, new ApiError(code, code === 404 ? 'NotFound' : 'InternalError', message));
      });
    });
    upstream.on('timeout', () => upstream.destroy(new Error('timeout awaiting response headers')));
    upstream.on('error', (e) => writeSocketStatus(socket, dialError('GET', url, e)));
    socket.once('close', () => upstream.destroy());
    upstream.end();
  }

  private translate(req: IncomingMessage, socket: Duplex, head: Buffer, target: KubeletRequest, sub: string) {
    const { host, port } = this.endpoint(target.node);
    const url = `https://${hostPort(host, port)}${target.path}`;
    const q = new URL(url).searchParams;
    const streams = {
      stdin: q.has('input'),
      stdout: q.has('output'),
      stderr: q.has('error'),
      tty: q.has('tty'),
    };
    const dial = this.tlsOptions();
    void serveRemoteCommand(
      { req, socket, head },
      streams,
      async (io, signal) => {
        const { exitCode } = await streamRemoteCommand(url, {
          transport: 'spdy',
          dial,
          signal,
          tty: io.tty,
          ...(io.stdin ? { stdin: io.stdin } : {}),
          ...(io.stdout ? { stdout: io.stdout } : {}),
          ...(io.stderr ? { stderr: io.stderr } : {}),
          ...(io.resize ? { resize: io.resize } : {}),
        });
        return sub === 'exec' ? { exitCode } : undefined;
      },
      {
        idleTimeoutMs: STREAM_IDLE_TIMEOUT_MS,
        creationTimeoutMs: STREAM_CREATION_TIMEOUT_MS,
        failurePrefix: `error dialing backend ${url}`,
      },
    );
  }

  /**
   * An upgrade passed through: the request goes to the kubelet as it came (minus the caller's credentials), and
   * from then on the connections are spliced whatever the protocol (SPDY, WebSocket), so the
   * kubelet's 101 or its refusal reaches the client as is.
   */
  private pipeUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, target: KubeletRequest): void {
    const { host, port } = this.endpoint(target.node);
    const key = hostPort(host, port);
    const kubelet = connect({
      host,
      port,
      servername: isIp(host) ? undefined : host,
      ...this.tlsOptions(),
      session: this.sessions.get(key),
    });
    kubelet.on('session', (session: Buffer) => this.sessions.set(key, session));
    // Stream protocols trade small frames (SYN_STREAM, exit status); Nagle would hold each one
    // for the peer's delayed ACK, ~40 ms per exchange.
    kubelet.setNoDelay(true);
    // A client gone while the kubelet is dialled takes the dial with it.
    const abandon = () => kubelet.destroy();
    socket.once('close', abandon);
    let connected = false;
    kubelet.once('secureConnect', () => {
      connected = true;
      socket.off('close', abandon);
      const lines = [`${req.method} ${target.path} HTTP/1.1`, `Host: ${hostPort(host, port)}`];
      for (let i = 0; i < req.rawHeaders.length; i += 2) {
        const name = req.rawHeaders[i]!;
        if (!NOT_FORWARDED.has(name.toLowerCase())) lines.push(`${name}: ${req.rawHeaders[i + 1]}`);
      }
      kubelet.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (head.length > 0) kubelet.write(head);
      spliceConnections(socket, kubelet);
    });
    // After the connection, failures are the splice's.
    kubelet.once('error', (e) => {
      if (connected) return;
      writeSocketStatus(socket, dialError(req.method, `https://${hostPort(host, port)}${target.path}`, e));
    });
  }
}

function forwardedHeaders(req: IncomingMessage): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (v !== undefined && !NOT_FORWARDED.has(k) && k !== 'connection' && k !== 'upgrade') out[k] = v;
  }
  return out;
}

const isIp = (h: string) => /^[\d.]+$/.test(h) || h.includes(':');
const hostPort = (host: string, port: number) => `${host.includes(':') ? `[${host}]` : host}:${port}`;

/** kube-apiserver words a failed kubelet dial as "error dialing backend". */
const dialError = (method: string | undefined, url: string, e: Error) =>
  new ApiError(500, 'InternalError', `error dialing backend: ${method ?? 'GET'} "${url}": ${e.message}`);

function sendStatus(res: ServerResponse, err: ApiError): void {
  const body = JSON.stringify(err.toStatus());
  res.writeHead(err.code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

/** An HTTP answer on a raw upgrade socket (no ServerResponse there), then the socket closes. */
export function writeSocketStatus(socket: Duplex, err: ApiError): void {
  if (socket.destroyed) return;
  const body = JSON.stringify(err.toStatus());
  socket.end(
    `HTTP/1.1 ${err.code} ${err.reason}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
