import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '@kh/apimachinery';
import { CriClient, FakeRuntime } from '@kh/cri-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatResourceMetrics } from '../src/stats/resource_metrics.js';
import { SummaryProvider } from '../src/stats/summary.js';

const host = mkdtempSync(join(tmpdir(), 'kh-stats-'));
mkdirSync(join(host, 'proc'));
const stat = (busyTicks: number) =>
  writeFileSync(join(host, 'proc/stat'), `cpu  ${busyTicks} 0 0 5000 100 0 0 0 0 0\ncpu0 1 2 3\n`);
writeFileSync(
  join(host, 'proc/meminfo'),
  'MemTotal:       4000000 kB\nMemFree:        1000000 kB\nMemAvailable:   2500000 kB\nInactive(file):  500000 kB\n',
);

let fake: FakeRuntime;
let cri: CriClient;

beforeAll(async () => {
  fake = await FakeRuntime.start({ socketPath: join(host, 'cri.sock') });
  fake.addImage('docker.io/library/busybox:latest', 5_000_000);
  fake.script.containerStats('main', {
    cpuUsageCoreNanoSeconds: 2_000_000_000,
    memoryWorkingSetBytes: 64 * 1024 * 1024,
    writableLayerUsedBytes: 4096,
  });
  cri = await CriClient.connect(fake.endpoint);
  const config = { metadata: { name: 'web', namespace: 'default', uid: 'u1', attempt: 0 } };
  const { podSandboxId } = await cri.runPodSandbox({ config });
  const { containerId } = await cri.createContainer({
    podSandboxId,
    config: { metadata: { name: 'main' }, image: { image: 'busybox' } },
    sandboxConfig: config,
  });
  await cri.startContainer({ containerId });
});
afterAll(async () => {
  cri?.close();
  await fake?.stop();
});

describe('SummaryProvider', () => {
  it('reports node CPU, memory, filesystems and per-pod container stats', async () => {
    const clock = new FakeClock();
    const p = new SummaryProvider({ cri, nodeName: 'node-a', rootDir: host, clock, hostRoot: host });
    stat(1000);
    const first = await p.summary();
    expect(first.node.cpu).toEqual({
      time: new Date(clock.now()).toISOString(),
      usageCoreNanoSeconds: 1000 * 10_000_000,
    });
    expect(first.node.memory).toMatchObject({
      availableBytes: 2_500_000 * 1024,
      usageBytes: 3_000_000 * 1024,
      workingSetBytes: 2_500_000 * 1024, // usage minus inactive file pages
    });
    expect(first.node.fs.capacityBytes).toBeGreaterThan(0);
    expect(first.node.fs.inodesUsed).toBeGreaterThanOrEqual(0);
    expect(first.node.runtime.imageFs.usedBytes).toBe(5_000_000);
    expect(first.pods).toHaveLength(1);
    expect(first.pods[0]).toMatchObject({
      podRef: { name: 'web', namespace: 'default', uid: 'u1' },
      containers: [
        {
          name: 'main',
          cpu: { usageCoreNanoSeconds: 2_000_000_000 },
          memory: { workingSetBytes: 64 * 1024 * 1024 },
          rootfs: { usedBytes: 4096 },
        },
      ],
      memory: { workingSetBytes: 64 * 1024 * 1024 },
      'ephemeral-storage': { usedBytes: 4096 },
    });

    // 2 s later with 300 more busy ticks (3 s of CPU): 1.5 cores.
    stat(1300);
    await clock.advance(2_000);
    const second = await p.summary();
    expect(second.node.cpu.usageNanoCores).toBe(1_500_000_000);
    expect(second.pods[0]?.containers[0]?.cpu.usageNanoCores).toBe(0);
  });
});

