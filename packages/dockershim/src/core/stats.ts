import type {
  ContainerStats,
  ContainerStatsRequest,
  ContainerStatsResponse,
  CpuUsage,
  ListContainerStatsRequest,
  ListContainerStatsResponse,
  ListPodSandboxStatsRequest,
  ListPodSandboxStatsResponse,
  MemoryUsage,
  NetworkUsage,
  PodSandboxStats,
  PodSandboxStatsRequest,
  PodSandboxStatsResponse,
} from '@kh/cri-api';
import type { ContainerStatsSample, ContainerSummary } from '../docker/client.js';
import { isDockerNotFound } from '../docker/errors.js';
import {
  ContainerType,
  containerMetadataFrom,
  LabelKeys,
  sandboxMetadataFrom,
  splitDockerLabels,
} from '../model/labels.js';
import type { CpuSampler } from '../state/cpu_sampler.js';
import { listContainerItems, listPodContainerItems } from './container_list.js';
import type { ShimContext } from './context.js';
import { dockerTimeToNanos, nowNanos } from './convert.js';
import { docker } from './errors.js';
import { getManaged } from './lookup.js';
import { cniPodNetworkUsage } from './pod_network.js';
import { listSandboxItems } from './sandbox_status.js';

const u64 = (v: number | bigint | undefined) => (v === undefined ? undefined : { value: BigInt(v) });

export function cpuUsage(sampler: CpuSampler, id: string, s: ContainerStatsSample): CpuUsage {
  const timestamp = dockerTimeToNanos(s.read);
  const total = BigInt(s.cpu_stats?.cpu_usage?.total_usage ?? 0);
  return {
    timestamp,
    usageCoreNanoSeconds: { value: total },
    usageNanoCores: u64(sampler.nanoCores(id, timestamp, total)),
    psi: undefined,
  };
}

/** Working set = usage minus inactive file pages, kubelet's eviction signal. */
export function memoryUsage(s: ContainerStatsSample): MemoryUsage {
  const m = s.memory_stats ?? {};
  const st = m.stats ?? {};
  const usage = m.usage ?? 0;
  const inactive = st.total_inactive_file ?? st.inactive_file ?? 0;
  const workingSet = Math.max(0, usage - inactive);
  return {
    timestamp: dockerTimeToNanos(s.read),
    workingSetBytes: { value: BigInt(workingSet) },
    availableBytes: m.limit ? { value: BigInt(Math.max(0, m.limit - workingSet)) } : undefined,
    usageBytes: { value: BigInt(usage) },
    rssBytes: u64(st.total_rss ?? st.rss ?? st.anon),
    pageFaults: u64(st.total_pgfault ?? st.pgfault),
    majorPageFaults: u64(st.total_pgmajfault ?? st.pgmajfault),
    psi: undefined,
  };
}

export function networkUsage(s: ContainerStatsSample): NetworkUsage | undefined {
  const entries = Object.entries(s.networks ?? {});
  if (entries.length === 0) return undefined;
  const interfaces = entries.map(([name, n]) => ({
    name,
    rxBytes: { value: BigInt(n.rx_bytes) },
    rxErrors: { value: BigInt(n.rx_errors) },
    txBytes: { value: BigInt(n.tx_bytes) },
    txErrors: { value: BigInt(n.tx_errors) },
  }));
  const def = interfaces.find((i) => i.name === 'eth0') ?? interfaces[0];
  return { timestamp: dockerTimeToNanos(s.read), defaultInterface: def, interfaces };
}

/** One-shot stats of a running container; undefined when it is not running (or just vanished). */
async function dockerStats(ctx: ShimContext, id: string): Promise<ContainerStatsSample | undefined> {
  try {
    return await ctx.docker.containerStats(id);
  } catch (err) {
    if (isDockerNotFound(err)) return undefined;
    throw err;
  }
}

interface StatsSource {
  id: string;
  labels: Record<string, string>;
  name: string;
  running: boolean;
  sizeRw: number;
}

/** A container's CRI stats, with its process count (pids.current; 0 when it is not running). */
async function containerSampleOf(
  ctx: ShimContext,
  c: StatsSource,
  root: string,
): Promise<{ stats: ContainerStats; pids: number }> {
  const raw = c.running ? await docker(`stats of ${c.id}`, () => dockerStats(ctx, c.id)) : undefined;
  const { labels, annotations } = splitDockerLabels(c.labels);
  const stats: ContainerStats = {
    attributes: { id: c.id, metadata: containerMetadataFrom(c.labels, c.name), labels, annotations },
    cpu: raw ? cpuUsage(ctx.cpu, c.id, raw) : undefined,
    memory: raw ? memoryUsage(raw) : undefined,
    writableLayer: {
      timestamp: nowNanos(),
      fsId: { mountpoint: root },
      usedBytes: { value: BigInt(c.sizeRw) },
      inodesUsed: undefined,
    },
    swap: undefined,
    io: undefined,
  };
  return { stats, pids: raw?.pids_stats?.current ?? 0 };
}

const containerStatsOf = async (ctx: ShimContext, c: StatsSource, root: string) =>
  (await containerSampleOf(ctx, c, root)).stats;

const fromListItem = (i: ContainerSummary): StatsSource => ({
  id: i.Id,
  labels: i.Labels ?? {},
  name: i.Names[0] ?? '',
  running: i.State === 'running',
  sizeRw: (i as { SizeRw?: number }).SizeRw ?? 0,
});

