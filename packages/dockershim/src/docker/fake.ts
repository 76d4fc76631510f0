import { randomBytes } from 'node:crypto';
import { Duplex, PassThrough, Readable } from 'node:stream';
import type {
  AttachOptions,
  ContainerCreateRequest,
  ContainerInspect,
  ContainerStatsSample,
  ContainerSummary,
  DiskUsage,
  DockerClient,
  DockerEvent,
  EngineInfo,
  EngineVersion,
  ExecCreateOptions,
  ExecInspect,
  ImageInspect,
  ImageSummary,
  JsonStream,
  ListContainersOptions,
  LogsOptions,
  PullOptions,
  ResourceUpdate,
  TerminalSize,
} from './client.js';
import { EngineError } from './errors.js';
import { StreamType } from './stream.js';

/** What a command run by the fake prints and returns (the main process's or an exec's). */
export interface FakeProcessResult {
  stdout?: string;
  stderr?: string;
  exitCode?: number;
}

/** Decides what an exec prints and returns; the default prints nothing and exits 0. */
export type FakeExecHandler = (container: ContainerInspect, cmd: string[]) => FakeProcessResult;

interface FakeContainer {
  inspect: ContainerInspect;
  request: ContainerCreateRequest;
  logs: { stream: StreamType; timestamp: string; text: string }[];
  followers: Set<PassThrough>;
  /** Set by updateContainer. */
  resources: ResourceUpdate;
  sizeRw: number;
  /** Processes in the container's cgroup while it runs (pids.current). */
  pids: number;
}

interface FakeExec {
  id: string;
  containerId: string;
  options: ExecCreateOptions;
  inspect: ExecInspect;
}

const ZERO_TIME = '0001-01-01T00:00:00Z';
const hexId = () => randomBytes(32).toString('hex');

/** One Docker multiplexed frame: stream byte, three zero bytes, payload size (big-endian), payload. */
function frame(stream: StreamType, payload: Buffer): Buffer {
  const header = Buffer.alloc(8);
  header.writeUInt8(stream, 0);
  header.writeUInt32BE(payload.length, 4);
  return Buffer.concat([header, payload]);
}

function nanoTime(): { iso: string; nanos: bigint } {
  const ms = Date.now();
  const nanos = BigInt(ms) * 1_000_000n + BigInt(Math.floor(Math.random() * 1_000_000));
  const iso = `${new Date(ms).toISOString().slice(0, 19)}.${String(nanos % 1_000_000_000n).padStart(9, '0')}Z`;
  return { iso, nanos };
}

/**
 * An Engine in memory, enough for the CRI verbs: containers with Docker's states, names, labels and
 * filters; images by tag, digest and id; execs whose output a handler decides; logs a test writes;
 * the event stream with its filters; and an Engine that goes down (`down`). It starts no process:
 * what needs one (kills of exec processes, pod namespaces, CNI, mounts) is for the real-engine
 * tests. Errors have the Engine's shape (404 "No such container: x", 409 name conflicts).
 */
export class FakeDockerClient implements DockerClient {
  readonly containers = new Map<string, FakeContainer>();
  readonly images = new Map<string, ImageInspect>();
  readonly execs = new Map<string, FakeExec>();
  readonly networks = new Set(['bridge', 'host', 'none']);
  /** Every call, by operation name, in order: what a test asserts a verb asked of the Engine. */
  readonly calls: string[] = [];
  /** While true every call fails as a refused connection does. */
  down = false;
  execHandler: FakeExecHandler = () => ({});
  /** What a started container prints at once (then runs until stopped), by image reference. */
  readonly programs = new Map<string, FakeProcessResult & { exits?: boolean }>();
  /** Images a pull finds, by repository:tag. */
  readonly registry = new Map<string, ImageInspect>();
  private readonly subscribers = new Set<{ stream: PassThrough; filters: Record<string, string[]> }>();
  private holding: ((filters: Record<string, string[]>) => boolean) | undefined;
  private readonly held: { stream: PassThrough; line: string }[] = [];
  /**
   * What comes between the next start in the Engine and its answer reaching the client: a test
   * holds the answer back (a busy dockerd), or throws as a connection dropped after dockerd acted.
   */
  nextStartAnswer: (() => Promise<void>) | undefined;
  engineVersion: EngineVersion = { Version: '26.1.5', ApiVersion: '1.45' };
  rootDir = '/var/lib/docker';
  /**
   * How many list calls after a stop still show the container running: Docker's stop returns once
   * the container's state says stopped, and `docker ps` reads a view the daemon updates just after
   * (handleContainerExit's SetStopped, then CheckpointTo the replica).
   */
  listLagAfterStop = 0;
  private readonly staleRunning = new Map<string, number>();

