// The streaming server behind the URLs that CRI Exec, Attach and PortForward return (the
// kubelet's pkg/kubelet/cri/streaming): a cache of pending requests by single-use token, and the
// HTTP endpoints /exec/{token}, /attach/{token} and /portforward/{token} that run them.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import {
  AttachRequest,
  type AttachResponse,
  type DeepPartial,
  ExecRequest,
  type ExecResponse,
  InvalidArgumentError,
  PortForwardRequest,
  type PortForwardResponse,
} from '@kh/cri-api';
import { refuseUpgrade, replyStatus } from './protocol/http_reply.js';
import { upgradeKind } from './protocol/negotiate.js';
import { servePortForward } from './protocol/portforward.js';
import { serveRemoteCommand } from './protocol/remotecommand.js';
import type { SessionOptions, UpgradeRequest } from './protocol/session_options.js';
import { failureStatus, upgradeRequired } from './protocol/status.js';
import { DEFAULT_MAX_IN_FLIGHT, DEFAULT_REQUEST_TTL_MS, RequestCache } from './request_cache.js';
import type { StreamingRuntime } from './runtime/streaming_runtime.js';

export const DEFAULT_STREAM_IDLE_TIMEOUT_MS = 4 * 60 * 60 * 1000;
export const DEFAULT_STREAM_CREATION_TIMEOUT_MS = 30_000;

export interface StreamingServerOptions {
  runtime: StreamingRuntime;
  /** host:port to listen on (start() only); default 127.0.0.1:0, a free loopback port. */
  address?: string;
  /** Close a session after this long without traffic; default 4 h, as the kubelet. */
  streamIdleTimeoutMs?: number;
  /** How long a SPDY client has to open its streams; default 30 s, as the kubelet. */
  streamCreationTimeoutMs?: number;
  /** How long a returned URL stays valid; default 1 min, as the kubelet. */
  requestTtlMs?: number;
  /** Pending URLs at most; default 1000, as the kubelet. */
  maxInFlight?: number;
  /** Told about refused sessions, protocol errors and runtime failures; for logs. */
  onError?: (err: Error) => void;
}

type Pending =
  | { kind: 'exec'; req: ExecRequest }
  | { kind: 'attach'; req: AttachRequest }
  | { kind: 'portforward'; req: PortForwardRequest };

const ROUTE = /^(exec|attach|portforward)\/([^/]+)$/;

export class StreamingServer {
  private readonly cache: RequestCache<Pending>;
  private readonly closing = new AbortController();
  private readonly sessions = new Set<Promise<void>>();
  private readonly basePath: string;
  private httpServer: Server | undefined;

  private constructor(
    private readonly options: StreamingServerOptions,
    private base: URL,
  ) {
    this.cache = new RequestCache(
      options.requestTtlMs ?? DEFAULT_REQUEST_TTL_MS,
      options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT,
    );
    this.basePath = base.pathname.endsWith('/') ? base.pathname : `${base.pathname}/`;
  }

  /** A server with its own HTTP listener on `options.address`. */
  static async start(options: StreamingServerOptions): Promise<StreamingServer> {
    const { host, port } = parseAddress(options.address ?? '127.0.0.1:0');
    const http = createServer();
    await new Promise<void>((resolve, reject) => {
      http.once('error', reject);
      http.listen(port, host, () => {
        http.off('error', reject);
        resolve();
      });
    });
    const bound = http.address() as AddressInfo;
    const hostPart = bound.family === 'IPv6' ? `[${bound.address}]` : bound.address;
    const server = new StreamingServer(options, new URL(`http://${hostPart}:${bound.port}/`));
    server.httpServer = http;
    http.on('request', (req, res) => {
      if (!server.handleRequest(req, res))
        replyStatus(res, failureStatus(404, 'NotFound', `no streaming endpoint at ${req.url}`));
    });
    http.on('upgrade', (req, socket, head) => {
      if (!server.handleUpgrade(req, socket, head)) {
        refuseUpgrade(socket, failureStatus(404, 'NotFound', `no streaming endpoint at ${req.url}`));
      }
    });
    http.on('clientError', (_err, socket) => socket.destroy());
    return server;
  }

  /**
   * A server without a listener, for another HTTP server to mount: pass its 'upgrade' events to
   * handleUpgrade() and its requests to handleRequest(). `baseUrl` is where clients reach it
   * (e.g. http://10.0.0.5:10250/cri/); returned URLs are built on it.
   */
  static mount(options: StreamingServerOptions & { baseUrl: string }): StreamingServer {
    return new StreamingServer(options, new URL(options.baseUrl));
  }

  /** The base of the URLs handed out. */
  get baseUrl(): string {
    return this.base.href;
  }

  /** Validates an Exec request and returns its single-use URL. Throws CriError subclasses. */
  getExec(request: DeepPartial<ExecRequest>): ExecResponse {
    const req = ExecRequest.fromPartial(request);
    if (!req.containerId) throw new InvalidArgumentError('missing required container_id');
    if (req.cmd.length === 0 || req.cmd[0] === '') throw new InvalidArgumentError('missing required cmd');
    validateStreams(req);
    return { url: this.url('exec', { kind: 'exec', req }) };
  }

  getAttach(request: DeepPartial<AttachRequest>): AttachResponse {
    const req = AttachRequest.fromPartial(request);
    if (!req.containerId) throw new InvalidArgumentError('missing required container_id');
    validateStreams(req);
    return { url: this.url('attach', { kind: 'attach', req }) };
  }