export async function containerStats(
  ctx: ShimContext,
  req: ContainerStatsRequest,
): Promise<Partial<ContainerStatsResponse>> {
  const info = await getManaged(ctx, req.containerId, ContainerType.container, 'container_id');
  const [sized] = await docker('container size', () =>
    ctx.docker.listContainers({ all: true, size: true, filters: { id: [info.Id] } }),
  );
  const stats = await containerStatsOf(
    ctx,
    {
      id: info.Id,
      labels: info.Config.Labels ?? {},
      name: info.Name,
      running: info.State.Running,
      sizeRw: (sized as { SizeRw?: number } | undefined)?.SizeRw ?? 0,
    },
    await ctx.dockerRootDir(),
  );
  return { stats };
}

/** ListContainerStats: every container (created and exited ones too), filtered like ListContainers. */
export async function listContainerStats(
  ctx: ShimContext,
  req: ListContainerStatsRequest,
): Promise<Partial<ListContainerStatsResponse>> {
  const f = req.filter;
  const items = (await listContainerItems(ctx, f?.labelSelector, { size: true })).filter(
    (i) =>
      (!f?.id || i.Id.startsWith(f.id)) &&
      (!f?.podSandboxId || (i.Labels?.[LabelKeys.sandboxId] ?? '').startsWith(f.podSandboxId)),
  );
  const root = await ctx.dockerRootDir();
  return { stats: await Promise.all(items.map((i) => containerStatsOf(ctx, fromListItem(i), root))) };
}

async function podStatsOf(ctx: ShimContext, sandbox: StatsSource, root: string): Promise<PodSandboxStats> {
  const items = await listPodContainerItems(ctx, sandbox.id);
  const [pause, samples] = await Promise.all([
    sandbox.running ? dockerStats(ctx, sandbox.id) : undefined,
    Promise.all(items.map((i) => containerSampleOf(ctx, fromListItem(i), root))),
  ]);
  const containers = samples.map((s) => s.stats);
  const timestamp = nowNanos();
  const sum = (pick: (c: ContainerStats) => bigint | undefined) =>
    containers.reduce((acc, c) => acc + (pick(c) ?? 0n), 0n);
  const pauseCpu = pause ? cpuUsage(ctx.cpu, sandbox.id, pause) : undefined;
  const pauseMem = pause ? memoryUsage(pause) : undefined;
  const cpuTotal =
    sum((c) => c.cpu?.usageCoreNanoSeconds?.value) + (pauseCpu?.usageCoreNanoSeconds?.value ?? 0n);
  const { labels, annotations } = splitDockerLabels(sandbox.labels);
  return {
    attributes: {
      id: sandbox.id,
      metadata: sandboxMetadataFrom(sandbox.labels, sandbox.name),
      labels,
      annotations,
    },
    linux: {
      cpu: {
        timestamp,
        usageCoreNanoSeconds: { value: cpuTotal },
        usageNanoCores: u64(ctx.cpu.nanoCores(`pod:${sandbox.id}`, timestamp, cpuTotal)),
        psi: undefined,
      },
      memory: {
        timestamp,
        workingSetBytes: {
          value: sum((c) => c.memory?.workingSetBytes?.value) + (pauseMem?.workingSetBytes?.value ?? 0n),
        },
        availableBytes: undefined,
        usageBytes: { value: sum((c) => c.memory?.usageBytes?.value) + (pauseMem?.usageBytes?.value ?? 0n) },
        rssBytes: { value: sum((c) => c.memory?.rssBytes?.value) + (pauseMem?.rssBytes?.value ?? 0n) },
        pageFaults: undefined,
        majorPageFaults: undefined,
        psi: undefined,
      },
      network: pause
        ? (networkUsage(pause) ?? (await cniPodNetworkUsage(ctx, sandbox.id, timestamp)))
        : undefined,
      // The processes of the pod's running containers, as containerd's CRI counts them (the pause
      // process is not one of them): what the kubelet's pid ranking reads under PodAndContainerStatsFromCRI.
      process: pause
        ? { timestamp, processCount: { value: BigInt(samples.reduce((n, s) => n + s.pids, 0)) } }
        : undefined,
      containers,
      io: undefined,
    },
    windows: undefined,
  };
}

export async function podSandboxStats(
  ctx: ShimContext,
  req: PodSandboxStatsRequest,
): Promise<Partial<PodSandboxStatsResponse>> {
  const info = await getManaged(ctx, req.podSandboxId, ContainerType.sandbox, 'pod_sandbox_id');
  const source = {
    id: info.Id,
    labels: info.Config.Labels ?? {},
    name: info.Name,
    running: info.State.Running,
    sizeRw: 0,
  };
  return { stats: await podStatsOf(ctx, source, await ctx.dockerRootDir()) };
}

/** ListPodSandboxStats: stats of ready sandboxes (a stopped pod has nothing running to measure). */
export async function listPodSandboxStats(
  ctx: ShimContext,
  req: ListPodSandboxStatsRequest,
): Promise<Partial<ListPodSandboxStatsResponse>> {
  const f = req.filter;
  const items = (await listSandboxItems(ctx, f?.labelSelector)).filter(
    (i) => i.State === 'running' && (!f?.id || i.Id.startsWith(f.id)),
  );
  const root = await ctx.dockerRootDir();
  return { stats: await Promise.all(items.map((i) => podStatsOf(ctx, fromListItem(i), root))) };
}