  /** Adds an image under its tags; returns its id. */
  addImage(tags: string[], extra: Partial<ImageInspect> = {}): string {
    const id = `sha256:${hexId()}`;
    const digests = tags.map((t) => `${t.replace(/:[^/:]*$/, '')}@sha256:${hexId()}`);
    this.images.set(id, { Id: id, RepoTags: tags, RepoDigests: digests, Size: 1024, ...extra });
    return id;
  }

  private enter(operation: string): void {
    this.calls.push(operation);
    if (this.down)
      throw Object.assign(new Error('connect ECONNREFUSED /var/run/docker.sock'), { code: 'ECONNREFUSED' });
  }

  private container(idOrName: string): FakeContainer {
    const c = this.findContainer(idOrName);
    if (!c) throw new EngineError(404, `No such container: ${idOrName}`);
    return c;
  }

  private findContainer(idOrName: string): FakeContainer | undefined {
    const exact = this.containers.get(idOrName);
    if (exact) return exact;
    const name = `/${idOrName.replace(/^\//, '')}`;
    for (const c of this.containers.values()) if (c.inspect.Name === name) return c;
    const byPrefix = [...this.containers.values()].filter((c) => c.inspect.Id.startsWith(idOrName));
    return byPrefix.length === 1 ? byPrefix[0] : undefined;
  }

  private image(ref: string): ImageInspect | undefined {
    const direct = this.images.get(ref) ?? this.images.get(`sha256:${ref}`);
    if (direct) return direct;
    const tagged = ref.includes(':') || ref.includes('@') ? ref : `${ref}:latest`;
    for (const i of this.images.values())
      if (i.RepoTags?.includes(tagged) || i.RepoDigests?.includes(ref)) return i;
    return undefined;
  }

  private emit(type: string, action: string, id: string, attributes: Record<string, string>): void {
    const { nanos } = nanoTime();
    const event: DockerEvent & { timeNano: number } = {
      Type: type,
      Action: action,
      Actor: { ID: id, Attributes: attributes },
      time: Number(nanos / 1_000_000_000n),
      timeNano: Number(nanos),
    };
    // timeNano exceeds 2^53: write its digits exactly, as the Engine does.
    const line = `${JSON.stringify(event).replace(/"timeNano":\d+/, `"timeNano":${nanos}`)}\n`;
    for (const s of this.subscribers) {
      if (!matches(s.filters, event)) continue;
      if (this.holding?.(s.filters)) this.held.push({ stream: s.stream, line });
      else s.stream.write(line);
    }
  }

  private containerEvent(c: FakeContainer, action: string, extra: Record<string, string> = {}): void {
    this.emit('container', action, c.inspect.Id, {
      ...(c.inspect.Config.Labels ?? {}),
      name: c.inspect.Name.slice(1),
      image: c.inspect.Config.Image,
      ...extra,
    });
  }

  async ping(): Promise<void> {
    this.enter('ping');
  }

  async version(): Promise<EngineVersion> {
    this.enter('version');
    return { ...this.engineVersion };
  }

  async info(): Promise<EngineInfo> {
    this.enter('info');
    return { DockerRootDir: this.rootDir, CgroupDriver: 'systemd' };
  }

  async diskUsage(): Promise<DiskUsage> {
    this.enter('diskUsage');
    return {
      LayersSize: [...this.images.values()].reduce((n, i) => n + i.Size, 0),
      Containers: [...this.containers.values()].map((c) => ({ SizeRw: c.sizeRw })),
    };
  }

  async inspectNetwork(name: string): Promise<void> {
    this.enter('inspectNetwork');
    if (!this.networks.has(name)) throw new EngineError(404, `network ${name} not found`);
  }

