import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { realClock } from '@kh/apimachinery';
import { stringify as toYaml } from 'yaml';
import { admissionChain } from './admission/attributes.js';
import { nodeRestriction } from './admission/noderestriction.js';
import {
  type PodSecurityAuditRecord,
  type PodSecurityConfiguration,
  podSecurity,
} from './admission/podsecurity.js';
import { priorityAdmit, priorityValidate } from './admission/priority.js';
import { rbacEscalationCheck } from './admission/rbac-escalation.js';
import { runtimeClassAdmit, runtimeClassValidate } from './admission/runtimeclass.js';
import {
  type AuthorizationMode,
  alwaysAllow,
  type PolicyRule,
  rbacAuthorizer,
  unionAuthorizer,
} from './auth/authorizer.js';
import { nodeAuthorizer } from './auth/node.js';
import { generateTls, issueClientCertificate, persistentTls, type TlsMaterial } from './auth/tls.js';
import { readTokenFile, tokenAuthenticator, type UserInfo } from './auth/tokens.js';
import { ClusterRoleAggregationController } from './controllers/clusterrole-aggregation.js';
import { EventTtlController } from './controllers/event-ttl.js';
import { NamespaceController } from './controllers/namespace.js';
import { NodeIpamController, type NodeIpamOptions, nodeCidrSets } from './controllers/node-ipam.js';
import { NodeLifecycleController } from './controllers/node-lifecycle.js';
import { Scheduler } from './controllers/scheduler.js';
import { ApiHandler } from './http/api.js';
import { DEFAULT_MAX_BODY } from './http/body.js';
import { createRouter, createUpgradeRouter } from './http/router.js';
import type { Clock } from './meta/object.js';
import { methodNotAllowed } from './meta/status.js';
import { KubeletClient, type KubeletClientConfig, writeSocketStatus } from './proxy/kubelet.js';
import { namespaces } from './registry/namespaces.js';
import { priorityclasses, SYSTEM_PRIORITY_CLASSES } from './registry/priorityclasses.js';
import {
  BOOTSTRAP_CLUSTER_ROLES,
  bootstrapPolicy,
  clusterrolebindings,
  clusterroles,
} from './registry/rbac.js';
import { RestStorage } from './registry/rest.js';
import { ISSUER, ServiceAccountTokens } from './registry/serviceaccounts.js';
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
   * kube-apiserver's --api-audiences: the audiences a token must be for to authenticate an API
   * request (and TokenReview's default); the service account issuer's by default.
   */
  apiAudiences?: string[];
  /**
   * How this server reaches kubelets (logs, exec, attach, port-forward, nodes/proxy). Without a
   * client certificate, a TLS server with its own CA issues one: CN kube-apiserver-kubelet-client,
   * O system:masters (kubelets trust it with `caPem` as their --client-ca-file).
   */
  kubeletClient?: KubeletClientConfig;
  /**
   * kube-apiserver's --authorization-mode, one mode or several asked in order: AlwaysAllow
   * (default: every authenticated caller may do everything), Node (kubelets: their own node's
   * objects; enables the NodeRestriction admission plugin with it) and RBAC (the stored roles and
   * bindings, with the bootstrap policy).
   */
  authorizationMode?: AuthorizationMode | readonly AuthorizationMode[];
  /**
   * The PodSecurity admission plugin's configuration (kube-apiserver's PodSecurityConfiguration):
   * the levels of namespaces without labels (privileged by default) and the exemptions.
   */
  podSecurity?: PodSecurityConfiguration;
  /** Where pods that break their namespace's audit level are reported (kube-apiserver: the audit log). */
  onPodSecurityAudit?: (r: PodSecurityAuditRecord) => void;
  /**
   * Listening on a non-loopback address, a server that lets unauthenticated clients do everything
   * (no tokens, or anonymous access with AlwaysAllow) refuses to start unless this is set.
   */
  allowUnauthenticatedRemote?: boolean;
  /** Node lease grace period before the lifecycle controller marks a node Unknown (40 s). */
  leaseGraceSeconds?: number;
  /** How often the lifecycle controller checks (5 s). */
  nodeMonitorPeriodSeconds?: number;
  /** Run the built-in scheduler (default true). */
  scheduler?: boolean;
  /** Run the node lifecycle controller (default true). */
  nodeLifecycle?: boolean;
  /**
   * kube-controller-manager's --allocate-node-cidrs with its --cluster-cidr and mask sizes: nodes
   * without a pod CIDR get one (off by default, as in kube-controller-manager).
   */
  nodeIpam?: NodeIpamOptions;
  /** How long events are kept (kube-apiserver's --event-ttl, 1 h). */
  eventTtlSeconds?: number;
  clock?: Clock;
  watchCacheSize?: number;
  /** Largest request body; a larger one is 413 (3 MiB, kube-apiserver's). */
  maxBodyBytes?: number;
  bookmarkIntervalSeconds?: number;
  /** Most connections open at once; more are closed as they arrive (see LIMITS). */
  maxConnections?: number;
  /** Most watches open at once; more are answered 429. */
  maxWatches?: number;
  /** Most watches one user may hold open at once; more are answered 429. */
  maxWatchesPerUser?: number;
  /** Time a client has to send its request headers; a slower one is answered 408 and cut off. */
  headersTimeoutSeconds?: number;
  /** Time a client has to send its whole request (headers and body). */
  requestTimeoutSeconds?: number;
}

