import type { Scenario } from '@kh/harness';
import {
  diskConsumingPod,
  evictionGuardMs,
  PRESSURE_TIMEOUT_MS,
  runEvictionTest,
} from '../support/eviction.js';

// Upstream's sizes: a 100Mi budget, written 1 MiB past it or 1 MiB short of it.
const LIMIT = '100Mi';
const OVER_MIB = 101;
const UNDER_MIB = 99;

/**
 * eviction_test's LocalStorageCapacityIsolationEviction: with no node pressure at all (every hard
 * threshold but a disabled memory one removed), pods that outgrow their own ephemeral-storage
 * budget are evicted: an emptyDir past its sizeLimit, a container past its ephemeral-storage
 * limit through its writable layer, and through an emptyDir. A memory-backed emptyDir cannot
 * pass its sizeLimit (its tmpfs is that large), and pods 1 MiB under their budget stay.
 */
export const localStorageIsolation: Scenario = {
  name: 'local-storage-isolation',
  estimateMs: 60_000,
  isolation: 'node',
  description:
    'emptyDir sizeLimit, container and pod ephemeral-storage limits evict the pods over them with no node pressure; a memory-backed emptyDir and pods under their limits survive',
  needs: ['real-containers'],
  upstream: [
    {
      file: 'test/e2e_node/eviction_test.go',
      case: 'LocalStorageCapacityIsolationEviction when we run containers that should cause evictions due to pod local storage violations should eventually evict all of the correct pods',
    },
  ],
  // Slowest seen 191 s (t59c, containerd).
  timeoutMs: evictionGuardMs(195_000, PRESSURE_TIMEOUT_MS.LocalStorageCapacityIsolationEviction),
  async run(ctx) {
    const limits = { limits: { 'ephemeral-storage': LIMIT } };
    const sizeLimited = (medium?: string) => ({
      emptyDir: { sizeLimit: LIMIT, ...(medium ? { medium } : {}) },
    });
    await ctx.reconfigureAgent({ evictionHard: { 'memory.available': '0%' } });
    try {
      await runEvictionTest(ctx, {
        pressureTimeoutMs: PRESSURE_TIMEOUT_MS.LocalStorageCapacityIsolationEviction,
        message: (s) =>
          s.pod.metadata?.name === 'emptydir-disk-sizelimit-pod'
            ? /^Usage of EmptyDir volume "test-volume" exceeds the limit "100Mi"\. $/
            : // The pod-level sum is checked before each container's limit, as the kubelet does.
              /^Pod ephemeral local storage usage exceeds the total limit of containers 100Mi\. $/,
        specs: [
          {
            evictionPriority: 1,
            pod: diskConsumingPod(ctx, 'emptydir-disk-sizelimit', OVER_MIB, { volume: sizeLimited() }),
          },
          {
            evictionPriority: 1,
            pod: diskConsumingPod(ctx, 'container-disk-limit', OVER_MIB, { resources: limits }),
          },
          {
            evictionPriority: 1,
            pod: diskConsumingPod(ctx, 'container-emptydir-disk-limit', OVER_MIB, {
              volume: { emptyDir: {} },
              resources: limits,
            }),
          },
          {
            evictionPriority: 0,
            pod: diskConsumingPod(ctx, 'emptydir-memory-sizelimit', OVER_MIB, {
              volume: sizeLimited('Memory'),
            }),
          },
          {
            evictionPriority: 0,
            pod: diskConsumingPod(ctx, 'emptydir-disk-below-sizelimit', UNDER_MIB, { volume: sizeLimited() }),
          },
          {
            evictionPriority: 0,
            pod: diskConsumingPod(ctx, 'container-disk-below-sizelimit', UNDER_MIB, { resources: limits }),
          },
        ],
      });
    } finally {
      await ctx.reconfigureAgent({});
    }
  },
};