  async listContainers(options: ListContainersOptions): Promise<ContainerSummary[]> {
    this.enter('listContainers');
    const f = options.filters ?? {};
    const status = (c: FakeContainer) =>
      this.staleRunning.has(c.inspect.Id) ? 'running' : c.inspect.State.Status;
    const listed = [...this.containers.values()]
      .filter((c) => options.all || status(c) === 'running')
      .filter((c) => !f.id || f.id.some((id) => c.inspect.Id.startsWith(id)))
      .filter((c) => !f.name || f.name.some((n) => c.inspect.Name.includes(n)))
      .filter((c) => !f.status || f.status.includes(status(c)))
      .filter((c) => (f.label ?? []).every((l) => hasLabel(c.inspect.Config.Labels ?? {}, l)))
      .map((c) => ({
        Id: c.inspect.Id,
        Names: [c.inspect.Name],
        Image: c.inspect.Config.Image,
        ImageID: c.inspect.Image,
        Created: Math.floor(Date.parse(c.inspect.Created) / 1000),
        State: status(c),
        Labels: { ...(c.inspect.Config.Labels ?? {}) },
        ...(options.size ? { SizeRw: c.sizeRw } : {}),
      }));
    for (const [id, left] of this.staleRunning)
      if (left > 1) this.staleRunning.set(id, left - 1);
      else this.staleRunning.delete(id);
    return listed;
  }

  async inspectContainer(idOrName: string): Promise<ContainerInspect> {
    this.enter('inspectContainer');
    return structuredClone(this.container(idOrName).inspect);
  }

  async createContainer(request: ContainerCreateRequest): Promise<string> {
    this.enter('createContainer');
    const name = `/${request.name}`;
    const clash = [...this.containers.values()].find((c) => c.inspect.Name === name);
    if (clash)
      throw new EngineError(
        409,
        `Conflict. The container name "${name}" is already in use by container "${clash.inspect.Id}". You have to remove (or rename) that container to be able to reuse that name.`,
      );
    const image = this.image(request.Image);
    if (!image) throw new EngineError(404, `No such image: ${request.Image}`);
    const id = hexId();
    const hc = request.HostConfig;
    const c: FakeContainer = {
      request: structuredClone(request),
      inspect: {
        Id: id,
        Name: name,
        Created: nanoTime().iso,
        Image: image.Id,
        ResolvConfPath: `${this.rootDir}/containers/${id}/resolv.conf`,
        State: {
          Status: 'created',
          Running: false,
          OOMKilled: false,
          Pid: 0,
          ExitCode: 0,
          Error: '',
          StartedAt: ZERO_TIME,
          FinishedAt: ZERO_TIME,
        },
        Config: {
          Hostname: request.Hostname ?? id.slice(0, 12),
          Image: request.Image,
          Labels: { ...(request.Labels ?? {}) },
          Tty: request.Tty ?? false,
          OpenStdin: request.OpenStdin ?? false,
          User: request.User ?? '',
        },
        HostConfig: {
          NetworkMode: hc.NetworkMode ?? 'default',
          CgroupParent: hc.CgroupParent ?? '',
          Mounts: hc.Mounts ?? null,
        },
        Mounts: [
          ...(hc.Binds ?? []).map(parseBind),
          ...(hc.Mounts ?? []).map((m) => ({
            Source: m.Source,
            Destination: m.Target,
            RW: false,
            Propagation: m.BindOptions.Propagation,
          })),
        ],
        NetworkSettings: { Networks: {} },
      },
      logs: [],
      followers: new Set(),
      resources: {},
      sizeRw: 0,
      pids: 1,
    };
    this.containers.set(id, c);
    this.containerEvent(c, 'create');
    return id;
  }

  async startContainer(id: string): Promise<void> {
    this.enter('startContainer');
    const c = this.container(id);
    if (c.inspect.State.Running) return;
    const pid = 10_000 + Math.floor(Math.random() * 50_000);
    const network = c.inspect.HostConfig.NetworkMode ?? '';
    const networks: ContainerInspect['NetworkSettings']['Networks'] = {};
    if (network === 'bridge' || (this.networks.has(network) && !['host', 'none'].includes(network)))
      networks[network] = {
        IPAddress: `172.17.${Math.floor(Math.random() * 250)}.${2 + Math.floor(Math.random() * 250)}`,
      };
    Object.assign(c.inspect.State, { Status: 'running', Running: true, Pid: pid, StartedAt: nanoTime().iso });
    c.inspect.NetworkSettings = { Networks: networks };
    this.containerEvent(c, 'start');
    const program = this.programs.get(c.inspect.Config.Image);
    if (program?.stdout) this.writeLog(id, StreamType.Stdout, program.stdout);
    if (program?.stderr) this.writeLog(id, StreamType.Stderr, program.stderr);
    if (program?.exits) this.exit(id, program.exitCode ?? 0);
    const answer = this.nextStartAnswer;
    this.nextStartAnswer = undefined;
    await answer?.();
  }

