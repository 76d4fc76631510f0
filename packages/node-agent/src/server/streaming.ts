// The kubelet server's container streaming endpoints, as `kubectl exec`, `attach`, `port-forward`
// and the API server's pods/exec|attach|portforward proxies reach them:
//
//   GET|POST /exec/{namespace}/{pod}[/{uid}]/{container}?command=…&stdin=1&stdout=1&stderr=1&tty=1
//   GET|POST /attach/{namespace}/{pod}[/{uid}]/{container}?stdin=1&stdout=1&…
//   GET|POST /portForward/{namespace}/{pod}[/{uid}][?ports=…]
//   POST     /run/{namespace}/{pod}[/{uid}]/{container}?cmd=…   (ExecSync; answers the output)
//
// The pod is looked up in the pod manager, the container among the runtime's running ones; CRI
// Exec/Attach/PortForward then hand out a URL of the runtime's streaming server, and the client's
// HTTP upgrade is proxied there (the kubelet's behaviour without redirectContainerStreaming): the
// runtime answers the SPDY or WebSocket handshake itself, after its 101 the bytes are piped as they
// are, so every protocol version the runtime speaks reaches the client unchanged.

import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { spliceConnections } from '@kh/apimachinery';
import { ContainerState, type CriClient, CriError, GrpcStatus } from '@kh/cri-api';
import { ContainerNameLabel, PodUidLabel, type RunningPod } from '@kh/runtime-manager';
import type { V1Pod } from '@kubernetes/client-node';
import { type Logger, silentLogger } from '../util/log.js';
import { RuntimeStreamSocket } from './runtime_socket.js';

/** The client's connection once Node handed it over for an upgrade. */
export interface UpgradeSocket {
  socket: Duplex;
  head: Buffer;
}

export interface ContainerStreamingOptions {
  /** The pod manager's pods. */
  getPods(): V1Pod[];
  /** Running pods and containers as the runtime reports them (the kubelet's GetPods(false)). */
  runtime: { getPods(all: boolean): Promise<RunningPod[]> };
  cri: Pick<CriClient, 'exec' | 'attach' | 'portForward' | 'execSync' | 'listContainers'>;
  /**
   * Base for a runtime that answers a bare path instead of an absolute URL (its streaming server's
   * address, e.g. "127.0.0.1:10010" or "http://127.0.0.1:10010"). Undefined: such URLs are an error.
   */
  runtimeStreamingAddress?: string;
  log?: Logger;
}

/** A refusal answered before anything was proxied, as `code` with a plain-text message. */
export class StreamingRequestError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

type Endpoint = 'exec' | 'attach' | 'portForward' | 'run';

interface Target {
  endpoint: Endpoint;
  namespace: string;
  pod: string;
  uid?: string;
  container?: string;
}

/** The streaming route of a path, or undefined when it is not one of the four endpoints. */
export function parseStreamingPath(path: string): Target | undefined {
  const [, first, ...rest] = path.split('/');
  const parts = rest.map(decodeURIComponent);
  if (first === 'portForward') {
    if (parts.length !== 2 && parts.length !== 3) return undefined;
    const [namespace, pod, uid] = parts as [string, string, string?];
    return { endpoint: first, namespace, pod, ...(uid ? { uid } : {}) };
  }
  if (first !== 'exec' && first !== 'attach' && first !== 'run') return undefined;
  if (parts.length !== 3 && parts.length !== 4) return undefined;
  const [namespace, pod] = parts as [string, string];
  const uid = parts.length === 4 ? parts[2] : undefined;
  return { endpoint: first, namespace, pod, container: parts.at(-1) as string, ...(uid ? { uid } : {}) };
}

/** The kubelet's reading of a boolean stream parameter: the API server sends "1", clients "true". */
function flag(q: URLSearchParams, name: string): boolean {
  const v = q.get(name);
  return v === '1' || v === 'true';
}

/**
 * stdin/stdout/stderr/tty of an exec or attach, checked as the kubelet checks them. The kubelet
 * API names the streams `input`, `output` and `error` (core/v1's Exec*Param); the API server
 * translates kubectl's `stdin`/`stdout`/`stderr` into them when it proxies.
 */
export function streamOptions(q: URLSearchParams) {
  const tty = flag(q, 'tty');
  const o = { stdin: flag(q, 'input'), stdout: flag(q, 'output'), stderr: flag(q, 'error') && !tty, tty };
  if (!o.stdin && !o.stdout && !o.stderr)
    throw new StreamingRequestError(400, 'you must specify at least 1 of stdin, stdout, stderr');
  return o;
}

