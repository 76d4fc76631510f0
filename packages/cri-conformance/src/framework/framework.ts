import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type ContainerConfig,
  ContainerState,
  type CriClient,
  CriError,
  type DeepPartial,
  isUnimplemented,
  type PodSandboxConfig,
} from '@kh/cri-api';

/** Everything a run needs to know about the backend under test. */
export interface ConformanceOptions {
  /** CRI endpoint, e.g. unix:///run/containerd/containerd.sock. */
  endpoint: string;
  /** Images the runtime already has (or can pull): a shell with busybox applets, and a web server on :80. */
  images: { busybox: string; httpd: string };
  /** A registry the runtime can pull from, holding `image` (repo:tag); image pull cases skip without it. */
  registry?: {
    /** host:port as the runtime reaches it. */
    address: string;
    /** repo:tag pushed there beforehand. Pulling and removing it must not disturb other images. */
    image: string;
    auth?: { username: string; password: string };
  };
  /**
   * Pod log directories: `runtime` is the path the runtime writes under, `local` the same directory as
   * this process sees it (they differ when the runtime runs in a node container with a shared mount).
   */
  logDir: { runtime: string; local: string };
  /** Where the suite's own process reaches host ports of pods ('' to skip the host-port case). */
  hostPortAddress: string;
  /** host_ip of host-port mappings ('' = all addresses of the node). */
  hostPortIp: string;
  /**
   * cgroup_parent of every sandbox ('' = the runtime's default). Kubelet always sets one, and some
   * runtimes (containerd 1.6) cannot report pod stats without it.
   */
  cgroupParent: string;
  /**
   * Why the runtime's streaming server (the URLs of Exec/Attach/PortForward) cannot be reached from
   * this process, e.g. a runtime in a node container serving on the node's loopback: streaming
   * cases skip with it. Unset: they run.
   */
  streamingUnreachable?: string;
  /** Only cases whose "group name" matches. */
  focus?: RegExp;
  /** Label put on every sandbox and container the suite creates: kh.run=<runId>. */
  runId: string;
  /** Per-call deadline. */
  callTimeoutMs: number;
}

export class Skip extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'Skip';
  }
}

export class AssertionError extends Error {
  override name = 'AssertionError';
}

/** Runs `call`; an UNIMPLEMENTED answer means the backend does not support it: skip, never pass. */
export async function requireSupported<T>(what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (isUnimplemented(err))
      throw new Skip(`${what} is not implemented by this runtime: ${(err as Error).message}`);
    throw err;
  }
}

/** Per-case helpers: objects it creates are tracked and removed when the case ends, pass or fail. */
export class CaseContext {
  private readonly pods: string[] = [];
  private readonly cleanups: Array<() => Promise<void>> = [];
  private counter = 0;
  readonly uid = randomBytes(4).toString('hex');

  constructor(
    readonly client: CriClient,
    readonly options: ConformanceOptions,
    readonly caseName: string,
  ) {}

  get labels(): Record<string, string> {
    return { 'kh.run': this.options.runId, 'kh.owner': 'test' };
  }

  podConfig(extra: DeepPartial<PodSandboxConfig> = {}): DeepPartial<PodSandboxConfig> {
    const n = ++this.counter;
    const name = `${this.caseName
      .replace(/[^a-z0-9]+/gi, '-')
      .toLowerCase()
      .slice(0, 40)}-${n}`;
    return {
      metadata: { name, namespace: 'cri-conformance', uid: `${this.uid}-${n}`, attempt: 0 },
      ...extra,
      labels: { ...this.labels, ...(extra.labels ?? {}) },
      linux: { cgroupParent: this.options.cgroupParent, ...(extra.linux ?? {}) },
    };
  }

  async runPod(
    extra: DeepPartial<PodSandboxConfig> = {},
  ): Promise<{ id: string; config: DeepPartial<PodSandboxConfig> }> {
    const config = this.podConfig(extra);
    const { podSandboxId } = await this.client.runPodSandbox({ config });
    this.pods.push(podSandboxId);
    return { id: podSandboxId, config };
  }

