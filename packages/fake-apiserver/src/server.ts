import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { realClock } from '@kh/apimachinery';
import { stringify as toYaml } from 'yaml';
import { type AuthorizationMode, alwaysAllow, rbacAuthorizer } from './auth/authorizer.js';
import { generateTls, issueClientCertificate, persistentTls, type TlsMaterial } from './auth/tls.js';
import { readTokenFile, tokenAuthenticator, type UserInfo } from './auth/tokens.js';
import { EventTtlController } from './controllers/event-ttl.js';
import { NamespaceController } from './controllers/namespace.js';
import { NodeLifecycleController } from './controllers/node-lifecycle.js';
import { Scheduler } from './controllers/scheduler.js';
import { ApiHandler } from './http/api.js';
import { DEFAULT_MAX_BODY } from './http/body.js';
import { createRouter, createUpgradeRouter } from './http/router.js';
import type { Clock } from './meta/object.js';
import { KubeletClient, type KubeletClientConfig } from './proxy/kubelet.js';
import { namespaces } from './registry/namespaces.js';
import { bootstrapPolicy, clusterrolebindings, clusterroles } from './registry/rbac.js';
import { RestStorage } from './registry/rest.js';
import { ServiceAccountTokens } from './registry/serviceaccounts.js';
import { Store } from './storage/store.js';

export interface ApiServerOptions {
  /** 0 picks a free port. */
  port?: number;
  /** Listen address; loopback by default. */
  host?: string;
  /** Makes storage durable (WAL + snapshot) in this directory. */
  dataDir?: string;
  /** Bearer tokens: a token file path (kube-apiserver CSV format) or a map. Without tokens the server is open. */
  tokens?: string | Map<string, UserInfo> | Record<string, string>;
  /** Serve HTTPS with a generated CA (true), given material, or plain HTTP (false, default). */
  tls?: boolean | TlsMaterial;
  /** Extra SANs for the generated serving certificate. */
  tlsHosts?: string[];
  /** Allow requests without a token when tokens are configured. */
  anonymous?: boolean;
  /**
   * How this server reaches kubelets (logs, exec, attach, port-forward, nodes/proxy). Without a
   * client certificate, a TLS server with its own CA issues one: CN kube-apiserver-kubelet-client,
   * O system:masters (kubelets trust it with `caPem` as their --client-ca-file).
   */
  kubeletClient?: KubeletClientConfig;
  /**
   * kube-apiserver's --authorization-mode: AlwaysAllow (default: every authenticated caller may
   * do everything) or RBAC (the stored roles and bindings, with the bootstrap policy).
   */
  authorizationMode?: AuthorizationMode;
  /** Node lease grace period before the lifecycle controller marks a node Unknown (40 s). */
  leaseGraceSeconds?: number;
  /** How often the lifecycle controller checks (5 s). */
  nodeMonitorPeriodSeconds?: number;
  /** Run the built-in scheduler (default true). */
  scheduler?: boolean;
  /** Run the node lifecycle controller (default true). */
  nodeLifecycle?: boolean;
  /** How long events are kept (kube-apiserver's --event-ttl, 1 h). */
  eventTtlSeconds?: number;
  clock?: Clock;
  watchCacheSize?: number;
  maxBodyBytes?: number;
  bookmarkIntervalSeconds?: number;
}

export interface ApiServer {
  /** e.g. https://127.0.0.1:41234 */
  readonly url: string;
  readonly port: number;
  /** The CA that signed the serving certificate (and the kubelet client certificate), when serving TLS. */
  readonly caPem: string | undefined;
  /** The certificate presented to kubelets, if any. */
  readonly kubeletClientCertPem: string | undefined;
  readonly store: Store;
  readonly rest: RestStorage;
  readonly scheduler: Scheduler | undefined;
  readonly nodeLifecycle: NodeLifecycleController | undefined;
  readonly eventTtl: EventTtlController;
  /** A kubeconfig (YAML) for this server; `token` picks the credentials (first token by default). */
  kubeconfig(opts?: { token?: string; server?: string }): string;
  close(): Promise<void>;
}

function tokenMap(t: ApiServerOptions['tokens']): Map<string, UserInfo> | undefined {
  if (t === undefined) return undefined;
  if (typeof t === 'string') return readTokenFile(t);
  if (t instanceof Map) return t;
  return new Map(Object.entries(t).map(([token, user]) => [token, { name: user, uid: user, groups: [] }]));
}

const DEFAULT_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];

