import { QuantityError } from '@kh/apimachinery';
import type { V1Container } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { linuxResources } from '../../src/kuberuntime/resources.js';

const withResources = (resources: V1Container['resources']): V1Container => ({ name: 'c', resources });

describe('linuxResources', () => {
  it('turns requests and limits into cpu shares, CFS quota and a memory limit', () => {
    const r = linuxResources(
      withResources({ requests: { cpu: '250m' }, limits: { cpu: '1500m', memory: '128Mi' } }),
    );
    expect(r.cpuShares).toBe(256n);
    expect(r.cpuPeriod).toBe(100_000n);
    expect(r.cpuQuota).toBe(150_000n);
    expect(r.memoryLimitInBytes).toBe(128n * 1024n * 1024n);
  });

  it('takes the request from the limit and accepts plain JSON numbers', () => {
    const r = linuxResources(withResources({ limits: { cpu: 2 as unknown as string, memory: '1e9' } }));
    expect(r.cpuShares).toBe(2048n);
    expect(r.cpuQuota).toBe(200_000n);
    expect(r.memoryLimitInBytes).toBe(1_000_000_000n);
  });

  it('has minimum shares and no quota without cpu, a minimum quota for tiny limits', () => {
    expect(linuxResources(withResources(undefined))).toMatchObject({
      cpuShares: 2n,
      cpuQuota: 0n,
      cpuPeriod: 0n,
      memoryLimitInBytes: 0n,
    });
    const tiny = linuxResources(withResources({ limits: { cpu: '1m' } }));
    expect(tiny.cpuShares).toBe(2n);
    expect(tiny.cpuQuota).toBe(1000n);
  });

  it('rounds sub-millicore cpu and fractional bytes up, as the kubelet does', () => {
    const r = linuxResources(withResources({ limits: { cpu: '100500u', memory: '1.5' } }));
    expect(r.cpuQuota).toBe(10_100n); // 101m
    expect(r.memoryLimitInBytes).toBe(2n);
  });

  it('rejects a malformed quantity with a QuantityError naming it', () => {
    expect(() => linuxResources(withResources({ limits: { memory: '64MB' } }))).toThrow(QuantityError);
    expect(() => linuxResources(withResources({ requests: { cpu: 'lots' } }))).toThrow(/"lots"/);
  });
});