/** Ports of a port-forward: the `ports` parameter, repeated or comma-separated. */
function forwardedPorts(q: URLSearchParams): number[] {
  const ports = q.getAll('ports').flatMap((p) => p.split(','));
  return ports
    .filter((p) => p.trim() !== '')
    .map((p) => {
      const n = Number(p.trim());
      if (!Number.isInteger(n) || n < 1 || n > 65535)
        throw new StreamingRequestError(400, `invalid port ${JSON.stringify(p.trim())}`);
      return n;
    });
}

export class ContainerStreaming {
  constructor(private readonly opts: ContainerStreamingOptions) {}

  /** Serves one request of the four endpoints; `upgrade` is set when the client asked for one. */
  async handle(req: IncomingMessage, res: ServerResponse, upgrade?: UpgradeSocket): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    const target = parseStreamingPath(url.pathname.replace(/\/+$/, ''));
    try {
      if (!target) throw new StreamingRequestError(404, '404 page not found\n');
      if (target.endpoint === 'run') {
        if (req.method !== 'POST') throw new StreamingRequestError(405, 'Method Not Allowed\n');
        return await this.run(target, url.searchParams, res);
      }
      if (req.method !== 'GET' && req.method !== 'POST')
        throw new StreamingRequestError(405, 'Method Not Allowed\n');
      // A request that cannot be served is refused before the runtime is asked for anything.
      this.podOf(target);
      if (!upgrade) throw new StreamingRequestError(400, 'Upgrade request required');
      const streamUrl = await this.streamingUrl(target, url.searchParams);
      res.detachSocket(upgrade.socket as Parameters<ServerResponse['detachSocket']>[0]);
      proxyUpgrade(req, upgrade, streamUrl, url.search, this.opts.log ?? silentLogger);
    } catch (e) {
      const [code, message] = httpError(e);
      res.writeHead(code, { 'Content-Type': 'text/plain; charset=utf-8' }).end(message);
    }
  }

  /** CRI Exec/Attach/PortForward for the request; the URL the client's upgrade is proxied to. */
  private async streamingUrl(t: Target, q: URLSearchParams): Promise<URL> {
    const pod = this.podOf(t);
    const { cri } = this.opts;
    let answer: { url: string };
    if (t.endpoint === 'portForward') {
      const ports = forwardedPorts(q);
      const running = await this.runningPod(pod, t.uid);
      const sandbox = running?.sandboxes[0];
      if (!sandbox) throw new Error(`pod not found (${JSON.stringify(podFullName(pod))})`);
      answer = await cri.portForward({ podSandboxId: sandbox.id, port: ports });
    } else {
      const streams = streamOptions(q);
      const containerId = await this.containerId(pod, t);
      answer =
        t.endpoint === 'exec'
          ? await cri.exec({ containerId, cmd: q.getAll('command'), ...streams })
          : await cri.attach({ containerId, ...streams });
    }
    return this.resolve(answer.url);
  }

  /** POST /run: ExecSync without a timeout; the output is stdout then stderr. */
  private async run(t: Target, q: URLSearchParams, res: ServerResponse): Promise<void> {
    const cmd = (q.get('cmd') ?? '').split(/\s+/).filter((w) => w !== '');
    // The runtime would refuse an empty command as INVALID_ARGUMENT: say so as a client error.
    if (cmd.length === 0) throw new StreamingRequestError(400, 'you must specify at least 1 command');
    const containerId = await this.containerId(this.podOf(t), t);
    const r = await this.opts.cri.execSync({ containerId, cmd, timeout: 0n });
    const output = Buffer.concat([r.stdout, r.stderr]);
    if (r.exitCode !== 0)
      throw new Error(`command '${cmd.join(' ')}' exited with ${r.exitCode}: ${r.stderr.toString()}`);
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(output);
  }

  private podOf(t: Target): V1Pod {
    const pod = this.opts
      .getPods()
      .find((p) => p.metadata?.namespace === t.namespace && p.metadata?.name === t.pod);
    if (!pod) throw new StreamingRequestError(404, 'pod does not exist');
    return pod;
  }

  private async runningPod(pod: V1Pod, uid: string | undefined): Promise<RunningPod | undefined> {
    const want = uid || pod.metadata?.uid;
    const pods = await this.opts.runtime.getPods(false);
    return pods.find((p) =>
      want ? p.uid === want : p.name === pod.metadata?.name && p.namespace === pod.metadata?.namespace,
    );
  }

  /**
   * The runtime ID of the pod's running container of that name, else the kubelet's "container not
   * found". One ListContainers filtered by the labels the runtime manager puts on every container,
   * where the kubelet lists all sandboxes and containers (GetPods): an exec waits on it.
   */
  private async containerId(pod: V1Pod, t: Target): Promise<string> {
    const { containers } = await this.opts.cri.listContainers({
      filter: {
        state: { state: ContainerState.CONTAINER_RUNNING },
        labelSelector: { [PodUidLabel]: t.uid || pod.metadata?.uid || '', [ContainerNameLabel]: t.container },
      },
    });
    // Two running instances only in a restart race: the newer is the one the pod status names.
    const newest = containers.reduce<(typeof containers)[number] | undefined>(
      (a, c) => (a === undefined || c.createdAt > a.createdAt ? c : a),
      undefined,
    );
    if (!newest) throw new Error(`container not found (${JSON.stringify(t.container)})`);
    return newest.id;
  }

  /** An absolute URL as it is; a bare path against the runtime's streaming address. */
  private resolve(raw: string): URL {
    if (URL.canParse(raw)) return new URL(raw);
    const base = this.opts.runtimeStreamingAddress;
    if (!base)
      throw new Error(
        `the runtime returned the relative streaming URL ${JSON.stringify(raw)} and no --runtime-streaming-address is set`,
      );
    return new URL(raw, /^[a-z]+:\/\//i.test(base) ? base : `http://${base}`);
  }
}

