import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ContainerConfig, CriClient, type DeepPartial, type PodSandboxConfig } from '@kh/cri-api';
import { ensureImages } from '@kh/testkit';
import { afterAll, beforeAll } from 'vitest';
import {
  connectDocker,
  DEFAULT_DOCKER_ENDPOINT,
  DockerShim,
  type DockerShimOptions,
  FakeDockerClient,
} from '../src/index.js';

/**
 * The Engine of the real-engine suite: the dockerd of the node it runs in (scripts/test-in-node.mjs
 * sets DOCKER_HOST), else the default socket.
 */
export const ENGINE_ENDPOINT = process.env.DOCKER_HOST || DEFAULT_DOCKER_ENDPOINT;
export const docker = connectDocker(ENGINE_ENDPOINT);

/** The test images: those the node was given (KH_TEST_IMAGES), else built on the host. */
async function testImages(): Promise<ShimHarness['images']> {
  const given = process.env.KH_TEST_IMAGES;
  return given ? (JSON.parse(given) as ShimHarness['images']) : ensureImages(['pause', 'busybox', 'httpd']);
}

/**
 * One shim, a client, a scratch dir, and cleanup of everything labelled with the run id. The shim
 * drives the host dockerd, or, given `fake`, an Engine in memory (FakeDockerClient): no daemon,
 * no image, no process, so the CRI verbs' own logic is tested through the real gRPC server.
 */
export class ShimHarness {
  readonly runId = `dockershim-${randomBytes(4).toString('hex')}`;
  shim!: DockerShim;
  client!: CriClient;
  dir!: string;
  images!: { pause: string; busybox: string; httpd: string };
  private counter = 0;

  constructor(readonly fake?: FakeDockerClient) {}

  async start(options: Partial<DockerShimOptions> = {}): Promise<this> {
    this.images = this.fake ? fakeImages(this.fake) : await testImages();
    this.dir = await mkdtemp(join(tmpdir(), 'kh-dockershim-'));
    await this.startShim(options);
    return this;
  }

  /**
   * A shim on this run's socket. Pods are on Docker's bridge (`docker` mode) unless told: the
   * host has no CNI configuration; cni.int.test.ts brings its own.
   */
  async startShim(options: Partial<DockerShimOptions> = {}): Promise<void> {
    this.shim = await DockerShim.start({
      socketPath: join(this.dir, 'dockershim.sock'),
      podInfraContainerImage: this.images.pause,
      networkPlugin: 'docker',
      restrictOomScoreAdj: true,
      log: () => undefined,
      ...(this.fake ? { docker: this.fake } : { dockerEndpoint: ENGINE_ENDPOINT }),
      ...options,
    });
    this.client = await CriClient.connect(this.shim.endpoint);
  }

  async stopShim(): Promise<void> {
    this.client.close();
    await this.shim.close();
  }

  get labels(): Record<string, string> {
    return { 'kh.run': this.runId, 'kh.owner': 'test' };
  }

  podConfig(extra: DeepPartial<PodSandboxConfig> = {}): DeepPartial<PodSandboxConfig> {
    const n = ++this.counter;
    return {
      metadata: { name: `pod${n}`, namespace: 'kh-test', uid: `${this.runId}-${n}`, attempt: 0 },
      logDirectory: join(this.dir, 'pods', `pod${n}`),
      ...extra,
      labels: { ...this.labels, ...(extra.labels ?? {}) },
    };
  }

  containerConfig(name: string, extra: DeepPartial<ContainerConfig> = {}): DeepPartial<ContainerConfig> {
    return {
      metadata: { name, attempt: 0 },
      image: { image: this.images.busybox },
      command: ['sleep', '3600'],
      logPath: `${name}/0.log`,
      ...extra,
      labels: { ...this.labels, ...(extra.labels ?? {}) },
    };
  }

  async runPod(
    extra: DeepPartial<PodSandboxConfig> = {},
  ): Promise<{ podId: string; config: DeepPartial<PodSandboxConfig> }> {
    const config = this.podConfig(extra);
    const { podSandboxId } = await this.client.runPodSandbox({ config });
    return { podId: podSandboxId, config };
  }

  async runContainer(
    podId: string,
    podConfig: DeepPartial<PodSandboxConfig>,
    name: string,
    extra: DeepPartial<ContainerConfig> = {},
    start = true,
  ): Promise<string> {
    const { containerId } = await this.client.createContainer({
      podSandboxId: podId,
      config: this.containerConfig(name, extra),
      sandboxConfig: podConfig,
    });
    if (start) await this.client.startContainer({ containerId });
    return containerId;
  }

  /** Removes every container of this run, through Docker directly (also what the shim may have leaked). */
  async cleanup(): Promise<void> {
    try {
      this.client?.close();
      await this.shim?.close();
    } finally {
      const leftovers = this.fake
        ? []
        : await docker.listContainers({
            all: true,
            filters: { label: [`kh.run=${this.runId}`] },
          });
      await Promise.all(
        leftovers.map((c) =>
          docker
            .getContainer(c.Id)
            .remove({ force: true, v: true })
            .catch(() => {}),
        ),
      );
      if (this.dir) await rm(this.dir, { recursive: true, force: true });
    }
  }
}

/** A shim on a fake Engine for the tests of this file: started before them, closed after. */
export function fakeShim(options: Partial<DockerShimOptions> = {}): {
  fake: FakeDockerClient;
  h: ShimHarness;
} {
  const fake = new FakeDockerClient();
  const h = new ShimHarness(fake);
  beforeAll(async () => {
    await h.start(options);
  });
  afterAll(async () => {
    await h.cleanup();
  });
  return { fake, h };
}

/** The images a test asks for, present in the fake Engine under names no registry serves. */
function fakeImages(fake: FakeDockerClient): ShimHarness['images'] {
  const images = {
    pause: 'kubelet-harness/pause:fake',
    busybox: 'kubelet-harness/busybox:fake',
    httpd: 'kubelet-harness/httpd:fake',
  };
  for (const ref of Object.values(images)) fake.addImage([ref]);
  return images;
}

export async function waitFor<T>(
  fn: () => Promise<T | undefined>,
  what: string,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
