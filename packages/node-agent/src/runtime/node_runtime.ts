// What the node lifecycle needs from the runtime: its name and version (nodeInfo), its health
// (Ready), and its images (node status). The runtime manager's Runtime satisfies this slice;
// CriNodeRuntime provides it straight from a CRI endpoint so the agent can register and report
// a node before (and without) the pod layer.
import { type CriCallEvent, CriClient } from '@kh/cri-api';
import type { Image, Runtime, RuntimeStatus } from '@kh/runtime-manager';

export type NodeRuntime = Pick<Runtime, 'type' | 'version' | 'status' | 'listImages'>;

export class CriNodeRuntime implements NodeRuntime {
  private constructor(
    private readonly runtime: CriClient,
    private readonly images: CriClient,
    private readonly runtimeName: string,
  ) {}

  /**
   * Connects and asks the runtime its name, failing fast like the kubelet does when the
   * endpoint does not answer at start-up.
   */
  static async connect(opts: {
    endpoint: string;
    imageEndpoint?: string;
    timeoutMs: number;
    onCall?: (e: CriCallEvent) => void;
  }): Promise<CriNodeRuntime> {
    const clientOpts = {
      timeoutMs: opts.timeoutMs,
      // Waiting for the socket longer than a request may take would only delay the start-up error.
      connectTimeoutMs: Math.min(10_000, opts.timeoutMs),
      ...(opts.onCall ? { onCall: opts.onCall } : {}),
    };
    const runtime = await CriClient.connect(opts.endpoint, clientOpts);
    try {
      const images =
        opts.imageEndpoint && opts.imageEndpoint !== opts.endpoint
          ? await CriClient.connect(opts.imageEndpoint, clientOpts)
          : runtime;
      const v = await runtime.version({});
      return new CriNodeRuntime(runtime, images, v.runtimeName);
    } catch (e) {
      runtime.close();
      throw e;
    }
  }

  type(): string {
    return this.runtimeName;
  }

  async version(): Promise<string> {
    return (await this.runtime.version({})).runtimeVersion;
  }

  async apiVersion(): Promise<string> {
    return (await this.runtime.version({})).runtimeApiVersion;
  }

  async status(): Promise<RuntimeStatus> {
    const res = await this.runtime.status({});
    return {
      conditions: (res.status?.conditions ?? []).map((c) => ({
        type: c.type,
        status: c.status,
        reason: c.reason,
        message: c.message,
      })),
    };
  }

  async listImages(): Promise<Image[]> {
    const res = await this.images.listImages({});
    return res.images.map((img) => ({
      id: img.id,
      repoTags: img.repoTags,
      repoDigests: img.repoDigests,
      size: Number(img.size),
      pinned: img.pinned,
    }));
  }

  close(): void {
    if (this.images !== this.runtime) this.images.close();
    this.runtime.close();
  }
}