/** Starts the fake apiserver. */
export async function createApiServer(opts: ApiServerOptions = {}): Promise<ApiServer> {
  const clock = opts.clock ?? realClock;
  const store = new Store({ dataDir: opts.dataDir, watchCacheSize: opts.watchCacheSize });
  const rest = new RestStorage(store, clock);
  for (const ns of DEFAULT_NAMESPACES) {
    if (store.get('namespaces', '', ns) === undefined)
      rest.create(namespaces, '', { metadata: { name: ns } });
  }
  const policy = bootstrapPolicy();
  for (const role of policy.clusterroles) {
    if (store.get(clusterroles.storage, '', role.metadata.name) === undefined)
      rest.create(clusterroles, '', role);
  }
  for (const b of policy.clusterrolebindings) {
    if (store.get(clusterrolebindings.storage, '', b.metadata.name) === undefined)
      rest.create(clusterrolebindings, '', b);
  }
  const tokens = tokenMap(opts.tokens);
  const authn = tokenAuthenticator(tokens, opts.anonymous ?? false);
  const authz = (opts.authorizationMode ?? 'AlwaysAllow') === 'RBAC' ? rbacAuthorizer(store) : alwaysAllow;
  const tls =
    opts.tls === true
      ? await (opts.dataDir ? persistentTls(opts.dataDir, opts.tlsHosts) : generateTls(opts.tlsHosts))
      : opts.tls || undefined;
  const kubeletTls: KubeletClientConfig = { ...opts.kubeletClient };
  if (kubeletTls.certPem === undefined && tls?.caKeyPem !== undefined) {
    Object.assign(
      kubeletTls,
      await issueClientCertificate(tls.caPem, tls.caKeyPem, 'kube-apiserver-kubelet-client', [
        'system:masters',
      ]),
    );
  }
  const kubelet = new KubeletClient(store, kubeletTls);
  const serviceAccountTokens = new ServiceAccountTokens(rest);
  const api = new ApiHandler(rest, kubelet, {
    // TokenReview also knows the service account tokens this server issued.
    reviews: {
      authenticateToken: (t) => authn.authenticateToken(t) ?? serviceAccountTokens.authenticate(t),
      authorizer: authz,
    },
    serviceAccountTokens,
    maxBodyBytes: opts.maxBodyBytes ?? DEFAULT_MAX_BODY,
    bookmarkIntervalMs: (opts.bookmarkIntervalSeconds ?? 60) * 1000,
    maxWatchSeconds: 3600,
  });
  let url = '';
  const routerOptions = {
    auth: authn,
    authz,
    api,
    kubelet,
    store,
    serverAddress: () => new URL(url).host,
  };
  const router = createRouter(routerOptions);
  const handler = (req: Parameters<typeof router>[0], res: Parameters<typeof router>[1]) =>
    void router(req, res);
  const server: Server = tls
    ? createHttpsServer({ cert: tls.certPem, key: tls.keyPem }, handler)
    : createHttpServer(handler);
  // Proxied streams are no longer the HTTP server's connections: close() ends them itself.
  const upgraded = new Set<Duplex>();
  const upgradeRouter = createUpgradeRouter(routerOptions);
  server.on('upgrade', (req, socket: Duplex, head: Buffer) => {
    upgraded.add(socket);
    socket.once('close', () => upgraded.delete(socket));
    upgradeRouter(req, socket, head);
  });
  server.keepAliveTimeout = 65_000;
  server.requestTimeout = 0;
  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  // A wildcard listen address is reached over loopback.
  const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  url = `${tls ? 'https' : 'http'}://${urlHost}:${port}`;

  const nsController = new NamespaceController(rest);
  nsController.start();
  const scheduler = opts.scheduler === false ? undefined : new Scheduler(rest);
  scheduler?.start();
  const nodeLifecycle =
    opts.nodeLifecycle === false
      ? undefined
      : new NodeLifecycleController(rest, {
          gracePeriodMs: (opts.leaseGraceSeconds ?? 40) * 1000,
          monitorPeriodMs: (opts.nodeMonitorPeriodSeconds ?? 5) * 1000,
        });
  nodeLifecycle?.start();
  const eventTtl = new EventTtlController(rest, { ttlMs: (opts.eventTtlSeconds ?? 3600) * 1000 });
  eventTtl.start();
  let closing: Promise<void> | undefined;

  return {
    url,
    port,
    caPem: tls?.caPem,
    kubeletClientCertPem: kubeletTls.certPem,
    store,
    rest,
    scheduler,
    nodeLifecycle,
    eventTtl,
    kubeconfig(k = {}) {
      const token = k.token ?? (tokens ? [...tokens.keys()][0] : undefined);
      const cluster: Record<string, string> = { server: k.server ?? url };
      if (tls) cluster['certificate-authority-data'] = Buffer.from(tls.caPem).toString('base64');
      return toYaml({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'fake-apiserver', cluster }],
        users: [{ name: 'fake-apiserver', user: token ? { token } : {} }],
        contexts: [
          {
            name: 'fake-apiserver',
            context: { cluster: 'fake-apiserver', user: 'fake-apiserver', namespace: 'default' },
          },
        ],
        'current-context': 'fake-apiserver',
        preferences: {},
      });
    },
    async close() {
      // Idempotent: a second SIGTERM or a test's double cleanup must not touch closed files.
      if (closing !== undefined) return closing;
      closing = shutdown();
      return closing;
    },
  };

  async function shutdown(): Promise<void> {
    scheduler?.stop();
    nodeLifecycle?.stop();
    nsController.stop();
    eventTtl.stop();
    server.closeAllConnections();
    for (const s of upgraded) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    // A failed log has already refused the writes it could not keep; close regardless.
    await store.sync().catch(() => {});
    store.close();
  }
}
