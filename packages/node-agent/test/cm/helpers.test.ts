// Upstream's table cases for pkg/kubelet/cm/helpers_linux.go (helpers_linux_test.go).
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { describe, expect, test } from 'vitest';
import {
  cpuSharesToCPUWeight,
  MIN_SHARES,
  milliCPUToQuota,
  milliCPUToShares,
  QUOTA_PERIOD,
  resourceConfigForPod,
} from '../../src/cm/helpers.js';

const list = (cpu: string, memory: string) => ({
  ...(cpu ? { cpu } : {}),
  ...(memory ? { memory } : {}),
});
const container = (requests: Record<string, string>, limits: Record<string, string>): V1Container => ({
  name: 'c',
  resources: { requests, limits },
});
const pod = (...containers: V1Container[]): V1Pod => ({ spec: { containers } });

describe('resourceConfigForPod (TestResourceConfigForPod)', () => {
  const burstableShares = milliCPUToShares(100n);
  const mi200 = 200n * 1024n * 1024n;
  const mi100 = 100n * 1024n * 1024n;
  const tuned = 5000n;
  const cases: {
    name: string;
    pod: V1Pod;
    enforceCPULimits?: boolean;
    period?: bigint;
    want: Record<string, bigint>;
  }[] = [
    { name: 'besteffort', pod: pod(container(list('', ''), list('', ''))), want: { cpuShares: MIN_SHARES } },
    {
      name: 'burstable-no-limits',
      pod: pod(container(list('100m', '100Mi'), list('', ''))),
      want: { cpuShares: burstableShares },
    },
    {
      name: 'burstable-with-limits',
      pod: pod(container(list('100m', '100Mi'), list('200m', '200Mi'))),
      want: { cpuShares: burstableShares, cpuQuota: 20000n, cpuPeriod: QUOTA_PERIOD, memory: mi200 },
    },
    {
      name: 'burstable-with-limits-no-cpu-enforcement',
      pod: pod(container(list('100m', '100Mi'), list('200m', '200Mi'))),
      enforceCPULimits: false,
      want: { cpuShares: burstableShares, cpuQuota: -1n, cpuPeriod: QUOTA_PERIOD, memory: mi200 },
    },
    {
      name: 'burstable-partial-limits',
      pod: pod(
        container(list('100m', '100Mi'), list('200m', '200Mi')),
        container(list('100m', '100Mi'), list('', '')),
      ),
      want: { cpuShares: milliCPUToShares(200n) },
    },
    {
      name: 'burstable-with-limits-with-tuned-quota',
      pod: pod(container(list('100m', '100Mi'), list('200m', '200Mi'))),
      period: tuned,
      want: { cpuShares: burstableShares, cpuQuota: 1000n, cpuPeriod: tuned, memory: mi200 },
    },
    {
      name: 'guaranteed',
      pod: pod(container(list('100m', '100Mi'), list('100m', '100Mi'))),
      want: { cpuShares: burstableShares, cpuQuota: 10000n, cpuPeriod: QUOTA_PERIOD, memory: mi100 },
    },
    {
      name: 'guaranteed-no-cpu-enforcement',
      pod: pod(container(list('100m', '100Mi'), list('100m', '100Mi'))),
      enforceCPULimits: false,
      want: { cpuShares: burstableShares, cpuQuota: -1n, cpuPeriod: QUOTA_PERIOD, memory: mi100 },
    },
    {
      name: 'guaranteed-with-tuned-quota',
      pod: pod(container(list('100m', '100Mi'), list('100m', '100Mi'))),
      period: tuned,
      want: { cpuShares: burstableShares, cpuQuota: 1000n, cpuPeriod: tuned, memory: mi100 },
    },
    {
      // Limits only: API defaulting makes the requests equal, so the pod is Guaranteed.
      name: 'guaranteed-limits-only',
      pod: pod(container({}, list('500m', '64Mi'))),
      want: { cpuShares: 512n, cpuQuota: 50000n, cpuPeriod: QUOTA_PERIOD, memory: 64n * 1024n * 1024n },
    },
    {
      // Memory limits everywhere but a CPU limit missing: memory is limited, CPU is not.
      name: 'burstable-memory-limits-only',
      pod: pod(
        container(list('100m', '100Mi'), list('', '200Mi')),
        container(list('', ''), list('', '100Mi')),
      ),
      want: { cpuShares: burstableShares, memory: mi200 + mi100 },
    },
  ];
  test.each(cases)('$name', ({ pod, enforceCPULimits, period, want }) => {
    expect(
      resourceConfigForPod(pod, {
        enforceCPULimits: enforceCPULimits ?? true,
        cpuPeriod: period ?? QUOTA_PERIOD,
      }),
    ).toEqual(want);
  });

  test('init containers: the larger of their peak and the app containers, for limits too', () => {
    const p: V1Pod = {
      spec: {
        initContainers: [{ name: 'i', resources: { limits: list('2', '1Gi') } }],
        containers: [container({}, list('500m', '100Mi'))],
      },
    };
    expect(resourceConfigForPod(p)).toEqual({
      cpuShares: 2048n,
      cpuQuota: 200000n,
      cpuPeriod: QUOTA_PERIOD,
      memory: 1024n * 1024n * 1024n,
    });
  });
});

test.each([
  [0n, 0n],
  [5n, 1000n],
  [9n, 1000n],
  [10n, 1000n],
  [200n, 20000n],
  [500n, 50000n],
  [1000n, 100000n],
  [1500n, 150000n],
])('milliCPUToQuota(%s) = %s (TestMilliCPUToQuota)', (milli, quota) => {
  expect(milliCPUToQuota(milli, QUOTA_PERIOD)).toBe(quota);
});

test.each([
  [0n, 2n],
  [1n, 2n],
  [2n, 2n],
  [100n, 102n],
  [1000n, 1024n],
  [2000n, 2048n],
  [1000000n, 262144n],
])('milliCPUToShares(%s) = %s (MinShares, SharesPerCPU, MaxShares)', (milli, shares) => {
  expect(milliCPUToShares(milli)).toBe(shares);
});

test.each([
  [2n, 1n],
  [1024n, 39n],
  [262144n, 10000n],
])('cpuSharesToCPUWeight(%s) = %s (runc: 2..262144 onto 1..10000)', (shares, weight) => {
  expect(cpuSharesToCPUWeight(shares)).toBe(weight);
});