  containerConfig(name: string, extra: DeepPartial<ContainerConfig> = {}): DeepPartial<ContainerConfig> {
    return {
      metadata: { name, attempt: 0 },
      image: { image: this.options.images.busybox },
      command: ['sleep', '3600'],
      ...extra,
      labels: { ...this.labels, ...(extra.labels ?? {}) },
    };
  }

  async createContainer(
    pod: { id: string; config: DeepPartial<PodSandboxConfig> },
    name: string,
    extra: DeepPartial<ContainerConfig> = {},
  ): Promise<string> {
    const { containerId } = await this.client.createContainer({
      podSandboxId: pod.id,
      config: this.containerConfig(name, extra),
      sandboxConfig: pod.config,
    });
    return containerId;
  }

  async startedContainer(
    pod: { id: string; config: DeepPartial<PodSandboxConfig> },
    name: string,
    extra: DeepPartial<ContainerConfig> = {},
  ): Promise<string> {
    const id = await this.createContainer(pod, name, extra);
    await this.client.startContainer({ containerId: id });
    return id;
  }

  async exec(
    containerId: string,
    cmd: string[],
    timeoutSeconds = 10,
  ): Promise<{ stdout: string; stderr: string; exitCode: number }> {
    const r = await this.client.execSync({ containerId, cmd, timeout: BigInt(timeoutSeconds) });
    return {
      stdout: Buffer.from(r.stdout).toString(),
      stderr: Buffer.from(r.stderr).toString(),
      exitCode: r.exitCode,
    };
  }

  async waitForState(containerId: string, state: ContainerState, timeoutMs = 30_000) {
    return waitFor(
      async () => {
        const s = (await this.client.containerStatus({ containerId })).status;
        return s?.state === state ? s : undefined;
      },
      `container ${containerId} to reach ${ContainerState[state]}`,
      timeoutMs,
    );
  }

  /** Runs `fn` when the case ends, after its sandboxes are gone (last registered, first run). */
  onCleanup(fn: () => Promise<void>): void {
    this.cleanups.push(fn);
  }

  /**
   * A fresh directory that both this process and the runtime see (under the log directory, which
   * the options map between the two), removed when the case ends: for host paths the runtime mounts
   * or reads, such as seccomp profiles.
   */
  async hostDir(name: string): Promise<{ runtime: string; local: string }> {
    const dir = `${this.uid}-${name}-${randomBytes(3).toString('hex')}`;
    const paths = {
      runtime: join(this.options.logDir.runtime, dir),
      local: join(this.options.logDir.local, dir),
    };
    await mkdir(paths.local, { recursive: true });
    this.onCleanup(() => rm(paths.local, { recursive: true, force: true }));
    return paths;
  }

  /** Stops and removes every sandbox this case created (which removes their containers), then runs onCleanup's. */
  async cleanup(): Promise<void> {
    for (const id of this.pods.reverse()) {
      await this.client.stopPodSandbox({ podSandboxId: id }).catch(() => undefined);
      await this.client.removePodSandbox({ podSandboxId: id }).catch(() => undefined);
    }
    for (const fn of this.cleanups.reverse()) await fn().catch(() => undefined);
  }
}

export async function waitFor<T>(
  fn: () => Promise<T | undefined>,
  what: string,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      if (err instanceof Skip) throw err;
      lastError = err;
    }
    if (Date.now() > deadline) {
      throw new AssertionError(
        `timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (last error: ${(lastError as Error).message})` : ''}`,
      );
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

export interface ConformanceCase {
  group: string;
  name: string;
  run(ctx: CaseContext): Promise<void>;
}

/** Groups declare their cases with this, so a reader finds a case by its group file. */
export function defineGroup(
  group: string,
  cases: Record<string, (ctx: CaseContext) => Promise<void>>,
): ConformanceCase[] {
  return Object.entries(cases).map(([name, run]) => ({ group, name, run }));
}

export function describeError(err: unknown): string {
  if (err instanceof CriError) return `${err.codeName}: ${err.message}`;
  return err instanceof Error ? err.message : String(err);
}
