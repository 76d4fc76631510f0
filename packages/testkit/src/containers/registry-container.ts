import { randomBytes } from 'node:crypto';
import { type StartedTestContainer, Wait } from 'testcontainers';
import { docker } from '../util/docker.js';
import { requireFile, requireTool, run } from '../util/process.js';
import { htpasswdLine } from './htpasswd.js';
import { containerLogTail, KhContainer, removeContainer, startOrRemove } from './kh-container.js';
import { khLabels, uniqueName } from './labels.js';
import type { StartedTestNetwork } from './network.js';
import { REGISTRY_HOST } from './node-config.js';

const REGISTRY_BINARY = '/usr/bin/docker-registry';
const CONFIG_PATH = '/etc/docker/registry/config.yml';
const HTPASSWD_PATH = '/etc/docker/registry/htpasswd';
const [REGISTRY_ALIAS, REGISTRY_PORT] = REGISTRY_HOST.split(':') as [string, string];

export interface RegistryCredentials {
  username: string;
  password: string;
}

function registryConfig(withAuth: boolean): string {
  return `version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: /var/lib/registry
  delete:
    enabled: true
http:
  addr: :${REGISTRY_PORT}
${withAuth ? `auth:\n  htpasswd:\n    realm: kh-registry\n    path: ${HTPASSWD_PATH}\n` : ''}`;
}

/**
 * A real OCI registry (Debian's docker-registry, bind-mounted from the host into the node image)
 * on a test network as `registry:5000` (or another alias), with its port mapped to 127.0.0.1 for pushes from the host.
 */
export class RegistryContainer {
  private network?: StartedTestNetwork;
  private alias = REGISTRY_ALIAS;
  private credentials?: RegistryCredentials;
  private readyTimeoutMs = 30_000;

  constructor(private readonly image: string) {}

  withNetwork(network: StartedTestNetwork): this {
    this.network = network;
    return this;
  }

  /**
   * The registry's name on the network (default "registry"). Nodes trust the names in
   * REGISTRY_HOSTS for plain HTTP, e.g. "private-registry" for a second registry with auth.
   */
  withNetworkAlias(alias: string): this {
    this.alias = alias;
    return this;
  }

  /** Requires basic auth (htpasswd, bcrypt) for every request; the password is random unless given. */
  withBasicAuth(username: string, password = randomBytes(12).toString('base64url')): this {
    this.credentials = { username, password };
    return this;
  }

  withReadyTimeout(ms: number): this {
    this.readyTimeoutMs = ms;
    return this;
  }

  async start(): Promise<StartedRegistryContainer> {
    await requireFile(REGISTRY_BINARY, 'docker-registry');
    const name = uniqueName('registry');
    const files = [{ content: registryConfig(this.credentials !== undefined), target: CONFIG_PATH }];
    if (this.credentials) {
      files.push({
        content: htpasswdLine(this.credentials.username, this.credentials.password),
        target: HTPASSWD_PATH,
      });
    }
    const container = new KhContainer(this.image)
      .withName(name)
      .withLabels(khLabels('registry'))
      .withBindMounts([{ source: REGISTRY_BINARY, target: REGISTRY_BINARY, mode: 'ro' }])
      .withCopyContentToContainer(files)
      .withCommand([REGISTRY_BINARY, 'serve', CONFIG_PATH])
      .withRawCreateOptions({ ExposedPorts: { [`${REGISTRY_PORT}/tcp`]: {} } })
      // Loopback only: nothing outside this machine may reach the test registry.
      .withRawHostConfig({
        PortBindings: { [`${REGISTRY_PORT}/tcp`]: [{ HostIp: '127.0.0.1', HostPort: '0' }] },
      })
      // The registry logs this once its listener is open, after reading its config and htpasswd.
      .withWaitStrategy(Wait.forLogMessage(/listening on /))
      .withStartupTimeout(this.readyTimeoutMs);
    if (this.network) container.withNetworkMode(this.network.name).withNetworkAliases(this.alias);
    const tc = await startOrRemove(container, name);
    const registry = new StartedRegistryContainer(tc, `${this.alias}:${REGISTRY_PORT}`, this.credentials);
    try {
      const info = await docker().getContainer(tc.getId()).inspect();
      const port = info.NetworkSettings.Ports[`${REGISTRY_PORT}/tcp`]?.[0]?.HostPort;
      if (!port) throw new Error(`registry ${name}: port ${REGISTRY_PORT} was not mapped`);
      registry.hostAddress = `127.0.0.1:${port}`;
    } catch (err) {
      await registry.stop();
      throw err;
    }
    return registry;
  }
}

const PUSH_ATTEMPTS = 3;

/** Whether skopeo failed on the connection rather than on what it was asked to do. */
export function isTransportError(err: unknown): boolean {
  return /connection reset|connection refused|broken pipe|unexpected EOF|i\/o timeout|: EOF\b/i.test(
    String((err as Error)?.message ?? err),
  );
}

export class StartedRegistryContainer {
  /** `127.0.0.1:<port>`: where the host pushes. */
  hostAddress = '';
  private stopped = false;

  constructor(
    private readonly container: StartedTestContainer,
    /** Where runtimes on the test network pull from: `registry:5000` unless renamed. */
    readonly networkAddress: string,
    readonly credentials: RegistryCredentials | undefined,
  ) {}

  get id(): string {
    return this.container.getId();
  }

  /**
   * CRI AuthConfig for PullImage, or undefined without auth. The server address carries its
   * scheme: containerd 1.6 silently drops credentials whose address is a bare "registry:5000".
   */
  get authConfig(): { username: string; password: string; serverAddress: string } | undefined {
    return this.credentials && { ...this.credentials, serverAddress: `http://${this.networkAddress}` };
  }

  /**
   * GET /v2/ from the host with the registry's own credentials, other ones, or none (`null`):
   * 200, or 401 when auth is on and the request has no valid credentials.
   */
  async ping(credentials: RegistryCredentials | null | undefined = this.credentials): Promise<number> {
    const headers: Record<string, string> = {};
    if (credentials) {
      headers.authorization = `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`;
    }
    const res = await fetch(`http://${this.hostAddress}/v2/`, { headers });
    await res.body?.cancel();
    return res.status;
  }

  /**
   * Pushes an image from the host engine as `repoTag` (e.g. 'kh/busybox:1') and returns the
   * reference runtimes on the test network pull: 'registry:5000/kh/busybox:1'.
   */
  async push(localRef: string, repoTag: string): Promise<string> {
    const skopeo = await requireTool('skopeo', 'skopeo');
    const args = ['copy', '--quiet', '--dest-tls-verify=false'];
    if (this.credentials)
      args.push('--dest-creds', `${this.credentials.username}:${this.credentials.password}`);
    args.push(`docker-daemon:${localRef}`, `docker://${this.hostAddress}/${repoTag}`);
    // A push may lose its connection on a loaded host (a CI run saw "read: connection reset by peer"
    // while three sharded runs pushed at once); a transport error is tried again, anything else
    // (auth, a missing image) is not.
    for (let attempt = 1; ; attempt++) {
      try {
        await run(skopeo, args);
        return `${this.networkAddress}/${repoTag}`;
      } catch (err) {
        if (attempt >= PUSH_ATTEMPTS || !isTransportError(err)) throw err;
        await new Promise((r) => setTimeout(r, attempt * 1000));
      }
    }
  }

  logs(lines = 100): Promise<string> {
    return containerLogTail(this.id, lines);
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    try {
      await this.container.stop({ timeout: 2, remove: true, removeVolumes: true });
    } catch {
      await removeContainer(this.id);
    }
  }
}
