import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { realClock, type TimerClock } from '@kh/apimachinery';
import { criMethods } from '../api/methods.js';
import { CgroupDriver, Container, PodSandbox } from '../gen/runtime/v1/api.js';
import { type CriServer, serveCri } from '../server/serve.js';
import { toContainer, toPodSandbox } from './convert.js';
import { imageService } from './image_service.js';
import { FAKE_RUNTIME_NAME, runtimeService } from './runtime_service.js';
import { FakeScript } from './script.js';
import { FakeState, type ImageFsScript } from './state.js';

export interface FakeRuntimeOptions {
  /** Unix socket to serve on. Default: a fresh temp dir, removed again by stop(). */
  socketPath?: string;
  /** Instead of socketPath: any serveCri address, e.g. "tcp://127.0.0.1:0". */
  address?: string;
  /** Time source for timestamps, scripted exits and exec delays. Default: the system clock. */
  clock?: TimerClock;
  /** RuntimeClass handlers accepted besides "". Default ["runc"]. */
  runtimeHandlers?: string[];
  /** Reported by RuntimeConfig. Default CGROUPFS (this project's hosts use cgroupfs). */
  cgroupDriver?: CgroupDriver;
  /** Every handler announces user namespace support in Status, as containerd 2 does. Default false. */
  userNamespaces?: boolean;
}

export interface RecordedCall {
  /** RPC name as in the proto, e.g. "CreateContainer". */
  method: string;
  request: unknown;
}

const methodNames = new Map(criMethods.flatMap((m) => [[m.name, m.name] as const, [m.key, m.name] as const]));

/**
 * An in-memory CRI runtime served over a real gRPC socket, for unit tests of everything above the
 * CRI. Sandboxes, containers and images follow containerd's state machine and error codes;
 * `script` decides container exits, exec results, pulls and stats.
 */
export class FakeRuntime {
  readonly script = new FakeScript();
  readonly clock: TimerClock;
  /** RPC names in call order, e.g. ["Version", "RunPodSandbox", ...]. */
  readonly calls: string[] = [];
  /** Every call with its decoded request, in order. */
  readonly callLog: RecordedCall[] = [];
  readonly #state: FakeState;
  readonly #failures = new Map<string, Error[]>();
  #server: CriServer | undefined;
  #tempDir: string | undefined;

  private constructor(options: FakeRuntimeOptions) {
    this.clock = options.clock ?? realClock;
    this.#state = new FakeState(this.clock, this.script);
  }

  static async start(options: FakeRuntimeOptions = {}): Promise<FakeRuntime> {
    const fake = new FakeRuntime(options);
    let address = options.socketPath ?? options.address;
    if (!address) {
      fake.#tempDir = await mkdtemp(path.join(tmpdir(), 'kh-fake-cri-'));
      address = path.join(fake.#tempDir, 'cri.sock');
    }
    const runtime = runtimeService(fake.#state, {
      runtimeHandlers: options.runtimeHandlers ?? ['runc'],
      cgroupDriver: options.cgroupDriver ?? CgroupDriver.CGROUPFS,
      userNamespaces: options.userNamespaces ?? false,
    });
    const backend = {
      name: FAKE_RUNTIME_NAME,
      runtime: fake.#instrument(runtime),
      image: fake.#instrument(imageService(fake.#state)),
    };
    fake.#server = await serveCri(backend, { address });
    return fake;
  }

  /** Records each call and applies failNext before the real handler runs. */
  #instrument<H extends object>(handlers: H): H {
    const wrapped: Record<string, unknown> = {};
    for (const [key, fn] of Object.entries(handlers) as [string, (req: unknown, ctx: unknown) => unknown][]) {
      const method = methodNames.get(key) ?? key;
      wrapped[key] = (req: unknown, ctx: unknown) => {
        this.calls.push(method);
        this.callLog.push({ method, request: req });
        const err = this.#failures.get(method)?.shift();
        if (err) throw err;
        return fn(req, ctx);
      };
    }
    return wrapped as H;
  }

  /** Client-ready endpoint, e.g. "unix:///tmp/kh-fake-cri-x/cri.sock". */
  get endpoint(): string {
    if (!this.#server) throw new Error('FakeRuntime is not started');
    return this.#server.endpoint;
  }

  /**
   * The next call of `method` ("RunPodSandbox" or "runPodSandbox") fails with `error` (a CriError
   * keeps its code; other errors become INTERNAL). Repeated calls queue further failures.
   */
  failNext(method: string, error: Error, times = 1): this {
    const name = methodNames.get(method);
    if (!name) throw new TypeError(`failNext: unknown CRI method "${method}"`);
    const queue = this.#failures.get(name) ?? [];
    for (let i = 0; i < times; i++) queue.push(error);
    this.#failures.set(name, queue);
    return this;
  }

  /**
   * Puts an image in the local store (as if pulled); returns its image id ("sha256:..."). A pinned
   * image is one the kubelet's image GC must never remove (like the sandbox image).
   */
  addImage(ref: string, sizeBytes: number | bigint, options: { pinned?: boolean } = {}): string {
    return this.#state.addImage(ref, BigInt(sizeBytes), options.pinned).id;
  }

  /** Scripts ImageFsInfo; fields left out are derived from the image store. */
  setImageFs(fs: ImageFsScript): this {
    this.#state.imageFs = { ...fs };
    return this;
  }

  /** Every pod CIDR UpdateRuntimeConfig brought, in order (what the kubelet passed on from its Node). */
  get podCidrs(): readonly string[] {
    return this.#state.podCidrs;
  }

  get imageFs(): Readonly<ImageFsScript> {
    return this.#state.imageFs;
  }

  /** Drives the RuntimeReady condition of Status (false: "runtime down"). */
  setRuntimeReady(ready: boolean, reason = ready ? '' : 'RuntimeDown', message = ''): this {
    this.#state.health.runtime = { status: ready, reason, message };
    return this;
  }

  /** Drives the NetworkReady condition of Status (false: e.g. CNI not initialised). */
  setNetworkReady(ready: boolean, reason = ready ? '' : 'NetworkPluginNotReady', message = ''): this {
    this.#state.health.network = { status: ready, reason, message };
    return this;
  }

  /** Makes a running container exit now, e.g. to simulate a crash or an OOM kill. */
  exitContainer(containerId: string, exitCode: number, reason?: string, message?: string): void {
    this.#state.exitContainer(this.#state.container(containerId).id, exitCode, reason, message);
  }

  /** Current sandboxes as ListPodSandbox would return them. */
  sandboxes(): PodSandbox[] {
    return [...this.#state.sandboxes.values()].map((sb) => PodSandbox.fromPartial(toPodSandbox(sb)));
  }

  /** Current containers as ListContainers would return them. */
  containers(): Container[] {
    return [...this.#state.containers.values()].map((c) => Container.fromPartial(toContainer(c)));
  }

  /** Number of open GetContainerEvents streams (lets a test wait until a watcher is subscribed). */
  get eventSubscribers(): number {
    return this.#state.events.subscriberCount;
  }

  /** Closes the server (ending event streams) and cancels pending scripted exits. */
  async stop(): Promise<void> {
    for (const c of this.#state.containers.values()) c.cancelExit?.();
    await this.#server?.close();
    this.#server = undefined;
    if (this.#tempDir) await rm(this.#tempDir, { recursive: true, force: true });
  }
}