/** The defaults of the limits that keep a hostile or broken client from exhausting the server. */
export const LIMITS = {
  maxBodyBytes: DEFAULT_MAX_BODY,
  maxConnections: 10_000,
  maxWatches: 10_000,
  // So that one identity (a runaway informer, a hostile client) cannot take every watch slot.
  maxWatchesPerUser: 1_000,
  // The longest watch a client's timeoutSeconds gets (setTimeout would overflow past ~24.8 days).
  maxWatchTimeoutSeconds: 24 * 3600,
  // kube-apiserver's ReadHeaderTimeout.
  headersTimeoutSeconds: 32,
  requestTimeoutSeconds: 60,
  // A watch without timeoutSeconds ends after a random 30 to 60 minutes, as kube-apiserver's do.
  maxWatchSeconds: 3600,
  keepAliveSeconds: 65,
  // Node's default limit on a request's header block.
  maxHeaderBytes: 16 * 1024,
} as const;

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
  readonly nodeIpam: NodeIpamController | undefined;
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

/** A listen address only this machine can reach. */
export const isLoopbackHost = (host: string): boolean =>
  host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);

const DEFAULT_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];

/** Starts the fake apiserver. */
export async function createApiServer(opts: ApiServerOptions = {}): Promise<ApiServer> {
  const clock = opts.clock ?? realClock;
  // Bad flags fail here, before anything is opened.
  const cidrSets = opts.nodeIpam ? nodeCidrSets(opts.nodeIpam) : undefined;
  const host = opts.host ?? '127.0.0.1';
  const modes = [opts.authorizationMode ?? 'AlwaysAllow'].flat();
  const open =
    opts.tokens === undefined || (opts.anonymous === true && modes.every((m) => m === 'AlwaysAllow'));
  if (open && !isLoopbackHost(host) && !opts.allowUnauthenticatedRemote) {
    throw new Error(
      `refusing to serve ${host} without authentication: anyone who reaches it could read and write everything (Secrets included). ` +
        'Give tokens (--token-file) and an authorization mode, listen on 127.0.0.1, or pass --insecure-allow-unauthenticated-remote (allowUnauthenticatedRemote) to accept it',
    );
  }
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
  // kube-apiserver's scheduling/bootstrap-system-priority-classes hook.
  for (const pc of SYSTEM_PRIORITY_CLASSES) {
    if (store.get(priorityclasses.storage, '', pc.metadata.name) === undefined)
      rest.create(priorityclasses, '', pc);
  }
  const tokens = tokenMap(opts.tokens);
  const serviceAccountTokens = new ServiceAccountTokens(rest);
  const authn = tokenAuthenticator(tokens, opts.anonymous ?? false, {
    apiAudiences: opts.apiAudiences ?? [ISSUER],
    serviceAccounts: (t, audiences) => serviceAccountTokens.authenticate(t, audiences),
  });
  const nodeRules = BOOTSTRAP_CLUSTER_ROLES['system:node'] as PolicyRule[];
  const authz = unionAuthorizer(
    modes.map((m) =>
      m === 'Node' ? nodeAuthorizer(store, nodeRules) : m === 'RBAC' ? rbacAuthorizer(store) : alwaysAllow,
    ),
  );
  // In kube-apiserver's order: before validation RBAC's escalation check (its storage's),
  // NodeRestriction (a mutating plugin; as kubeadm runs it, with Node), which narrows the writes
  // the Node authorizer lets through, then the mutating halves of Priority and RuntimeClass; after
  // validation Pod Security and the validating halves of Priority and RuntimeClass.
  const mutatingAdmission = admissionChain([
    rbacEscalationCheck(store, authz),
    ...(modes.includes('Node') ? [nodeRestriction(store)] : []),
    priorityAdmit(store),
    runtimeClassAdmit(store),
  ]);
  const admission = admissionChain([
    podSecurity(store, { config: opts.podSecurity, onAudit: opts.onPodSecurityAudit }),
    priorityValidate(store),
    runtimeClassValidate(store),
  ]);
  const tls =
    opts.tls === true
      ? await (opts.dataDir ? persistentTls(opts.dataDir, opts.tlsHosts) : generateTls(opts.tlsHosts))
      : opts.tls || undefined;
  const kubeletTls: KubeletClientConfig = {
    // Listening on loopback only, its kubelets are on this machine too (the tests' own kubelets).
    allowLoopback: isLoopbackHost(host),
    ...opts.kubeletClient,
  };
  if (kubeletTls.certPem === undefined && tls?.caKeyPem !== undefined) {
    Object.assign(
      kubeletTls,
      await issueClientCertificate(tls.caPem, tls.caKeyPem, 'kube-apiserver-kubelet-client', [
        'system:masters',
      ]),
    );
  }
  const kubelet = new KubeletClient(store, kubeletTls);
  const api = new ApiHandler(rest, kubelet, {
    reviews: {
      authenticateToken: (t, audiences) => authn.authenticateToken(t, audiences),
      authorizer: authz,
    },
    serviceAccountTokens,
    admission,
    mutatingAdmission,
    maxBodyBytes: opts.maxBodyBytes ?? LIMITS.maxBodyBytes,
    bookmarkIntervalMs: (opts.bookmarkIntervalSeconds ?? 60) * 1000,
    maxWatchSeconds: LIMITS.maxWatchSeconds,
    maxWatches: opts.maxWatches ?? LIMITS.maxWatches,
    maxWatchesPerUser: opts.maxWatchesPerUser ?? LIMITS.maxWatchesPerUser,
    maxWatchTimeoutSeconds: LIMITS.maxWatchTimeoutSeconds,
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
  const requestTimeout = (opts.requestTimeoutSeconds ?? LIMITS.requestTimeoutSeconds) * 1000;
  const http = {
    requestTimeout,
    headersTimeout: Math.min(
      requestTimeout,
      (opts.headersTimeoutSeconds ?? LIMITS.headersTimeoutSeconds) * 1000,
    ),
    keepAliveTimeout: LIMITS.keepAliveSeconds * 1000,
    maxHeaderSize: LIMITS.maxHeaderBytes,
    // How often slow requests are looked for (Node's default, 30 s, would let them linger).
    connectionsCheckingInterval: Math.min(1000, requestTimeout),
  };
  const server: Server = tls
    ? createHttpsServer({ ...http, cert: tls.certPem, key: tls.keyPem }, handler)
    : createHttpServer(http, handler);
  server.maxConnections = opts.maxConnections ?? LIMITS.maxConnections;
  // Proxied streams are no longer the HTTP server's connections: close() ends them itself.
  const upgraded = new Set<Duplex>();
  // CONNECT is no verb of the API: answer it instead of dropping the connection unanswered.
  server.on('connect', (req, socket: Duplex) => {
    socket.on('error', () => socket.destroy());
    writeSocketStatus(socket, methodNotAllowed(req.method ?? 'CONNECT', 'the API'));
  });
  const upgradeRouter = createUpgradeRouter(routerOptions);
  server.on('upgrade', (req, socket: Duplex, head: Buffer) => {
    upgraded.add(socket);
    socket.once('close', () => upgraded.delete(socket));
    upgradeRouter(req, socket, head);
  });
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
  const aggregation = new ClusterRoleAggregationController(rest);
  aggregation.start();
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
  const nodeIpam = cidrSets ? new NodeIpamController(rest, cidrSets) : undefined;
  nodeIpam?.start();
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
    nodeIpam,
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
    nodeIpam?.stop();
    nsController.stop();
    aggregation.stop();
    eventTtl.stop();
    server.closeAllConnections();
    for (const s of upgraded) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    // A failed log has already refused the writes it could not keep; close regardless.
    await store.sync().catch(() => {});
    store.close();
  }
}
