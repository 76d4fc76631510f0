// What scenarios may ask the runtime directly, through CRI from the host: what really exists,
// whatever the agent thinks. Every call lands on the current cell's timeline with its latency.
import { ContainerState, CriClient, PodSandboxState } from '@kh/cri-api';
import type { CriItem, CriView } from '../framework/scenario.js';
import type { TimelineEntry } from '../results/model.js';

type Sink = ((e: Omit<TimelineEntry, 't'>) => void) | undefined;

const containerState = (s: ContainerState): string =>
  ({
    [ContainerState.CONTAINER_CREATED]: 'created',
    [ContainerState.CONTAINER_RUNNING]: 'running',
    [ContainerState.CONTAINER_EXITED]: 'exited',
    [ContainerState.CONTAINER_UNKNOWN]: 'unknown',
  })[s as number] ?? 'unknown';

const nsToMs = (ns: bigint): number => Number(ns / 1_000_000n);

export class HostCriView implements CriView {
  private constructor(private readonly client: CriClient) {}

  /** Connects to a node's CRI endpoint on the host; `sink()` names the cell to record calls in. */
  static async connect(endpoint: string, sink: () => Sink): Promise<HostCriView> {
    const client = await CriClient.connect(endpoint, {
      timeoutMs: 30_000,
      onCall: (e) =>
        sink()?.({
          kind: 'cri-call',
          source: 'harness',
          summary: `${e.method}${e.error ? ` failed: ${e.error.message}` : ''}`,
          method: e.method,
          durationMs: e.durationMs,
          code: e.error ? e.error.codeName : 'OK',
        }),
    });
    return new HostCriView(client);
  }

  async version(): Promise<{ runtimeName: string; runtimeVersion: string }> {
    const v = await this.client.version({});
    return { runtimeName: v.runtimeName, runtimeVersion: v.runtimeVersion };
  }

  async listContainers(filter: { labelSelector?: Record<string, string> } = {}): Promise<CriItem[]> {
    const r = await this.client.listContainers({ filter: { labelSelector: filter.labelSelector ?? {} } });
    return r.containers.map((c) => ({
      id: c.id,
      state: containerState(c.state),
      labels: c.labels,
      createdAt: nsToMs(c.createdAt),
    }));
  }

  async listPodSandbox(filter: { labelSelector?: Record<string, string> } = {}): Promise<CriItem[]> {
    const r = await this.client.listPodSandbox({ filter: { labelSelector: filter.labelSelector ?? {} } });
    return r.items.map((s) => ({
      id: s.id,
      state: s.state === PodSandboxState.SANDBOX_READY ? 'ready' : 'notready',
      labels: s.labels,
      createdAt: nsToMs(s.createdAt),
    }));
  }

  async imageStatus(ref: string): Promise<{ id: string; size: number } | undefined> {
    const r = await this.client.imageStatus({ image: { image: ref } });
    return r.image ? { id: r.image.id, size: Number(r.image.size) } : undefined;
  }

  async pullImage(ref: string): Promise<string> {
    return (await this.client.pullImage({ image: { image: ref } })).imageRef;
  }

  close(): void {
    this.client.close();
  }
}
