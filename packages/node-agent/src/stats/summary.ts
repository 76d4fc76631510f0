// /stats/summary (stats/v1alpha1): node CPU and memory from /proc, the node filesystem by
// statfs of the root dir, the image filesystem from CRI ImageFsInfo, and per-pod and
// per-container CPU, memory and writable-layer usage from CRI ListContainerStats. With the
// PodAndContainerStatsFromCRI gate, pods and their containers come from ListPodSandboxStats
// instead (the pod's own cgroup, not the sum of its containers), and a runtime that answers
// UNIMPLEMENTED falls back to the ListContainerStats path, as the kubelet's CRI stats provider
// does. CPU rates (usageNanoCores) come from the previous sample, as the kubelet computes them.
import { readFile, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import type { Clock } from '@kh/apimachinery';
import {
  type Container,
  type ContainerStats,
  type CriClient,
  isUnimplemented,
  PodSandboxState,
} from '@kh/cri-api';
import type { PodMemoryUsage, PodStatsProvider, PodStatus } from '@kh/runtime-manager';
import type { V1Pod } from '@kubernetes/client-node';
import { type Logger, silentLogger } from '../util/log.js';

type Cri = Pick<
  CriClient,
  | 'listContainerStats'
  | 'listPodSandboxStats'
  | 'podSandboxStats'
  | 'listContainers'
  | 'listPodSandbox'
  | 'imageFsInfo'
>;

export interface CpuStats {
  time: string;
  usageCoreNanoSeconds: number;
  usageNanoCores?: number;
}

export interface MemoryStats {
  time: string;
  workingSetBytes: number;
  availableBytes?: number;
  usageBytes?: number;
}

export interface FsStats {
  time: string;
  usedBytes: number;
  availableBytes?: number;
  capacityBytes?: number;
  inodes?: number;
  inodesFree?: number;
  inodesUsed?: number;
}

export interface ContainerSummary {
  name: string;
  startTime?: string;
  cpu: CpuStats;
  memory: MemoryStats;
  rootfs: FsStats;
}

export interface PodSummary {
  podRef: { name: string; namespace: string; uid: string };
  startTime?: string;
  containers: ContainerSummary[];
  cpu: CpuStats;
  memory: MemoryStats;
  'ephemeral-storage': FsStats;
}

export interface Summary {
  node: {
    nodeName: string;
    cpu: CpuStats;
    memory: MemoryStats;
    fs: FsStats;
    runtime: { imageFs: FsStats };
  };
  pods: PodSummary[];
}

// /proc/stat counts in USER_HZ, 100 per second on Linux.
const NS_PER_TICK = 10_000_000;

/** The memory a resize compares a lowered limit with: usage, or the working set where none is given. */
function memoryInUse(m: { usageBytes?: { value: bigint }; workingSetBytes?: { value: bigint } } | undefined) {
  return m?.usageBytes?.value ?? m?.workingSetBytes?.value;
}

export class SummaryProvider implements PodStatsProvider {
  private readonly lastCpu = new Map<string, { at: number; ns: number }>();

  constructor(
    private readonly opts: {
      cri: Cri;
      /** The image service's client when it has its own endpoint (ImageFsInfo). Default: `cri`. */
      imageCri?: Pick<CriClient, 'imageFsInfo'>;
      nodeName: string;
      rootDir: string;
      clock: Clock;
      hostRoot?: string;
      /** The PodAndContainerStatsFromCRI feature gate. */
      podAndContainerStatsFromCRI?: boolean;
      log?: Logger;
    },
  ) {}

  /** Told once that the runtime lacks ListPodSandboxStats, or PodSandboxStats. */
  private warnedUnimplemented = false;

  /**
   * One pod's memory in use, as the kubelet's PodCPUAndMemoryStats reads it before a resize lowers
   * memory limits: with PodAndContainerStatsFromCRI the pod's own from PodSandboxStats (a runtime
   * without it is told once, and the pod's use is its containers' sum), its containers' from
   * ListContainerStats of its sandbox.
   */
  async podMemoryUsage(pod: V1Pod, status: PodStatus): Promise<PodMemoryUsage> {
    const sandbox = status.sandboxStatuses[0]?.id;
    if (!sandbox) throw new Error(`missing sandbox for pod ${pod.metadata?.namespace}/${pod.metadata?.name}`);
    let podUsage: bigint | undefined;
    if (this.opts.podAndContainerStatsFromCRI) {
      try {
        const { stats } = await this.opts.cri.podSandboxStats({ podSandboxId: sandbox });
        podUsage = memoryInUse(stats?.linux?.memory);
      } catch (err) {
        if (!isUnimplemented(err)) throw err;
        this.warnUnimplemented('PodSandboxStats', err);
      }
    }
    const { stats } = await this.opts.cri.listContainerStats({
      filter: { id: '', podSandboxId: sandbox, labelSelector: {} },
    });
    const containers = new Map<string, bigint>();
    for (const s of stats) {
      const used = memoryInUse(s.memory);
      if (used !== undefined) containers.set(s.attributes?.metadata?.name ?? '', used);
    }
    return { pod: podUsage ?? [...containers.values()].reduce((a, b) => a + b, 0n), containers };
  }

  private warnUnimplemented(method: string, err: unknown): void {
    if (!this.warnedUnimplemented)
      (this.opts.log ?? silentLogger).error(
        `CRI implementation must be updated to support ${method} if PodAndContainerStatsFromCRI feature gate is enabled; falling back to ListContainerStats`,
        { err },
      );
    this.warnedUnimplemented = true;
  }

  async summary(): Promise<Summary> {
    const now = this.opts.clock.now();
    const time = new Date(now).toISOString();
    const [cpuNs, memory, fs, imageFs, pods] = await Promise.all([
      this.nodeCpuNs(),
      this.nodeMemory(time),
      this.nodeFs(time),
      this.imageFs(time),
      this.pods(now, time),
    ]);
    return {
      node: {
        nodeName: this.opts.nodeName,
        cpu: this.cpu('node', cpuNs, now, time),
        memory,
        fs,
        runtime: { imageFs },
      },
      pods,
    };
  }

  private read(path: string): Promise<string> {
    return readFile(join(this.opts.hostRoot ?? '/', path), 'utf8');
  }

  /** Total non-idle CPU time of the node. */
  private async nodeCpuNs(): Promise<number> {
    const line = (await this.read('/proc/stat')).split('\n').find((l) => l.startsWith('cpu ')) ?? '';
    const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = line
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
    return (user + nice + system + irq + softirq + steal) * NS_PER_TICK;
  }

  /** Working set = usage minus inactive file pages: what eviction treats as not reclaimable. */
  private async nodeMemory(time: string): Promise<MemoryStats> {
    const info = await this.read('/proc/meminfo');
    const kb = (key: string) =>
      Number(new RegExp(`^${key.replace(/[()]/g, '\\$&')}:\\s+(\\d+)`, 'm').exec(info)?.[1] ?? 0) * 1024;
    const usage = kb('MemTotal') - kb('MemFree');
    return {
      time,
      availableBytes: kb('MemAvailable'),
      usageBytes: usage,
      workingSetBytes: Math.max(0, usage - kb('Inactive(file)')),
    };
  }

  private async nodeFs(time: string): Promise<FsStats> {
    const s = await statfs(this.opts.rootDir);
    return {
      time,
      capacityBytes: s.blocks * s.bsize,
      availableBytes: s.bavail * s.bsize,
      usedBytes: (s.blocks - s.bfree) * s.bsize,
      inodes: s.files,
      inodesFree: s.ffree,
      inodesUsed: s.files - s.ffree,
    };
  }

  private async imageFs(time: string): Promise<FsStats> {
    const fs = (await (this.opts.imageCri ?? this.opts.cri).imageFsInfo({})).imageFilesystems[0];
    return {
      time,
      usedBytes: Number(fs?.usedBytes?.value ?? 0n),
      inodesUsed: Number(fs?.inodesUsed?.value ?? 0n),
    };
  }

  private cpu(key: string, ns: number, at: number, time: string): CpuStats {
    const prev = this.lastCpu.get(key);
    this.lastCpu.set(key, { at, ns });
    const out: CpuStats = { time, usageCoreNanoSeconds: ns };
    if (prev && at > prev.at && ns >= prev.ns)
      out.usageNanoCores = Math.round(((ns - prev.ns) / (at - prev.at)) * 1000); // ns of CPU per s
    return out;
  }

  private async pods(now: number, time: string): Promise<PodSummary[]> {
    const [{ items: sandboxes }, { containers }] = await Promise.all([
      this.opts.cri.listPodSandbox({}),
      this.opts.cri.listContainers({}),
    ]);
    const containerById = new Map(containers.map((c) => [c.id, c]));
    const byPod = new Map<string, PodSummary>();
    for (const sb of sandboxes) {
      const m = sb.metadata;
      if (!m || sb.state !== PodSandboxState.SANDBOX_READY) continue;
      byPod.set(sb.id, {
        podRef: { name: m.name, namespace: m.namespace, uid: m.uid },
        startTime: new Date(Number(sb.createdAt / 1_000_000n)).toISOString(),
        containers: [],
        cpu: { time, usageCoreNanoSeconds: 0 },
        memory: { time, workingSetBytes: 0 },
        'ephemeral-storage': { time, usedBytes: 0 },
      });
    }
    const seen = this.opts.podAndContainerStatsFromCRI
      ? await this.fromSandboxStats(byPod, containerById, now, time)
      : undefined;
    const measured = seen ?? (await this.fromContainerStats(byPod, containerById, now, time));
    // Forget rate samples of pods and containers that are gone.
    for (const key of this.lastCpu.keys()) if (key !== 'node' && !measured.has(key)) this.lastCpu.delete(key);
    return [...byPod.values()];
  }

  /** Containers' stats summed into their pods. Returns the rate keys it used. */
  private async fromContainerStats(
    byPod: Map<string, PodSummary>,
    containerById: Map<string, Container>,
    now: number,
    time: string,
  ): Promise<Set<string>> {
    const { stats } = await this.opts.cri.listContainerStats({});
    const seen = new Set<string>();
    for (const s of stats) {
      const id = s.attributes?.id ?? '';
      const pod = byPod.get(containerById.get(id)?.podSandboxId ?? '');
      if (!pod) continue;
      seen.add(`container/${id}`);
      const c = this.container(s, containerById, now, time);
      pod.containers.push(c);
      pod.cpu.usageCoreNanoSeconds += c.cpu.usageCoreNanoSeconds;
      if (c.cpu.usageNanoCores !== undefined)
        pod.cpu.usageNanoCores = (pod.cpu.usageNanoCores ?? 0) + c.cpu.usageNanoCores;
      pod.memory.workingSetBytes += c.memory.workingSetBytes;
      pod['ephemeral-storage'].usedBytes += c.rootfs.usedBytes;
    }
    return seen;
  }

  /**
   * Pods (their own CPU and memory) and their containers from ListPodSandboxStats. Undefined when
   * the runtime does not implement it: the caller falls back to ListContainerStats.
   */
  private async fromSandboxStats(
    byPod: Map<string, PodSummary>,
    containerById: Map<string, Container>,
    now: number,
    time: string,
  ): Promise<Set<string> | undefined> {
    let stats: Awaited<ReturnType<Cri['listPodSandboxStats']>>['stats'];
    try {
      ({ stats } = await this.opts.cri.listPodSandboxStats({}));
    } catch (err) {
      if (!isUnimplemented(err)) throw err;
      this.warnUnimplemented('ListPodSandboxStats', err);
      return undefined;
    }
    const seen = new Set<string>();
    for (const sb of stats) {
      const id = sb.attributes?.id ?? '';
      const pod = byPod.get(id);
      if (!pod || !sb.linux) continue;
      seen.add(`pod/${id}`);
      pod.cpu = this.cpu(`pod/${id}`, Number(sb.linux.cpu?.usageCoreNanoSeconds?.value ?? 0n), now, time);
      pod.memory = {
        time,
        workingSetBytes: Number(sb.linux.memory?.workingSetBytes?.value ?? 0n),
        ...(sb.linux.memory?.usageBytes ? { usageBytes: Number(sb.linux.memory.usageBytes.value) } : {}),
      };
      for (const s of sb.linux.containers) {
        seen.add(`container/${s.attributes?.id ?? ''}`);
        const c = this.container(s, containerById, now, time);
        pod.containers.push(c);
        pod['ephemeral-storage'].usedBytes += c.rootfs.usedBytes;
      }
    }
    return seen;
  }

  private container(
    s: ContainerStats,
    containerById: Map<string, Container>,
    now: number,
    time: string,
  ): ContainerSummary {
    const id = s.attributes?.id ?? '';
    const cpuNs = Number(s.cpu?.usageCoreNanoSeconds?.value ?? 0n);
    return {
      name: s.attributes?.metadata?.name ?? '',
      startTime: new Date(Number((containerById.get(id)?.createdAt ?? 0n) / 1_000_000n)).toISOString(),
      cpu: this.cpu(`container/${id}`, cpuNs, now, time),
      memory: { time, workingSetBytes: Number(s.memory?.workingSetBytes?.value ?? 0n) },
      rootfs: { time, usedBytes: Number(s.writableLayer?.usedBytes?.value ?? 0n) },
    };
  }
}