describe('SummaryProvider with PodAndContainerStatsFromCRI', () => {
  const u64 = (value: number) => ({ value: BigInt(value) });
  /** The fake runtime's CRI, with ListPodSandboxStats answering as a runtime that has it would. */
  async function withSandboxStats() {
    const { items } = await cri.listPodSandbox({});
    const { stats } = await cri.listContainerStats({});
    let listContainerStatsCalls = 0;
    const client = {
      listPodSandbox: cri.listPodSandbox.bind(cri),
      listContainers: cri.listContainers.bind(cri),
      imageFsInfo: cri.imageFsInfo.bind(cri),
      listContainerStats: async (req: object) => {
        listContainerStatsCalls++;
        return cri.listContainerStats(req);
      },
      listPodSandboxStats: async () => ({
        stats: items.map((sb) => ({
          attributes: { id: sb.id, metadata: sb.metadata, labels: {}, annotations: {} },
          // The pod's own cgroup: more than its one container (the pause process, overhead).
          linux: {
            cpu: { timestamp: 0n, usageCoreNanoSeconds: u64(3_000_000_000), usageNanoCores: undefined },
            memory: { workingSetBytes: u64(80 * 1024 * 1024), usageBytes: u64(90 * 1024 * 1024) },
            containers: stats,
          },
          windows: undefined,
        })),
      }),
    };
    return { client, calls: () => listContainerStatsCalls };
  }

  it("takes pods' own CPU and memory, and their containers, from ListPodSandboxStats", async () => {
    const { client, calls } = await withSandboxStats();
    const p = new SummaryProvider({
      cri: client as never,
      nodeName: 'node-a',
      rootDir: host,
      clock: new FakeClock(),
      hostRoot: host,
      podAndContainerStatsFromCRI: true,
    });
    stat(1000);
    const { pods } = await p.summary();
    expect(pods).toHaveLength(1);
    expect(pods[0]).toMatchObject({
      podRef: { name: 'web', namespace: 'default', uid: 'u1' },
      cpu: { usageCoreNanoSeconds: 3_000_000_000 },
      memory: { workingSetBytes: 80 * 1024 * 1024, usageBytes: 90 * 1024 * 1024 },
      containers: [
        { name: 'main', memory: { workingSetBytes: 64 * 1024 * 1024 }, rootfs: { usedBytes: 4096 } },
      ],
      'ephemeral-storage': { usedBytes: 4096 },
    });
    expect(calls()).toBe(0);
  });

  it('falls back to ListContainerStats when the runtime answers UNIMPLEMENTED, and says so once', async () => {
    const errors: string[] = [];
    const log = { info() {}, v() {}, error: (m: string) => void errors.push(m) };
    // The fake runtime does not implement ListPodSandboxStats.
    const p = new SummaryProvider({
      cri,
      nodeName: 'node-a',
      rootDir: host,
      clock: new FakeClock(),
      hostRoot: host,
      podAndContainerStatsFromCRI: true,
      log: log as never,
    });
    stat(1000);
    const first = await p.summary();
    await p.summary();
    expect(first.pods[0]).toMatchObject({
      cpu: { usageCoreNanoSeconds: 2_000_000_000 },
      memory: { workingSetBytes: 64 * 1024 * 1024 },
    });
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain('ListPodSandboxStats');
  });

  it('does not call ListPodSandboxStats with the gate off', async () => {
    const { client, calls } = await withSandboxStats();
    let sandboxCalls = 0;
    const p = new SummaryProvider({
      cri: {
        ...client,
        listPodSandboxStats: async () => {
          sandboxCalls++;
          return client.listPodSandboxStats();
        },
      } as never,
      nodeName: 'node-a',
      rootDir: host,
      clock: new FakeClock(),
      hostRoot: host,
    });
    stat(1000);
    expect((await p.summary()).pods[0]?.cpu.usageCoreNanoSeconds).toBe(2_000_000_000);
    expect([sandboxCalls, calls()]).toEqual([0, 1]);
  });
});

