// The kubelet API server (port 10250, TLS). Every request is authenticated (a client certificate
// signed by the client CA, else a bearer token via the configured Authenticator, anonymous only
// when enabled) and authorized as nodes/<subresource> before it reaches a handler. Pod endpoints
// are served by providers the pod layer plugs in; HTTP upgrades (exec, attach, port-forward) take
// the same path, with the connection handed to the streaming handler.

import { type IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import type { V1Pod } from '@kubernetes/client-node';
import type { KubeletMetrics } from '../metrics/metrics.js';
import type { PodStartupList, PodStartupRecord } from '../pods/startup_tracker.js';
import { formatResourceMetrics, RESOURCE_METRICS_CONTENT_TYPE } from '../stats/resource_metrics.js';
import type { Summary } from '../stats/summary.js';
import { type Logger, silentLogger } from '../util/log.js';
import {
  ANONYMOUS,
  type Authenticator,
  type Authorizer,
  bearerToken,
  requestAttributes,
  type UserInfo,
  userFromClientCertificate,
} from './auth.js';
import type { ServingCert } from './certs.js';
import type { ContainerCheckpoint } from './checkpoint.js';
import type { ContainerLogs } from './container_logs.js';
import type { HealthChecker } from './healthz.js';
import { closeServer, listen } from './listen.js';
import type { ContainerStreaming, UpgradeSocket } from './streaming.js';

/** Pods bound to this node, as the pod manager knows them (GET /pods). */
export interface PodsProvider {
  getPods(): V1Pod[];
}

/** Pods as found in the runtime, API objects rebuilt from CRI (GET /runningpods/). */
export interface RunningPodsProvider {
  getRunningPods(): Promise<V1Pod[]>;
}

/**
 * Harness extension, not a kubelet API: each pod's start-up steps with their times
 * (GET /debug/startup[?namespace=]), which the test harness turns into a latency breakdown.
 */
export interface StartupProvider {
  list(namespace?: string): PodStartupRecord[];
}

/** The stats/summary API (GET /stats/summary) and the resource metrics made from it (GET /metrics/resource). */
export interface StatsProvider {
  summary(): Promise<Summary>;
}

export interface KubeletServerOptions {
  nodeName: string;
  tls: ServingCert;
  /** PEM CA bundle (authentication.x509.clientCAFile); client certificates it signed authenticate. */
  clientCA?: string;
  /** Undefined: no token can authenticate (webhook authentication disabled). */
  authenticator?: Authenticator;
  anonymousEnabled: boolean;
  authorizer: Authorizer;
  health: HealthChecker;
  metrics: KubeletMetrics;
  /** The effective KubeletConfiguration for /configz. */
  configz: () => unknown;
  pods?: PodsProvider;
  runningPods?: RunningPodsProvider;
  stats?: StatsProvider;
  startup?: StartupProvider;
  /** GET /containerLogs/{namespace}/{pod}/{container}. */
  logs?: Pick<ContainerLogs, 'handle'>;
  /** /exec, /attach, /portForward and /run. */
  streaming?: Pick<ContainerStreaming, 'handle'>;
  /** POST /checkpoint/{namespace}/{pod}/{container}, when the ContainerCheckpoint gate is on. */
  checkpoint?: Pick<ContainerCheckpoint, 'handle'>;
  log?: Logger;
}

type Handler = (req: IncomingMessage, res: ServerResponse, upgrade?: UpgradeSocket) => Promise<void> | void;

const STREAMING_ROUTES = ['/exec/*', '/attach/*', '/portForward/*', '/run/*'];
/** Routes that only take POST; the others take GET and HEAD (streaming ones any method). */
const POST_ROUTES = ['/checkpoint/*'];

export class KubeletServer {
  private server: Server | undefined;
  private readonly routes = new Map<string, Handler>();

  constructor(private readonly opts: KubeletServerOptions) {
    const { metrics } = opts;
    this.routes.set('/configz', (_req, res) => json(res, 200, { kubeletconfig: opts.configz() }));
    this.routes.set('/metrics', async (_req, res) =>
      text(res, 200, await metrics.registry.metrics(), metrics.registry.contentType),
    );
    this.routes.set('/metrics/probes', async (_req, res) =>
      text(res, 200, await metrics.probesRegistry.metrics(), metrics.probesRegistry.contentType),
    );
    const { pods, runningPods, stats, logs, startup } = opts;
    if (pods) this.routes.set('/pods', (_req, res) => json(res, 200, podList(pods.getPods())));
    if (runningPods)
      this.routes.set('/runningpods', async (_req, res) =>
        json(res, 200, podList(await runningPods.getRunningPods())),
      );
    if (stats) {
      this.routes.set('/stats/summary', async (_req, res) => json(res, 200, await stats.summary()));
      this.routes.set('/metrics/resource', async (_req, res) => {
        const summary = await stats.summary().catch((err: unknown) => {
          (opts.log ?? silentLogger).error('Resource metrics: reading stats failed', { err });
          return undefined;
        });
        text(res, 200, formatResourceMetrics(summary), RESOURCE_METRICS_CONTENT_TYPE);
      });
    }
    if (startup)
      this.routes.set('/debug/startup', (req, res) => {
        const namespace = new URL(req.url ?? '/', 'http://x').searchParams.get('namespace') ?? undefined;
        const list: PodStartupList = { kind: 'PodStartupList', items: startup.list(namespace) };
        json(res, 200, list);
      });
    if (logs) this.routes.set('/containerLogs/*', (req, res) => logs.handle(req, res));
    if (opts.checkpoint) {
      const { checkpoint } = opts;
      this.routes.set('/checkpoint/*', (req, res) => checkpoint.handle(req, res));
    }
    const { streaming } = opts;
    if (streaming)
      for (const r of STREAMING_ROUTES)
        this.routes.set(r, (req, res, upgrade) => streaming.handle(req, res, upgrade));
  }

  async start(host: string, port: number): Promise<{ host: string; port: number }> {
    const { clientCA } = this.opts;
    const server = createServer(
      {
        cert: this.opts.tls.cert,
        key: this.opts.tls.key,
        // Asked for, never required: token and anonymous clients connect without one.
        ...(clientCA ? { ca: clientCA, requestCert: true, rejectUnauthorized: false } : {}),
      },
      (req, res) => {
        void this.serve(req, res);
      },
    );
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      // Refusals are ordinary responses written on the connection; a handler that takes the
      // upgrade detaches it first.
      const res = new ServerResponse(req);
      res.assignSocket(socket as Parameters<ServerResponse['assignSocket']>[0]);
      res.shouldKeepAlive = false;
      // The upgrade left the socket paused: ended but unread, it would never see the client's
      // FIN and stay open. Once the reply is flushed, nothing more is read from it.
      res.on('finish', () => socket.end(() => socket.destroy()));
      socket.on('error', () => socket.destroy());
      void this.serve(req, res, { socket, head });
    });
    const address = await listen(server, host, port);
    this.server = server;
    return address;
  }

  async stop(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    await closeServer(s);
  }

  private async serve(req: IncomingMessage, res: ServerResponse, upgrade?: UpgradeSocket): Promise<void> {
    const target = requestPath(req.url);
    if (target === undefined) return text(res, 400, 'Bad Request: invalid request target\n');
    const started = performance.now();
    const path = target.replace(/\/+$/, '') || '/';
    const log = this.opts.log ?? silentLogger;
    try {
      const user = await this.authenticate(req);
      if (!user) return text(res, 401, 'Unauthorized');
      const attrs = requestAttributes(req, user, this.opts.nodeName);
      const verdict = await this.opts.authorizer.authorize(attrs);
      if (!verdict.allowed) {
        return text(
          res,
          403,
          `Forbidden (user=${user.username}, verb=${attrs.verb}, resource=nodes, subresource(s)=[${attrs.subresource}])\n`,
        );
      }
      if (path === '/healthz' || path.startsWith('/healthz/')) {
        this.opts.health.handle(req, res);
        return;
      }
      const handler = this.routes.get(path) ?? this.routes.get(`/${path.split('/')[1]}/*`);
      if (!handler) return text(res, 404, '404 page not found\n');
      const route = `/${path.split('/')[1]}/*`;
      const allowed = STREAMING_ROUTES.includes(route)
        ? true
        : POST_ROUTES.includes(route)
          ? req.method === 'POST'
          : req.method === 'GET' || req.method === 'HEAD';
      if (!allowed) return text(res, 405, 'Method Not Allowed\n');
      await handler(req, res, upgrade);
    } catch (e) {
      log.error('Kubelet API request failed', { path, err: e });
      if (!res.headersSent) text(res, 500, `Internal Server Error: ${(e as Error).message}\n`);
    } finally {
      const labels = {
        method: req.method ?? 'GET',
        path: path.split('/')[1] ?? '',
        server_type: 'readwrite',
        long_running: String(upgrade !== undefined),
      };
      this.opts.metrics.httpRequests.inc(labels);
      this.opts.metrics.httpRequestsDuration.observe(labels, (performance.now() - started) / 1000);
    }
  }

  private async authenticate(req: IncomingMessage): Promise<UserInfo | undefined> {
    const socket = req.socket as TLSSocket;
    // A certificate that does not verify against the client CA fails the request outright.
    if (this.opts.clientCA && socket.getPeerCertificate().subject)
      return socket.authorized ? userFromClientCertificate(socket.getPeerCertificate()) : undefined;
    const token = bearerToken(req);
    // A presented token that fails never falls back to anonymous.
    if (!token) return this.opts.anonymousEnabled ? ANONYMOUS : undefined;
    try {
      return await this.opts.authenticator?.authenticateToken(token);
    } catch (e) {
      (this.opts.log ?? silentLogger).error('Unable to authenticate the request', { err: e });
      return undefined;
    }
  }
}

/**
 * The path of a request target, or undefined for one Go's server refuses with 400 before any
 * handler: no URL can be made of it ("http://[", which would throw outside the handlers' try),
 * or its path has a malformed %-escape ("/%zz", which the handlers' decodeURIComponent would
 * throw on as a 500).
 */
function requestPath(url = '/'): string | undefined {
  if (!URL.canParse(url, 'http://x')) return undefined;
  const { pathname } = new URL(url, 'http://x');
  try {
    decodeURIComponent(pathname);
  } catch {
    return undefined;
  }
  return pathname;
}

function podList(items: V1Pod[]) {
  return { kind: 'PodList', apiVersion: 'v1', metadata: {}, items };
}

function json(res: ServerResponse, code: number, body: unknown): void {
  res.writeHead(code, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
}

function text(
  res: ServerResponse,
  code: number,
  body: string,
  contentType = 'text/plain; charset=utf-8',
): void {
  res.writeHead(code, { 'Content-Type': contentType }).end(body);
}
