// A plain container from the node image, without a runtime inside: the fake apiserver and the fake
// backend's node run in one. Same labels and clean-up rules as testkit's containers, so a crashed
// run's leftovers are found by the kh.run label.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BindMount, khLabels, type StartedTestNetwork } from '@kh/testkit';
import Docker from 'dockerode';

export class SupportContainer {
  private network?: StartedTestNetwork;
  private aliases: string[] = [];
  private binds: BindMount[] = [];
  private ports: number[] = [];
  private command: string[] = ['sleep', 'infinity'];
  private env: Record<string, string> = {};
  private files: { name: string; content: string }[] = [];

  constructor(
    private readonly image: string,
    private readonly name: string,
    private readonly role: string,
  ) {}

  withNetwork(network: StartedTestNetwork, ...aliases: string[]): this {
    this.network = network;
    this.aliases = aliases;
    return this;
  }

  withBindMounts(mounts: BindMount[]): this {
    this.binds.push(...mounts);
    return this;
  }

  /** Publishes a container port on 127.0.0.1 only (a random host port). */
  withLoopbackPort(port: number): this {
    this.ports.push(port);
    return this;
  }

  withCommand(command: string[]): this {
    this.command = command;
    return this;
  }

  withEnvironment(env: Record<string, string>): this {
    this.env = { ...this.env, ...env };
    return this;
  }

  /** A file placed in /run/kh before the container starts (mode 0600: tokens live here). */
  withSharedFile(name: string, content: string): this {
    this.files.push({ name, content });
    return this;
  }

  /**
   * Creates and starts the container with a fresh host directory mounted at /run/kh (sockets and
   * files shared with the harness). A failed start removes what it created.
   */
  async start(docker = new Docker()): Promise<StartedSupportContainer> {
    const sharedDir = await mkdtemp(join(tmpdir(), `kh-${this.role}-`));
    for (const f of this.files) await writeFile(join(sharedDir, f.name), f.content, { mode: 0o600 });
    const binds = [{ source: sharedDir, target: '/run/kh', mode: 'rw' }, ...this.binds].map(
      (b) => `${b.source}:${b.target}:${b.mode ?? 'rw'}`,
    );
    const exposed = Object.fromEntries(this.ports.map((p) => [`${p}/tcp`, {}]));
    const bindings = Object.fromEntries(
      this.ports.map((p) => [`${p}/tcp`, [{ HostIp: '127.0.0.1', HostPort: '0' }]]),
    );
    let container: Docker.Container | undefined;
    try {
      container = await docker.createContainer({
        name: this.name,
        Hostname: this.name,
        Image: this.image,
        Cmd: this.command,
        Env: Object.entries(this.env).map(([k, v]) => `${k}=${v}`),
        Labels: khLabels(this.role),
        ExposedPorts: exposed,
        HostConfig: {
          Binds: binds,
          PortBindings: bindings,
          Init: false,
          ...(this.network ? { NetworkMode: this.network.name } : {}),
        },
        ...(this.network
          ? { NetworkingConfig: { EndpointsConfig: { [this.network.name]: { Aliases: this.aliases } } } }
          : {}),
      });
      await container.start();
      const info = await container.inspect();
      const hostPorts = new Map<number, number>();
      for (const p of this.ports) {
        const hostPort = info.NetworkSettings.Ports[`${p}/tcp`]?.[0]?.HostPort;
        if (!hostPort) throw new Error(`${this.name}: port ${p} was not published`);
        hostPorts.set(p, Number(hostPort));
      }
      const ip = this.network ? info.NetworkSettings.Networks[this.network.name]?.IPAddress : undefined;
      return new StartedSupportContainer(docker, container.id, this.name, sharedDir, hostPorts, ip ?? '');
    } catch (err) {
      await container?.remove({ force: true, v: true }).catch(() => {});
      await rm(sharedDir, { recursive: true, force: true });
      throw err;
    }
  }
}

export class StartedSupportContainer {
  private stopped = false;

  constructor(
    readonly docker: Docker,
    readonly id: string,
    readonly name: string,
    /** Host directory mounted at /run/kh inside. */
    readonly sharedDirOnHost: string,
    private readonly hostPorts: Map<number, number>,
    /** Address on the run's network. */
    readonly ipAddress: string,
  ) {}

  /** 127.0.0.1 port the container port was published on. */
  hostPort(port: number): number {
    const p = this.hostPorts.get(port);
    if (p === undefined) throw new Error(`${this.name}: port ${port} is not published`);
    return p;
  }

  /** Removes the container with its anonymous volumes and the shared directory; safe to call twice. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.docker
      .getContainer(this.id)
      .remove({ force: true, v: true })
      .catch((err: { statusCode?: number }) => {
        if (err.statusCode !== 404) throw err;
      });
    await rm(this.sharedDirOnHost, { recursive: true, force: true });
  }
}