  getPortForward(request: DeepPartial<PortForwardRequest>): PortForwardResponse {
    const req = PortForwardRequest.fromPartial(request);
    if (!req.podSandboxId) throw new InvalidArgumentError('missing required pod_sandbox_id');
    const bad = req.port.find((p) => !Number.isInteger(p) || p < 1 || p > 65535);
    if (bad !== undefined) throw new InvalidArgumentError(`port ${bad} is not between 1 and 65535`);
    return { url: this.url('portforward', { kind: 'portforward', req }) };
  }

  /** Serves an 'upgrade' event; false when the path is not one of this server's. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const route = this.route(req);
    if (!route) return false;
    socket.on('error', (err) => this.options.onError?.(err));
    const problem = this.precheck(req, route);
    if (problem) {
      refuseUpgrade(socket, problem);
      return true;
    }
    const pending = this.cache.consume(route.token);
    if (!pending || pending.kind !== route.kind) {
      refuseUpgrade(socket, this.unknownToken(route));
      return true;
    }
    const done = this.serve({ req, socket, head }, pending).finally(() => this.sessions.delete(done));
    this.sessions.add(done);
    return true;
  }

  /** Serves a plain request (not an upgrade): always a clear refusal; false when the path is not ours. */
  handleRequest(req: IncomingMessage, res: ServerResponse): boolean {
    const route = this.route(req);
    if (!route) return false;
    replyStatus(res, this.precheck(req, route) ?? upgradeRequired());
    return true;
  }

  /** Stops listening, ends every session (runtimes see their signal abort) and waits for them. */
  async close(): Promise<void> {
    this.closing.abort(new Error('streaming server closing'));
    const http = this.httpServer;
    if (http) {
      const closed = new Promise<void>((resolve) => http.close(() => resolve()));
      http.closeAllConnections();
      await closed;
    }
    await Promise.all(this.sessions);
  }

  private url(kind: Pending['kind'], pending: Pending): string {
    return new URL(`${kind}/${this.cache.insert(pending)}`, this.base).href;
  }

  private route(req: IncomingMessage): { kind: Pending['kind']; token: string } | undefined {
    const path = (req.url ?? '').split('?')[0]!;
    if (!path.startsWith(this.basePath)) return undefined;
    const m = ROUTE.exec(path.slice(this.basePath.length));
    return m ? { kind: m[1] as Pending['kind'], token: decodeURIComponent(m[2]!) } : undefined;
  }

  private precheck(req: IncomingMessage, route: { kind: string; token: string }) {
    if (req.method !== 'GET' && req.method !== 'POST') {
      return failureStatus(
        405,
        'MethodNotAllowed',
        `${req.method} is not allowed on /${route.kind}; use GET or POST`,
      );
    }
    if (this.closing.signal.aborted)
      return failureStatus(503, 'ServiceUnavailable', 'streaming server is closing');
    if (!upgradeKind(req)) return upgradeRequired();
    return undefined;
  }

  private unknownToken(route: { kind: string; token: string }) {
    const ttl = (this.options.requestTtlMs ?? DEFAULT_REQUEST_TTL_MS) / 1000;
    return failureStatus(
      404,
      'NotFound',
      `unknown, used or expired ${route.kind} token "${route.token}": streaming URLs work once, within ${ttl} s of the CRI call that returned them`,
    );
  }

  private serve(upgrade: UpgradeRequest, pending: Pending): Promise<void> {
    const { runtime } = this.options;
    const session: SessionOptions = {
      idleTimeoutMs: this.options.streamIdleTimeoutMs ?? DEFAULT_STREAM_IDLE_TIMEOUT_MS,
      creationTimeoutMs: this.options.streamCreationTimeoutMs ?? DEFAULT_STREAM_CREATION_TIMEOUT_MS,
      signal: this.closing.signal,
      onError: this.options.onError,
    };
    switch (pending.kind) {
      case 'exec': {
        const { req } = pending;
        return serveRemoteCommand(
          upgrade,
          req,
          (io, signal) => runtime.exec(req.containerId, req.cmd, io, signal),
          {
            ...session,
            failurePrefix: 'error executing command in container',
          },
        );
      }
      case 'attach': {
        const { req } = pending;
        return serveRemoteCommand(
          upgrade,
          req,
          async (io, signal) => {
            await runtime.attach(req.containerId, io, signal);
            return undefined;
          },
          { ...session, failurePrefix: 'error attaching to container' },
        );
      }
      case 'portforward': {
        const { req } = pending;
        return servePortForward(
          upgrade,
          (port, stream, signal) => runtime.portForward(req.podSandboxId, port, stream, signal),
          {
            ...session,
            target: `pod sandbox ${req.podSandboxId}`,
            ports: req.port,
          },
        );
      }
    }
  }
}

/** The kubelet's rules for the stream flags of Exec and Attach. */
function validateStreams(req: { tty: boolean; stdin: boolean; stdout: boolean; stderr: boolean }): void {
  if (req.tty && req.stderr) {
    throw new InvalidArgumentError(
      'tty and stderr cannot both be true (a terminal has a single output stream)',
    );
  }
  if (!req.stdin && !req.stdout && !req.stderr) {
    throw new InvalidArgumentError('one of stdin, stdout, or stderr must be set');
  }
}

function parseAddress(address: string): { host: string; port: number } {
  const i = address.lastIndexOf(':');
  const host = address.slice(0, i).replace(/^\[(.*)\]$/, '$1');
  const port = Number(address.slice(i + 1));
  if (i <= 0 || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`bad streaming server address "${address}": expected host:port, e.g. 127.0.0.1:0`);
  }
  return { host, port };
}
