import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CriClient, FakeRuntime } from '@kh/cri-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CriPodStatsSource, diskUsage } from '../../src/eviction/pod_stats.js';

const root = mkdtempSync(join(tmpdir(), 'kh-podstats-'));
let fake: FakeRuntime;
let cri: CriClient;

beforeAll(async () => {
  fake = await FakeRuntime.start({ socketPath: join(root, 'cri.sock') });
  cri = await CriClient.connect(fake.endpoint);
  fake.addImage('busybox:1', 1000);
  const labels = {
    'io.kubernetes.pod.uid': 'u1',
    'io.kubernetes.pod.name': 'web',
    'io.kubernetes.pod.namespace': 'default',
  };
  const { podSandboxId } = await cri.runPodSandbox({
    config: { metadata: { name: 'web', namespace: 'default', uid: 'u1' }, labels },
  });
  const { containerId } = await cri.createContainer({
    podSandboxId,
    config: {
      metadata: { name: 'app' },
      image: { image: 'busybox:1' },
      labels: { ...labels, 'io.kubernetes.container.name': 'app' },
    },
  });
  await cri.startContainer({ containerId });
  fake.script.containerStats('app', { memoryWorkingSetBytes: 64 << 20, writableLayerUsedBytes: 4096 });
});

afterAll(async () => {
  cri?.close();
  await fake?.stop();
  rmSync(root, { recursive: true, force: true });
});

describe('CriPodStatsSource', () => {
  it('combines CRI container stats with logs and emptyDir usage on disk', async () => {
    const podsDir = join(root, 'pods');
    const logsDir = join(root, 'logs');
    const vol = join(podsDir, 'u1', 'volumes', 'kubernetes.io~empty-dir', 'scratch');
    mkdirSync(vol, { recursive: true });
    writeFileSync(join(vol, 'blob'), Buffer.alloc(64 * 1024, 1));
    mkdirSync(join(logsDir, 'default_web_u1', 'app'), { recursive: true });
    writeFileSync(join(logsDir, 'default_web_u1', 'app', '0.log'), Buffer.alloc(32 * 1024, 1));
    const logs = await diskUsage(join(logsDir, 'default_web_u1', 'app'));
    expect(logs).toBeGreaterThanOrEqual(32 * 1024);

    const stats = await new CriPodStatsSource(cri, {
      podsDir,
      podLogsDir: logsDir,
      processCount: async (uid) => (uid === 'u1' ? 7 : undefined),
    }).podStats();
    expect(stats).toHaveLength(1);
    const [p] = stats;
    expect(p?.uid).toBe('u1');
    expect(p?.processCount).toBe(7);
    expect(p?.containers).toEqual([
      { name: 'app', memoryWorkingSetBytes: 64 << 20, ephemeralStorageBytes: 4096 + logs },
    ]);
    expect(p?.volumes).toHaveLength(1);
    expect(p?.volumes[0]?.name).toBe('scratch');
    expect(p?.volumes[0]?.usedBytes).toBeGreaterThanOrEqual(64 * 1024);
  });

  it('measures a missing path as zero', async () => {
    expect(await diskUsage(join(root, 'nope'))).toBe(0);
  });
});