describe('SummaryProvider.podMemoryUsage (what a resize that lowers memory limits reads)', () => {
  const Mi = 1024n * 1024n;
  async function sandboxOf() {
    const { items } = await cri.listPodSandbox({});
    return items[0]!.id;
  }
  const web = { metadata: { name: 'web', namespace: 'default', uid: 'u1' } };
  /** The fake's CRI, recording what it is asked, with PodSandboxStats as a runtime that has it. */
  function recording(podSandboxStats?: (id: string) => object) {
    const asked: string[] = [];
    const client = {
      listContainerStats: async (req: { filter?: { podSandboxId?: string } }) => {
        asked.push(`ListContainerStats ${req.filter?.podSandboxId}`);
        return cri.listContainerStats(req);
      },
      podSandboxStats: async ({ podSandboxId }: { podSandboxId: string }) => {
        asked.push(`PodSandboxStats ${podSandboxId}`);
        if (!podSandboxStats) return cri.podSandboxStats({ podSandboxId });
        return { stats: podSandboxStats(podSandboxId) };
      },
    };
    return { client, asked };
  }
  const provider = (client: object, gate: boolean, log?: object) =>
    new SummaryProvider({
      cri: client as never,
      nodeName: 'node-a',
      rootDir: host,
      clock: new FakeClock(),
      hostRoot: host,
      podAndContainerStatsFromCRI: gate,
      ...(log ? { log: log as never } : {}),
    });

  it("with the gate, the pod's own use from PodSandboxStats and its containers' from their sandbox's ListContainerStats", async () => {
    const sandbox = await sandboxOf();
    const { client, asked } = recording(() => ({
      linux: { memory: { workingSetBytes: { value: 80n * Mi }, usageBytes: { value: 90n * Mi } } },
    }));
    const used = await provider(client, true).podMemoryUsage(web, {
      sandboxStatuses: [{ id: sandbox }],
    } as never);
    expect(asked).toEqual([`PodSandboxStats ${sandbox}`, `ListContainerStats ${sandbox}`]);
    // The fake reports a working set and no usage for its container.
    expect(used).toEqual({ pod: 90n * Mi, containers: new Map([['main', 64n * Mi]]) });
  });

  it("a runtime without PodSandboxStats is told once; the pod's use is its containers' sum", async () => {
    const sandbox = await sandboxOf();
    const errors: string[] = [];
    const log = { info() {}, v() {}, error: (m: string) => void errors.push(m) };
    const { client } = recording();
    const p = provider(client, true, log);
    const status = { sandboxStatuses: [{ id: sandbox }] } as never;
    expect(await p.podMemoryUsage(web, status)).toEqual({
      pod: 64n * Mi,
      containers: new Map([['main', 64n * Mi]]),
    });
    await p.podMemoryUsage(web, status);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain('PodSandboxStats');
  });

  it('without the gate, only ListContainerStats; a pod with no sandbox is an error', async () => {
    const sandbox = await sandboxOf();
    const { client, asked } = recording();
    const p = provider(client, false);
    await p.podMemoryUsage(web, { sandboxStatuses: [{ id: sandbox }] } as never);
    expect(asked).toEqual([`ListContainerStats ${sandbox}`]);
    await expect(p.podMemoryUsage(web, { sandboxStatuses: [] } as never)).rejects.toThrow(
      'missing sandbox for pod default/web',
    );
  });
});

describe('formatResourceMetrics (/metrics/resource)', () => {
  it("writes the kubelet's resource metrics from the summary, stamped with the stats' time", async () => {
    const clock = new FakeClock();
    stat(1000);
    const summary = await new SummaryProvider({
      cri,
      nodeName: 'node-a',
      rootDir: host,
      clock,
      hostRoot: host,
    }).summary();
    const text = formatResourceMetrics(summary);
    const at = clock.now();
    expect(text).toContain(
      '# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds\n# TYPE container_cpu_usage_seconds_total counter\n',
    );
    expect(text).toContain(
      `container_cpu_usage_seconds_total{container="main",namespace="default",pod="web"} 2 ${at}\n`,
    );
    expect(text).toContain(
      `container_memory_working_set_bytes{container="main",namespace="default",pod="web"} ${64 * 1024 * 1024} ${at}\n`,
    );
    expect(text).toContain(`pod_cpu_usage_seconds_total{namespace="default",pod="web"} 2 ${at}\n`);
    expect(text).toContain(
      `pod_memory_working_set_bytes{namespace="default",pod="web"} ${64 * 1024 * 1024} ${at}\n`,
    );
    expect(text).toContain(`node_cpu_usage_seconds_total 10 ${at}\n`);
    expect(text).toContain(`node_memory_working_set_bytes ${2_500_000 * 1024} ${at}\n`);
    expect(text).toMatch(
      /^container_start_time_seconds\{container="main",namespace="default",pod="web"\} \d+(\.\d+)? \d+$/m,
    );
    expect(text).toContain('\nresource_scrape_error 0\n');
  });

  it('says only scrape_error 1 when the stats could not be read', () => {
    const text = formatResourceMetrics(undefined);
    expect(text).toContain('\nresource_scrape_error 1\n');
    expect(text).toContain('\nscrape_error 1\n');
    expect(text).not.toContain('node_cpu_usage_seconds_total');
  });
});
