import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '@kh/apimachinery';
import { CriClient, FakeRuntime } from '@kh/cri-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
