import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CriClient, FakeRuntime } from '@kh/cri-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CriPodStatsSource,
  criSandboxProcessCount,
  fsUsage,
  podCgroupProcessCount,
  podProcessCounter,
} from '../../src/eviction/pod_stats.js';
import { silentLogger } from '../../src/util/log.js';

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
  fake.script.containerStats('app', {
    memoryWorkingSetBytes: 64 << 20,
    writableLayerUsedBytes: 4096,
    writableLayerInodesUsed: 12,
  });
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
    writeFileSync(join(vol, 'empty'), '');
    const logs = await fsUsage(join(logsDir, 'default_web_u1', 'app'));
    expect(logs.bytes).toBeGreaterThanOrEqual(32 * 1024);
    // The directory and its one file.
    expect(logs.inodes).toBe(2);

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
      {
        name: 'app',
        memoryWorkingSetBytes: 64 << 20,
        ephemeralStorageBytes: 4096 + logs.bytes,
        inodesUsed: 12 + logs.inodes,
      },
    ]);
    expect(p?.volumes).toHaveLength(1);
    expect(p?.volumes[0]?.name).toBe('scratch');
    expect(p?.volumes[0]?.usedBytes).toBeGreaterThanOrEqual(64 * 1024);
    // An empty file takes no block but an inode: the volume's directory and its two files.
    expect(p?.volumes[0]?.inodesUsed).toBe(3);
  });

  it('measures a missing path as zero', async () => {
    expect(await fsUsage(join(root, 'nope'))).toEqual({ bytes: 0, inodes: 0 });
  });
});

describe('podCgroupProcessCount', () => {
  it("reads the pod cgroup's pids.current under the v1 pids hierarchy or in a v2 cgroup", async () => {
    const mount = join(root, 'cgroup');
    const v1 = join(mount, 'pids', 'kubepods', 'besteffort', 'podu1');
    const v2 = join(mount, 'kubepods.slice', 'kubepods-podu2.slice');
    mkdirSync(v1, { recursive: true });
    mkdirSync(v2, { recursive: true });
    writeFileSync(join(v1, 'pids.current'), '5001\n');
    writeFileSync(join(v2, 'pids.current'), '42\n');
    const cgroups: Record<string, string> = {
      u1: '/kubepods/besteffort/podu1',
      u2: '/kubepods.slice/kubepods-podu2.slice',
      u3: '/kubepods/podu3',
    };
    const count = podCgroupProcessCount({
      pod: (uid) => (uid === 'gone' ? undefined : { metadata: { uid } }),
      cgroup: (pod) => cgroups[pod.metadata?.uid ?? ''] ?? '',
      mount,
    });
    expect(await count('u1')).toBe(5001);
    expect(await count('u2')).toBe(42);
    // No cgroup (yet, or any more), or no pod: no count, so the pod ranks as one without stats.
    expect(await count('u3')).toBeUndefined();
    expect(await count('gone')).toBeUndefined();
  });
});

describe('criSandboxProcessCount (PodAndContainerStatsFromCRI)', () => {
  type Req = { filter: { id: string; labelSelector: Record<string, string> } };
  const scripted = (counts: Record<string, (number | undefined)[]>) => {
    const requests: Req[] = [];
    return {
      requests,
      cri: {
        async listPodSandboxStats(req: Req) {
          requests.push(req);
          const uid = req.filter.labelSelector['io.kubernetes.pod.uid'] ?? '';
          return {
            stats: (counts[uid] ?? []).map((n) => ({
              linux: n === undefined ? {} : { process: { processCount: { value: BigInt(n) } } },
            })),
          };
        },
      },
    };
  };

  it("takes the runtime's count for the pod's sandboxes, not the cgroup's", async () => {
    const { cri: runtime, requests } = scripted({ u1: [12], u2: [3, 4], u3: [undefined], u4: [] });
    const count = criSandboxProcessCount({ cri: runtime, fallback: async () => 999 });
    expect(await count('u1')).toBe(12);
    expect(requests[0]).toEqual({ filter: { id: '', labelSelector: { 'io.kubernetes.pod.uid': 'u1' } } });
    expect(await count('u2')).toBe(7);
    // A sandbox without a count, or none ready: no count, so the pod ranks as one without stats.
    expect(await count('u3')).toBeUndefined();
    expect(await count('u4')).toBeUndefined();
  });

  it('says once that a runtime lacks ListPodSandboxStats and counts from the cgroup from then on', async () => {
    const errors: string[] = [];
    const log = { ...silentLogger, error: (msg: string) => errors.push(msg) };
    const calls = { fallback: 0 };
    const count = criSandboxProcessCount({
      cri, // the in-memory runtime has no ListPodSandboxStats: UNIMPLEMENTED
      fallback: async (uid) => {
        calls.fallback++;
        return uid === 'u1' ? 5 : undefined;
      },
      log,
    });
    expect(await count('u1')).toBe(5);
    expect(await count('u2')).toBeUndefined();
    expect(calls.fallback).toBe(2);
    expect(errors).toEqual([
      'CRI implementation must be updated to support ListPodSandboxStats if PodAndContainerStatsFromCRI feature gate is enabled; falling back to the pod cgroup',
    ]);
  });

  it('fails the pass on any other error, as the summary does', async () => {
    const count = criSandboxProcessCount({
      cri: {
        listPodSandboxStats: () => Promise.reject(new Error('connection reset')),
      },
      fallback: async () => 1,
    });
    await expect(count('u1')).rejects.toThrow('connection reset');
  });
});

describe('podProcessCounter', () => {
  const runtime = {
    listPodSandboxStats: async () => ({ stats: [{ linux: { process: { processCount: { value: 9n } } } }] }),
  };
  const cgroup = async () => 2;

  it("counts from the pod cgroup without the gate, and from the runtime's sandbox stats with it", async () => {
    expect(
      await podProcessCounter({ podAndContainerStatsFromCRI: false, cri: runtime, cgroup })?.('u1'),
    ).toBe(2);
    expect(await podProcessCounter({ podAndContainerStatsFromCRI: true, cri: runtime, cgroup })?.('u1')).toBe(
      9,
    );
    // Without pod cgroups the gate still gives the runtime's count.
    expect(await podProcessCounter({ podAndContainerStatsFromCRI: true, cri: runtime })?.('u1')).toBe(9);
    expect(podProcessCounter({ podAndContainerStatsFromCRI: false, cri: runtime })).toBeUndefined();
  });
});