function podFullName(pod: V1Pod): string {
  return `${pod.metadata?.name}_${pod.metadata?.namespace}`;
}

/** The status and text of a failure, mapped as the kubelet's streaming.WriteError maps them. */
function httpError(e: unknown): [number, string] {
  if (e instanceof StreamingRequestError) return [e.code, e.message];
  if (e instanceof CriError) {
    if (e.code === GrpcStatus.NOT_FOUND) return [404, e.details];
    if (e.code === GrpcStatus.RESOURCE_EXHAUSTED) return [429, e.details];
    return [500, e.details];
  }
  return [500, (e as Error).message];
}

/** Headers that are the client's business with the kubelet, not with the runtime. */
const NOT_FORWARDED = new Set(['host', 'authorization', 'content-length', 'transfer-encoding']);

/**
 * Replays the client's upgrade request against the runtime's URL (its path and token, the client's
 * query appended for the parameters the protocols read, e.g. WebSocket port-forward's `ports`).
 * On 101 the runtime's handshake answer goes back verbatim and the two connections are spliced;
 * any other answer is relayed and the client's connection closed.
 */
function proxyUpgrade(req: IncomingMessage, client: UpgradeSocket, target: URL, search: string, log: Logger) {
  const { socket, head } = client;
  const query = [target.search.slice(1), search.slice(1)].filter((s) => s !== '').join('&');
  const headers: string[] = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i] as string;
    if (!NOT_FORWARDED.has(name.toLowerCase())) headers.push(name, req.rawHeaders[i + 1] as string);
  }
  const hostname = target.hostname.replace(/^\[|\]$/g, '');
  const upstream = (target.protocol === 'https:' ? https : http).request({
    protocol: target.protocol,
    hostname,
    port: target.port,
    method: req.method,
    path: `${target.pathname}${query ? `?${query}` : ''}`,
    // The upgrade request itself has no body; a POST says so, or Node would make it chunked.
    headers: [...headers, 'Host', target.host, ...(req.method === 'GET' ? [] : ['Content-Length', '0'])],
    // The runtime's streaming server is local and serves a self-signed certificate if any.
    rejectUnauthorized: false,
    // A plain connection keeps the runtime's last frames when a write to it fails; see there.
    ...(target.protocol === 'https:'
      ? {}
      : { createConnection: () => new RuntimeStreamSocket().connect(Number(target.port) || 80, hostname) }),
  });
  const fail = (err: Error) => {
    log.error('Container streaming proxy failed', { url: target.pathname, err });
    socket.destroy();
  };
  socket.on('error', (err) => {
    upstream.destroy();
    log.info('Streaming client connection failed', { err: err.message });
  });
  upstream.on('upgrade', (res, runtimeSocket: Socket, runtimeHead: Buffer) => {
    // Small stream frames each way: without this Nagle holds them for a delayed ACK.
    runtimeSocket.setNoDelay(true);
    const lines = [`HTTP/1.1 ${res.statusCode} ${res.statusMessage}`];
    for (let i = 0; i < res.rawHeaders.length; i += 2)
      lines.push(`${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}`);
    socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    if (runtimeHead.length > 0) socket.write(runtimeHead);
    if (head.length > 0) runtimeSocket.write(head);
    spliceConnections(socket, runtimeSocket);
  });
  upstream.on('response', (res) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('error', fail);
    res.on('end', () => {
      const body = Buffer.concat(chunks);
      const type = res.headers['content-type'] ?? 'text/plain; charset=utf-8';
      socket.end(
        Buffer.concat([
          Buffer.from(
            `HTTP/1.1 ${res.statusCode} ${res.statusMessage}\r\nContent-Type: ${type}\r\n` +
              `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
          ),
          body,
        ]),
      );
    });
  });
  upstream.on('error', (err) => {
    if (socket.destroyed) return;
    const body = `error dialing the container runtime's streaming server: ${err.message}`;
    log.error('Container streaming proxy failed', { url: target.pathname, err });
    socket.end(
      `HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
  upstream.end();
}