  /** Appends to a container's output, as its process would print it. */
  writeLog(id: string, stream: StreamType, text: string): void {
    const c = this.container(id);
    const entry = { stream, timestamp: nanoTime().iso, text };
    c.logs.push(entry);
    for (const f of c.followers) f.write(this.logChunk(c, entry));
  }

  /** The container's main process exits with `exitCode` (137 with `oomKilled`). */
  exit(id: string, exitCode: number, oomKilled = false): void {
    const c = this.container(id);
    if (!c.inspect.State.Running) return;
    Object.assign(c.inspect.State, {
      Status: 'exited',
      Running: false,
      Pid: 0,
      ExitCode: exitCode,
      OOMKilled: oomKilled,
      FinishedAt: nanoTime().iso,
    });
    if (oomKilled) this.containerEvent(c, 'oom');
    this.containerEvent(c, 'die');
    for (const f of c.followers) f.end();
    c.followers.clear();
  }

  /**
   * The Engine handles the cgroup's OOM notification after the exit it caused (containerd publishes
   * the two apart): the `oom` event, and `State.OOMKilled` only from Docker 24 on (API 1.43); 20.10
   * keeps the flag the exit carried.
   */
  oomAfterExit(id: string): void {
    const c = this.container(id);
    const [major = 0, minor = 0] = this.engineVersion.ApiVersion.split('.').map(Number);
    if (major > 1 || minor >= 43) c.inspect.State.OOMKilled = true;
    this.containerEvent(c, 'oom');
  }

  /** Docker's stop of a process that ignores the stop signal: the signal, then SIGKILL (137). */
  async stopContainer(id: string, _timeoutSeconds: number): Promise<void> {
    this.enter('stopContainer');
    const c = this.container(id);
    if (!c.inspect.State.Running) return;
    this.killEvent(c, 15);
    this.killEvent(c, 9);
    this.exit(c.inspect.Id, 137);
    this.containerEvent(c, 'stop');
    if (this.listLagAfterStop > 0) this.staleRunning.set(c.inspect.Id, this.listLagAfterStop);
  }

  async removeContainer(id: string): Promise<void> {
    this.enter('removeContainer');
    const c = this.container(id);
    if (c.inspect.State.Running) this.killEvent(c, 9);
    this.exit(c.inspect.Id, 137);
    this.containers.delete(c.inspect.Id);
    this.containerEvent(c, 'destroy');
  }

  /** Docker's `kill` event, which it emits as it signals the container's main process. */
  private killEvent(c: FakeContainer, signal: number): void {
    this.containerEvent(c, 'kill', { signal: String(signal) });
  }

  async updateContainer(id: string, update: ResourceUpdate): Promise<void> {
    this.enter('updateContainer');
    const c = this.container(id);
    c.resources = { ...c.resources, ...update };
    // As Docker's inspect does, the HostConfig shows the update.
    Object.assign(c.inspect.HostConfig, update);
    this.containerEvent(c, 'update');
  }

  /** The resources the container was created with, updated by updateContainer. */
  resourcesOf(id: string): ResourceUpdate {
    const c = this.container(id);
    const hc = c.request.HostConfig;
    const created: ResourceUpdate = {
      CpuShares: hc.CpuShares,
      CpuQuota: hc.CpuQuota,
      CpuPeriod: hc.CpuPeriod,
      Memory: hc.Memory,
      MemorySwap: hc.MemorySwap,
    };
    return { ...created, ...c.resources };
  }

  /** The create request the Engine was given for this container. */
  requestOf(id: string): ContainerCreateRequest {
    return structuredClone(this.container(id).request);
  }

  /** Sets how many processes a container's stats report (one, its init, until told). */
  setPids(id: string, pids: number): void {
    this.container(id).pids = pids;
  }

