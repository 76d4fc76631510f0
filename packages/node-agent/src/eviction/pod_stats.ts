// Per-pod consumption for ranking and local storage isolation: memory working set and writable
// layer from CRI ListContainerStats, plus what lives on the node's disk for the pod (container
// logs, emptyDir volumes, memory-backed ones included) measured like du.
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { ContainerNameLabel, PodNameLabel, PodNamespaceLabel, PodUidLabel } from '@kh/runtime-manager';
import type { PodStatsSource, PodUsage } from './types.js';

/** The CRI call this reads (a CriClient fits). */
export interface ContainerStatsClient {
  listContainerStats(req: object): Promise<{
    stats: {
      attributes?: { labels: Record<string, string>; metadata?: { name: string } };
      memory?: { workingSetBytes?: { value: bigint } };
      writableLayer?: { usedBytes?: { value: bigint } };
    }[];
  }>;
}

/** Bytes a directory tree occupies on disk (allocated blocks, as du counts); 0 when absent. */
export async function diskUsage(path: string): Promise<number> {
  let st: Awaited<ReturnType<typeof lstat>>;
  try {
    st = await lstat(path);
  } catch {
    return 0;
  }
  let total = Number(st.blocks) * 512;
  if (st.isDirectory()) {
    const entries = await readdir(path).catch(() => [] as string[]);
    for (const e of entries) total += await diskUsage(join(path, e));
  }
  return total;
}

export interface CriPodStatsOptions {
  /** <podsDir>/<uid>/volumes/kubernetes.io~empty-dir/<name> holds emptyDir volumes. */
  podsDir: string;
  /** <podLogsDir>/<ns>_<name>_<uid>/<container>/ holds container logs. */
  podLogsDir?: string;
  /** Processes in a pod (for pid ranking), when the agent can count them (pod cgroup pids.current). */
  processCount?: (uid: string) => Promise<number | undefined>;
}

export class CriPodStatsSource implements PodStatsSource {
  constructor(
    private readonly cri: ContainerStatsClient,
    private readonly opts: CriPodStatsOptions,
  ) {}

  async podStats(): Promise<PodUsage[]> {
    const res = await this.cri.listContainerStats({});
    const pods = new Map<string, PodUsage & { logDir?: string }>();
    for (const s of res.stats) {
      const labels = s.attributes?.labels ?? {};
      const uid = labels[PodUidLabel];
      if (!uid) continue;
      let pod = pods.get(uid);
      if (!pod) {
        const logDir = this.opts.podLogsDir
          ? join(this.opts.podLogsDir, `${labels[PodNamespaceLabel]}_${labels[PodNameLabel]}_${uid}`)
          : undefined;
        pod = { uid, containers: [], volumes: [], logDir };
        pods.set(uid, pod);
      }
      const name = labels[ContainerNameLabel] ?? s.attributes?.metadata?.name ?? '';
      const logs = pod.logDir ? await diskUsage(join(pod.logDir, name)) : 0;
      pod.containers.push({
        name,
        memoryWorkingSetBytes: s.memory?.workingSetBytes ? Number(s.memory.workingSetBytes.value) : undefined,
        ephemeralStorageBytes: Number(s.writableLayer?.usedBytes?.value ?? 0n) + logs,
      });
    }
    const out: PodUsage[] = [];
    for (const { logDir: _, ...pod } of pods.values()) {
      const volDir = join(this.opts.podsDir, pod.uid, 'volumes', 'kubernetes.io~empty-dir');
      const names = await readdir(volDir).catch(() => [] as string[]);
      for (const name of names) pod.volumes.push({ name, usedBytes: await diskUsage(join(volDir, name)) });
      const procs = await this.opts.processCount?.(pod.uid);
      out.push(procs === undefined ? pod : { ...pod, processCount: procs });
    }
    return out;
  }
}
