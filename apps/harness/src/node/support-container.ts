// A plain container from the node image, without a runtime inside: the fake apiserver and the fake
// backend's node run in one. Same labels and clean-up rules as testkit's containers, so a crashed
// run's leftovers are found by the kh.run label.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { khLabels, type StartedTestNetwork } from '@kh/testkit';
import {
  AbstractStartedContainer,
  GenericContainer,
  getContainerRuntimeClient,
  PullPolicy,
  type StartedTestContainer,
  type StopOptions,
  type StoppedTestContainer,
} from 'testcontainers';
import { LineTail } from './lines.js';

/** Where the host directory shared with the harness (sockets, tokens, kubeconfig) is mounted. */
const SHARED_DIR = '/run/kh';

/** Output lines a failed start quotes. */
const FAILED_START_LINES = 30;

const isNotFound = (err: unknown) => (err as { statusCode?: number } | null)?.statusCode === 404;

export class SupportContainer extends GenericContainer {
  private readonly sharedFiles: { name: string; content: string }[] = [];

  constructor(
    image: string,
    private readonly containerName: string,
    private readonly role: string,
  ) {
    super(image);
    this.withName(containerName)
      .withHostname(containerName)
      .withLabels(khLabels(role))
      .withCommand(['sleep', 'infinity'])
      // Local images only, and no Ryuk reaper (its image cannot be pulled here): stop() and the
      // run's label sweep remove everything instead.
      .withPullPolicy(PullPolicy.neverPull())
      .withAutoCleanup(false);
    // The image's entrypoint (tini) is PID 1, whatever the daemon's default for --init.
    this.hostConfig.Init = false;
  }

  /**
   * Joins the run's network, and only it, under these names. (testcontainers' network aliases would
   * also attach the container to Docker's default bridge.)
   */
  withRunNetwork(network: StartedTestNetwork, ...aliases: string[]): this {
    this.withNetworkMode(network.name);
    this.createOpts.NetworkingConfig = { EndpointsConfig: { [network.name]: { Aliases: aliases } } };
    return this;
  }

  /**
   * Publishes a container port on 127.0.0.1 only: see getMappedPort. Without `hostPort` the engine
   * picks one, and may pick another one when the container restarts.
   */
  withLoopbackPort(port: number, hostPort = 0): this {
    this.withExposedPorts(port);
    this.hostConfig.PortBindings = {
      ...this.hostConfig.PortBindings,
      [`${port}/tcp`]: [{ HostIp: '127.0.0.1', HostPort: String(hostPort) }],
    };
    return this;
  }

  /** A file placed in /run/kh before the container starts (mode 0600: tokens live here). */
  withSharedFile(name: string, content: string): this {
    this.sharedFiles.push({ name, content });
    return this;
  }

  /**
   * Creates and starts the container with a fresh host directory mounted at /run/kh, and waits for
   * its wait strategy. A failed start removes what it created and quotes the container's last lines.
   */
  override async start(): Promise<StartedSupportContainer> {
    const sharedDir = await mkdtemp(join(tmpdir(), `kh-${this.role}-`));
    for (const f of this.sharedFiles) await writeFile(join(sharedDir, f.name), f.content, { mode: 0o600 });
    this.hostConfig.Binds = [...(this.hostConfig.Binds ?? []), `${sharedDir}:${SHARED_DIR}:rw`];
    const output = new LineTail(FAILED_START_LINES);
    let follow: Readable | undefined;
    this.withLogConsumer((stream) => {
      follow = stream;
      stream.on('data', (chunk: string) => output.push(chunk));
    });
    try {
      return new StartedSupportContainer(await super.start(), sharedDir);
    } catch (err) {
      // testcontainers removes a container that failed its wait strategy, not one that failed to start.
      await removeContainer(this.containerName).catch(() => {});
      await rm(sharedDir, { recursive: true, force: true });
      const lines = output.tail(FAILED_START_LINES).join('\n');
      const message = `${this.containerName} did not start: ${(err as Error).message}`;
      throw new Error(lines ? `${message}\n${lines}` : message, { cause: err });
    } finally {
      follow?.destroy();
    }
  }
}

export class StartedSupportContainer extends AbstractStartedContainer {
  constructor(
    started: StartedTestContainer,
    /** Host directory mounted at /run/kh inside. */
    readonly sharedDirOnHost: string,
  ) {
    super(started);
  }

  /** Removes the container with its anonymous volumes and the shared directory; safe to call twice. */
  override async stop(options: Partial<StopOptions> = {}): Promise<StoppedTestContainer> {
    try {
      return await super.stop({ timeout: 0, removeVolumes: true, ...options, remove: true });
    } catch (err) {
      // Already removed (by hand, or by a sweep): what stop() is for has happened.
      if (isNotFound(err)) return this;
      throw err;
    } finally {
      await rm(this.sharedDirOnHost, { recursive: true, force: true });
    }
  }
}

async function removeContainer(name: string): Promise<void> {
  const client = await getContainerRuntimeClient();
  await client.container.dockerode
    .getContainer(name)
    .remove({ force: true, v: true })
    .catch((err: unknown) => {
      if (!isNotFound(err)) throw err;
    });
}
