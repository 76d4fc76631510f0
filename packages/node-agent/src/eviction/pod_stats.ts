// Per-pod consumption for ranking and local storage isolation: memory working set and writable
// layer (bytes and inodes) from CRI ListContainerStats, plus what lives on the node's disk for the
// pod (container logs, emptyDir volumes, memory-backed ones included) measured like du, and the
// pod's process count (from its cgroup, or from CRI ListPodSandboxStats under the gate).
import { lstat, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isUnimplemented } from '@kh/cri-api';
import { ContainerNameLabel, PodNameLabel, PodNamespaceLabel, PodUidLabel } from '@kh/runtime-manager';
import type { V1Pod } from '@kubernetes/client-node';
import { type Logger, silentLogger } from '../util/log.js';
import type { PodStatsSource, PodUsage } from './types.js';

/** The CRI call this reads (a CriClient fits). */
export interface ContainerStatsClient {
  listContainerStats(req: object): Promise<{
    stats: {
      attributes?: { labels: Record<string, string>; metadata?: { name: string } };
      memory?: { workingSetBytes?: { value: bigint } };
      writableLayer?: { usedBytes?: { value: bigint }; inodesUsed?: { value: bigint } };
    }[];
  }>;
}

export interface FsUsage {
  /** Allocated blocks in bytes, as du counts them. */
  bytes: number;
  /** Files and directories, the tree's root included (du --inodes). */
  inodes: number;
}

/** What a directory tree occupies on disk; zero when absent. */
export async function fsUsage(path: string): Promise<FsUsage> {
  let st: Awaited<ReturnType<typeof lstat>>;
  try {
    st = await lstat(path);
  } catch {
    return { bytes: 0, inodes: 0 };
  }
  const total = { bytes: Number(st.blocks) * 512, inodes: 1 };
  if (st.isDirectory()) {
    const entries = await readdir(path).catch(() => [] as string[]);
    for (const e of entries) {
      const u = await fsUsage(join(path, e));
      total.bytes += u.bytes;
      total.inodes += u.inodes;
    }
  }
  return total;
}

/**
 * Processes in a pod as cAdvisor counts them for the kubelet's pid ranking: the pod cgroup's
 * pids.current (v1: under the pids hierarchy; v2: in the cgroup itself). Undefined when the pod or
 * its cgroup is unknown, so such a pod ranks as one without stats.
 */
export function podCgroupProcessCount(opts: {
  pod: (uid: string) => V1Pod | undefined;
  /** The pod's cgroup as given to the runtime (cgroupfs path or expanded systemd slices). */
  cgroup: (pod: V1Pod) => string;
  /** Where the cgroup filesystems are mounted (/sys/fs/cgroup). */
  mount?: string;
}): (uid: string) => Promise<number | undefined> {
  const mount = opts.mount ?? '/sys/fs/cgroup';
  return async (uid) => {
    const pod = opts.pod(uid);
    if (!pod) return undefined;
    const cgroup = opts.cgroup(pod);
    for (const dir of [join(mount, 'pids', cgroup), join(mount, cgroup)]) {
      const text = await readFile(join(dir, 'pids.current'), 'utf8').catch(() => undefined);
      const n = text === undefined ? Number.NaN : Number.parseInt(text, 10);
      if (!Number.isNaN(n)) return n;
    }
    return undefined;
  };
}

/** The CRI call process counts come from under PodAndContainerStatsFromCRI (a CriClient fits). */
export interface PodSandboxStatsClient {
  listPodSandboxStats(req: { filter: { id: string; labelSelector: Record<string, string> } }): Promise<{
    stats: { linux?: { process?: { processCount?: { value: bigint } } } }[];
  }>;
}

/**
 * Processes in a pod as the kubelet's summary has them under PodAndContainerStatsFromCRI: what the
 * runtime reports for the pod's sandbox (PodSandboxStats.linux.process.processCount from
 * ListPodSandboxStats), not its cgroup. Undefined when the runtime reports no count (no ready
 * sandbox). A runtime without ListPodSandboxStats is told once, and `fallback` counts from then
 * on, as the kubelet falls back to cAdvisor.
 */
export function criSandboxProcessCount(opts: {
  cri: PodSandboxStatsClient;
  fallback?: (uid: string) => Promise<number | undefined>;
  log?: Logger;
}): (uid: string) => Promise<number | undefined> {
  let unimplemented = false;
  return async (uid) => {
    if (!unimplemented) {
      try {
        const { stats } = await opts.cri.listPodSandboxStats({
          filter: { id: '', labelSelector: { [PodUidLabel]: uid } },
        });
        const counts = stats.flatMap((s) => s.linux?.process?.processCount?.value ?? []);
        return counts.length === 0 ? undefined : Number(counts.reduce((a, b) => a + b, 0n));
      } catch (err) {
        if (!isUnimplemented(err)) throw err;
        unimplemented = true;
        (opts.log ?? silentLogger).error(
          'CRI implementation must be updated to support ListPodSandboxStats if PodAndContainerStatsFromCRI feature gate is enabled; falling back to the pod cgroup',
          { err },
        );
      }
    }
    return opts.fallback?.(uid);
  };
}

/**
 * The pod process counter of the eviction manager's stats: the runtime's (falling back to the
 * cgroup's) with PodAndContainerStatsFromCRI, else the pod cgroup's (none without pod cgroups).
 */
export function podProcessCounter(opts: {
  podAndContainerStatsFromCRI: boolean;
  cri: PodSandboxStatsClient;
  cgroup?: (uid: string) => Promise<number | undefined>;
  log?: Logger;
}): ((uid: string) => Promise<number | undefined>) | undefined {
  if (!opts.podAndContainerStatsFromCRI) return opts.cgroup;
  return criSandboxProcessCount({
    cri: opts.cri,
    ...(opts.cgroup ? { fallback: opts.cgroup } : {}),
    ...(opts.log ? { log: opts.log } : {}),
  });
}

export interface CriPodStatsOptions {
  /** <podsDir>/<uid>/volumes/kubernetes.io~empty-dir/<name> holds emptyDir volumes. */
  podsDir: string;
  /** <podLogsDir>/<ns>_<name>_<uid>/<container>/ holds container logs. */
  podLogsDir?: string;
  /** Processes in a pod (for pid ranking): its cgroup's pids.current, or the runtime's count under the gate. */
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
      const logs = pod.logDir ? await fsUsage(join(pod.logDir, name)) : { bytes: 0, inodes: 0 };
      pod.containers.push({
        name,
        memoryWorkingSetBytes: s.memory?.workingSetBytes ? Number(s.memory.workingSetBytes.value) : undefined,
        ephemeralStorageBytes: Number(s.writableLayer?.usedBytes?.value ?? 0n) + logs.bytes,
        inodesUsed: Number(s.writableLayer?.inodesUsed?.value ?? 0n) + logs.inodes,
      });
    }
    const out: PodUsage[] = [];
    for (const { logDir: _, ...pod } of pods.values()) {
      const volDir = join(this.opts.podsDir, pod.uid, 'volumes', 'kubernetes.io~empty-dir');
      const names = await readdir(volDir).catch(() => [] as string[]);
      for (const name of names) {
        const u = await fsUsage(join(volDir, name));
        pod.volumes.push({ name, usedBytes: u.bytes, inodesUsed: u.inodes });
      }
      const procs = await this.opts.processCount?.(pod.uid);
      out.push(procs === undefined ? pod : { ...pod, processCount: procs });
    }
    return out;
  }
}