  async containerStats(id: string): Promise<ContainerStatsSample> {
    this.enter('containerStats');
    const c = this.container(id);
    const seconds = (Date.now() - Date.parse(c.inspect.State.StartedAt)) / 1000;
    return {
      read: nanoTime().iso,
      cpu_stats: { cpu_usage: { total_usage: Math.round(seconds * 1e7) } },
      memory_stats: {
        usage: 4 << 20,
        limit: c.request.HostConfig.Memory ?? 8 << 30,
        stats: { inactive_file: 1 << 20 },
      },
      pids_stats: { current: c.pids },
      networks: { eth0: { rx_bytes: 100, rx_errors: 0, tx_bytes: 50, tx_errors: 0 } },
    };
  }

  private logChunk(c: FakeContainer, e: FakeContainer['logs'][number]): Buffer {
    const line = Buffer.from(`${e.timestamp} ${e.text}`);
    return c.inspect.Config.Tty ? line : frame(e.stream, line);
  }

  async containerLogs(id: string, options: LogsOptions): Promise<Readable> {
    this.enter('containerLogs');
    const c = this.container(id);
    const since = options.since ? sinceNanos(options.since) : 0n;
    const past = c.logs.filter((e) => isoNanos(e.timestamp) >= since).map((e) => this.logChunk(c, e));
    if (!options.follow || !c.inspect.State.Running) return Readable.from(past);
    const out = new PassThrough();
    for (const chunk of past) out.write(chunk);
    c.followers.add(out);
    out.on('close', () => c.followers.delete(out));
    return out;
  }

  async attachContainer(id: string, _options: AttachOptions): Promise<Duplex> {
    this.enter('attachContainer');
    const c = this.container(id);
    if (!c.inspect.State.Running) throw new EngineError(409, `Container ${id} is not running`);
    const out = new PassThrough();
    c.followers.add(out);
    return Duplex.from({ readable: out, writable: new PassThrough() });
  }

  async resizeContainerTty(id: string, _size: TerminalSize): Promise<void> {
    this.enter('resizeContainerTty');
    this.container(id);
  }

  async createExec(containerId: string, options: ExecCreateOptions): Promise<string> {
    this.enter('createExec');
    const c = this.container(containerId);
    if (!c.inspect.State.Running) throw new EngineError(409, `Container ${containerId} is not running`);
    const id = hexId();
    this.execs.set(id, {
      id,
      containerId: c.inspect.Id,
      options,
      inspect: { Running: false, ExitCode: null, Pid: 0, ContainerID: c.inspect.Id },
    });
    return id;
  }

  async startExec(execId: string, options: { stdin: boolean; tty: boolean }): Promise<Duplex> {
    this.enter('startExec');
    const exec = this.execs.get(execId);
    if (!exec) throw new EngineError(404, `No such exec instance: ${execId}`);
    const c = this.container(exec.containerId);
    const result = this.execHandler(structuredClone(c.inspect), exec.options.Cmd);
    const chunks: Buffer[] = [];
    for (const [stream, text] of [
      [StreamType.Stdout, result.stdout],
      [StreamType.Stderr, result.stderr],
    ] as const) {
      if (!text) continue;
      chunks.push(options.tty ? Buffer.from(text) : frame(stream, Buffer.from(text)));
    }
    exec.inspect = { Running: false, ExitCode: result.exitCode ?? 0, Pid: 0, ContainerID: c.inspect.Id };
    return Duplex.from({ readable: Readable.from(chunks), writable: new PassThrough() });
  }

  async resizeExecTty(execId: string, _size: TerminalSize): Promise<void> {
    this.enter('resizeExecTty');
    if (!this.execs.has(execId)) throw new EngineError(404, `No such exec instance: ${execId}`);
  }

  async inspectExec(execId: string): Promise<ExecInspect> {
    this.enter('inspectExec');
    const exec = this.execs.get(execId);
    if (!exec) throw new EngineError(404, `No such exec instance: ${execId}`);
    return { ...exec.inspect };
  }

  async events(filters: Record<string, string[]>): Promise<JsonStream> {
    this.enter('events');
    const subscriber = { stream: new PassThrough(), filters };
    this.subscribers.add(subscriber);
    subscriber.stream.on('close', () => this.subscribers.delete(subscriber));
    return subscriber.stream;
  }

