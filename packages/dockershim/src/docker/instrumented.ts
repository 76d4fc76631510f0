import type { DockerClient } from './client.js';

/** Upper bounds (seconds) of the latency buckets: Prometheus' defaults, as cri-dockerd's histogram. */
export const LATENCY_BUCKETS_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

/** One Engine operation's figures: calls, failed calls, and a latency histogram. */
export interface DockerOperationStats {
  operation: keyof DockerClient;
  count: number;
  errors: number;
  sumSeconds: number;
  /** Calls per bucket of LATENCY_BUCKETS_SECONDS (not cumulative); the last entry is +Inf. */
  buckets: number[];
}

/**
 * Latency and errors per Engine operation, what cri-dockerd exports as docker_operations_total,
 * docker_operations_errors_total and docker_operations_duration_seconds. A call that returns a
 * stream (events, logs, attach, exec start, pull) is timed until the Engine answers with the stream.
 */
export class DockerOperationMetrics {
  private readonly byOperation = new Map<keyof DockerClient, DockerOperationStats>();

  record(operation: keyof DockerClient, seconds: number, failed: boolean): void {
    let s = this.byOperation.get(operation);
    if (!s) {
      s = {
        operation,
        count: 0,
        errors: 0,
        sumSeconds: 0,
        buckets: new Array(LATENCY_BUCKETS_SECONDS.length + 1).fill(0),
      };
      this.byOperation.set(operation, s);
    }
    s.count++;
    if (failed) s.errors++;
    s.sumSeconds += seconds;
    const i = LATENCY_BUCKETS_SECONDS.findIndex((le) => seconds <= le);
    s.buckets[i === -1 ? LATENCY_BUCKETS_SECONDS.length : i]!++;
  }

  /** A copy of every operation's figures, by operation name. */
  snapshot(): DockerOperationStats[] {
    return [...this.byOperation.values()]
      .map((s) => ({ ...s, buckets: [...s.buckets] }))
      .sort((a, b) => a.operation.localeCompare(b.operation));
  }
}

// Every operation of the interface, so a new one cannot go untimed (typecheck fails without it).
const OPERATIONS = {
  ping: true,
  version: true,
  info: true,
  diskUsage: true,
  inspectNetwork: true,
  listContainers: true,
  inspectContainer: true,
  createContainer: true,
  startContainer: true,
  stopContainer: true,
  removeContainer: true,
  updateContainer: true,
  containerStats: true,
  containerLogs: true,
  attachContainer: true,
  resizeContainerTty: true,
  createExec: true,
  startExec: true,
  resizeExecTty: true,
  inspectExec: true,
  events: true,
  listImages: true,
  inspectImage: true,
  pullImage: true,
  removeImage: true,
} satisfies Record<keyof DockerClient, true>;

/** A DockerClient that records each call's latency and outcome in `metrics`, then answers as `inner`. */
export function instrumentedDockerClient(inner: DockerClient, metrics: DockerOperationMetrics): DockerClient {
  const client: Partial<Record<keyof DockerClient, unknown>> = {};
  for (const operation of Object.keys(OPERATIONS) as (keyof DockerClient)[]) {
    const call = inner[operation] as (...args: unknown[]) => Promise<unknown>;
    client[operation] = async (...args: unknown[]) => {
      const started = performance.now();
      let failed = true;
      try {
        const result = await call.apply(inner, args);
        failed = false;
        return result;
      } finally {
        metrics.record(operation, (performance.now() - started) / 1000, failed);
      }
    };
  }
  return client as DockerClient;
}
