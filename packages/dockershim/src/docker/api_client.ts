import { type Duplex, Readable } from 'node:stream';
import Dockerode from 'dockerode';
import type {
  AttachOptions,
  ContainerCreateRequest,
  ContainerInspect,
  ContainerStatsSample,
  ContainerSummary,
  DiskUsage,
  DockerClient,
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

export const DEFAULT_DOCKER_ENDPOINT = 'unix:///var/run/docker.sock';

/** --docker-endpoint forms: unix:///path, /path, tcp://host:port (plain HTTP). */
export function dockerOptions(endpoint: string): Dockerode.DockerOptions {
  if (endpoint.startsWith('unix://')) return { socketPath: endpoint.slice('unix://'.length) };
  if (endpoint.startsWith('/')) return { socketPath: endpoint };
  if (endpoint.startsWith('tcp://') || endpoint.startsWith('http://')) {
    const url = new URL(endpoint.replace(/^tcp:/, 'http:'));
    return { protocol: 'http', host: url.hostname, port: Number(url.port || 2375) };
  }
  throw new Error(
    `unsupported docker endpoint ${JSON.stringify(endpoint)} (use unix:///path or tcp://host:port)`,
  );
}

export function connectDocker(endpoint: string = DEFAULT_DOCKER_ENDPOINT): Dockerode {
  return new Dockerode(dockerOptions(endpoint));
}

/** The Engine API over docker-modem: each DockerClient call is one HTTP request. */
export class DockerodeClient implements DockerClient {
  constructor(private readonly api: Dockerode) {}

  static connect(endpoint: string = DEFAULT_DOCKER_ENDPOINT): DockerodeClient {
    return new DockerodeClient(connectDocker(endpoint));
  }

  async ping(): Promise<void> {
    await this.api.ping();
  }

  version(): Promise<EngineVersion> {
    return this.api.version();
  }

  async info(): Promise<EngineInfo> {
    return (await this.api.info()) as EngineInfo;
  }

  async diskUsage(): Promise<DiskUsage> {
    return (await this.api.df()) as DiskUsage;
  }

  async inspectNetwork(name: string): Promise<void> {
    await this.api.getNetwork(name).inspect();
  }

  async listContainers(options: ListContainersOptions): Promise<ContainerSummary[]> {
    return (await this.api.listContainers(options)) as ContainerSummary[];
  }

  async inspectContainer(idOrName: string): Promise<ContainerInspect> {
    return (await this.api.getContainer(idOrName).inspect()) as unknown as ContainerInspect;
  }

  async createContainer(request: ContainerCreateRequest): Promise<string> {
    return (await this.api.createContainer(request as Dockerode.ContainerCreateOptions)).id;
  }

  async startContainer(id: string): Promise<void> {
    await this.api.getContainer(id).start();
  }

  async stopContainer(id: string, timeoutSeconds: number): Promise<void> {
    await this.api.getContainer(id).stop({ t: timeoutSeconds });
  }

  async removeContainer(id: string): Promise<void> {
    await this.api.getContainer(id).remove({ force: true, v: true });
  }

  async updateContainer(id: string, update: ResourceUpdate): Promise<void> {
    await this.api.getContainer(id).update(update);
  }

  async containerStats(id: string): Promise<ContainerStatsSample> {
    return (await this.api
      .getContainer(id)
      .stats({ stream: false, 'one-shot': true } as { stream: false })) as unknown as ContainerStatsSample;
  }

  async containerLogs(id: string, options: LogsOptions): Promise<Readable> {
    const result = (await this.api.getContainer(id).logs({
      follow: options.follow,
      stdout: true,
      stderr: true,
      timestamps: true,
      ...(options.since ? { since: options.since } : {}),
    } as Dockerode.ContainerLogsOptions & { follow: true })) as Readable | Buffer;
    // Without follow, docker-modem buffers the whole answer.
    return Buffer.isBuffer(result) ? Readable.from([result]) : result;
  }

  async attachContainer(id: string, options: AttachOptions): Promise<Duplex> {
    return (await this.api
      .getContainer(id)
      .attach({ stream: true, logs: false, hijack: true, ...options })) as Duplex;
  }

  async resizeContainerTty(id: string, size: TerminalSize): Promise<void> {
    await this.api.getContainer(id).resize({ h: size.height, w: size.width });
  }

  async createExec(containerId: string, options: ExecCreateOptions): Promise<string> {
    return (await this.api.getContainer(containerId).exec(options)).id;
  }

  async startExec(execId: string, options: { stdin: boolean; tty: boolean }): Promise<Duplex> {
    return (await this.api
      .getExec(execId)
      .start({ hijack: true, stdin: options.stdin, Tty: options.tty })) as Duplex;
  }

  async resizeExecTty(execId: string, size: TerminalSize): Promise<void> {
    await this.api.getExec(execId).resize({ h: size.height, w: size.width });
  }

  async inspectExec(execId: string): Promise<ExecInspect> {
    return (await this.api.getExec(execId).inspect()) as ExecInspect;
  }

  async events(filters: Record<string, string[]>): Promise<JsonStream> {
    return (await this.api.getEvents({ filters } as object)) as unknown as JsonStream;
  }

  async listImages(): Promise<ImageSummary[]> {
    return await this.api.listImages();
  }

  async inspectImage(ref: string): Promise<ImageInspect> {
    return (await this.api.getImage(ref).inspect()) as ImageInspect;
  }

  async pullImage(options: PullOptions): Promise<JsonStream> {
    return (await this.api.createImage({
      fromImage: options.repository,
      tag: options.tag,
      ...(options.auth ? { authconfig: options.auth } : {}),
    })) as JsonStream;
  }

  async removeImage(ref: string): Promise<void> {
    await this.api.getImage(ref).remove();
  }
}