  /**
   * Holds back the events of the subscriptions `which` selects (by their filters) until
   * releaseEvents(): the Engine promises no order between subscriptions, so no consumer may count
   * on another one having seen an event.
   */
  holdEvents(which: (filters: Record<string, string[]>) => boolean): void {
    this.holding = which;
  }

  releaseEvents(): void {
    this.holding = undefined;
    for (const { stream, line } of this.held.splice(0)) stream.write(line);
  }

  /** Ends every event stream, as a restarting Engine does. */
  breakEventStreams(): void {
    for (const s of this.subscribers) s.stream.end();
    this.subscribers.clear();
  }

  async listImages(): Promise<ImageSummary[]> {
    this.enter('listImages');
    return [...this.images.values()].map((i) => ({
      Id: i.Id,
      RepoTags: i.RepoTags ?? null,
      RepoDigests: i.RepoDigests ?? null,
      Size: i.Size,
    }));
  }

  async inspectImage(ref: string): Promise<ImageInspect> {
    this.enter('inspectImage');
    const image = this.image(ref);
    if (!image) throw new EngineError(404, `No such image: ${ref}`);
    return structuredClone(image);
  }

  async pullImage(options: PullOptions): Promise<JsonStream> {
    this.enter('pullImage');
    const ref = `${options.repository}:${options.tag}`;
    const found = this.registry.get(ref);
    const lines = found
      ? [
          { status: `Pulling from ${options.repository}` },
          { status: `Status: Downloaded newer image for ${ref}` },
        ]
      : [
          {
            error: `manifest for ${ref} not found`,
            errorDetail: { message: `manifest for ${ref} not found: manifest unknown` },
          },
        ];
    if (found) {
      const existing = this.images.get(found.Id);
      const tags = [...new Set([...(existing?.RepoTags ?? []), ...(found.RepoTags ?? []), ref])];
      this.images.set(found.Id, { ...found, RepoTags: tags });
      this.emit('image', 'pull', ref, { name: ref });
    }
    return Readable.from(lines.map((l) => `${JSON.stringify(l)}\n`));
  }

  async removeImage(ref: string): Promise<void> {
    this.enter('removeImage');
    const image = this.image(ref);
    if (!image) throw new EngineError(404, `No such image: ${ref}`);
    const byTag = image.RepoTags?.includes(ref) && (image.RepoTags?.length ?? 0) > 1;
    if (byTag) image.RepoTags = image.RepoTags?.filter((t) => t !== ref);
    else this.images.delete(image.Id);
    this.emit('image', byTag ? 'untag' : 'delete', image.Id, { name: ref });
  }
}

/** `source:target[:opts]`, opts a comma list of `ro`/`rw` and a propagation mode. */
function parseBind(bind: string): ContainerInspect['Mounts'][number] {
  const [source = '', target = '', opts = ''] = bind.split(':');
  const options = opts.split(',');
  const propagation = options.find((o) => /^r?(private|slave|shared)$/.test(o));
  return {
    Source: source,
    Destination: target,
    RW: !options.includes('ro'),
    Propagation: propagation ?? 'rprivate',
  };
}

function hasLabel(labels: Record<string, string>, filter: string): boolean {
  const eq = filter.indexOf('=');
  return eq < 0 ? filter in labels : labels[filter.slice(0, eq)] === filter.slice(eq + 1);
}

function matches(filters: Record<string, string[]>, event: DockerEvent): boolean {
  if (filters.type && !filters.type.includes(event.Type ?? '')) return false;
  if (filters.event && !filters.event.includes(event.Action ?? '')) return false;
  const attrs = event.Actor?.Attributes ?? {};
  return (filters.label ?? []).every((l) => hasLabel(attrs, l));
}

function isoNanos(iso: string): bigint {
  const m = /^(.*?)(?:\.(\d{1,9}))?Z$/.exec(iso);
  if (!m) return 0n;
  return BigInt(Date.parse(`${m[1]}Z`)) * 1_000_000n + BigInt((m[2] ?? '').padEnd(9, '0'));
}

function sinceNanos(since: string): bigint {
  const [s, n = '0'] = since.split('.');
  return BigInt(s ?? '0') * 1_000_000_000n + BigInt(n.padEnd(9, '0').slice(0, 9));
}
