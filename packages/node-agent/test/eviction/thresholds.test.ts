import { formatFieldError } from '@kh/apimachinery';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/field_errors.js';
import { parseFlags } from '../../src/config/flags.js';
import { resolveKubeletConfiguration } from '../../src/config/resolve.js';
import { defaultKubeletConfiguration, type KubeletConfiguration } from '../../src/config/types.js';
import { validateKubeletConfiguration } from '../../src/config/validation.js';
import { evictionConfigFrom, thresholdAmount, thresholdsMet } from '../../src/eviction/thresholds.js';
import { Quantity } from '../../src/util/quantity.js';
import { Gi, Mi, memoryObs } from './helpers.js';

function configOf(patch: Partial<KubeletConfiguration>) {
  const cfg = { ...defaultKubeletConfiguration(), ...patch };
  return evictionConfigFrom(cfg, resolveKubeletConfiguration(cfg));
}

describe('evictionConfigFrom', () => {
  it('carries the kubelet defaults as hard thresholds', () => {
    const c = configOf({});
    expect(c.thresholds.map((t) => [t.signal, t.hard, t.gracePeriodMs])).toEqual([
      ['memory.available', true, 0],
      ['nodefs.available', true, 0],
      ['nodefs.inodesFree', true, 0],
      ['imagefs.available', true, 0],
      // enforceNodeAllocatable defaults to [pods]: memory.available also guards kubepods.
      ['allocatableMemory.available', true, 0],
    ]);
    expect(c.thresholds[0]?.value).toEqual({ quantity: Quantity.parse('100Mi') });
    expect(c.thresholds[1]?.value).toEqual({ percentage: 0.1 });
    expect(c.thresholds[2]?.value).toEqual({ percentage: 0.05 });
    expect(c.thresholds[3]?.value).toEqual({ percentage: 0.15 });
    expect(c.pressureTransitionPeriodMs).toBe(300_000);
    expect(c.monitoringIntervalMs).toBe(10_000);
    expect(c.maxPodGracePeriodSeconds).toBe(0);
  });

  it('copies the hard memory.available threshold to allocatableMemory.available only when pods are enforced', () => {
    const evictionHard = { 'memory.available': '5%', 'nodefs.available': '10%' };
    const evictionMinimumReclaim = { 'memory.available': '50Mi' };
    const withPods = configOf({ evictionHard, evictionMinimumReclaim, enforceNodeAllocatable: ['pods'] });
    expect(withPods.thresholds.find((t) => t.signal === 'allocatableMemory.available')).toMatchObject({
      hard: true,
      value: { percentage: 0.05 },
      minReclaim: { quantity: Quantity.parse('50Mi') },
    });
    const soft = configOf({
      evictionHard: {},
      evictionSoft: { 'memory.available': '200Mi' },
      evictionSoftGracePeriod: { 'memory.available': '1m' },
    });
    expect(soft.thresholds.map((t) => t.signal)).toEqual(['memory.available']);
    for (const enforce of [['none'], []])
      expect(
        configOf({ evictionHard, enforceNodeAllocatable: enforce }).thresholds.map((t) => t.signal),
      ).toEqual(['memory.available', 'nodefs.available']);
  });

  it('adds soft thresholds with their grace periods, minimum reclaim and the max pod grace period', () => {
    const c = configOf({
      evictionSoft: { 'memory.available': '1Gi' },
      evictionSoftGracePeriod: { 'memory.available': '1m30s' },
      evictionMinimumReclaim: { 'memory.available': '500Mi' },
      evictionMaxPodGracePeriod: 20,
    });
    const soft = c.thresholds.find((t) => !t.hard);
    expect(soft).toMatchObject({ signal: 'memory.available', gracePeriodMs: 90_000 });
    expect(soft?.minReclaim).toEqual({ quantity: Quantity.parse('500Mi') });
    expect(c.thresholds.find((t) => t.hard && t.signal === 'memory.available')?.minReclaim).toEqual({
      quantity: Quantity.parse('500Mi'),
    });
    expect(c.maxPodGracePeriodSeconds).toBe(20);
  });

  it('lists every problem as field errors', () => {
    try {
      configOf({
        evictionHard: { 'memory.available': '0' },
        evictionMinimumReclaim: { 'pid.available': '100' },
      });
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      expect((e as ConfigError).message).toContain(
        'evictionMinimumReclaim[pid.available]: Invalid value: "100": has no matching evictionHard or evictionSoft threshold',
      );
      expect((e as ConfigError).message).toContain(
        'evictionHard[memory.available]: Invalid value: "0": must be positive',
      );
      expect((e as ConfigError).errors).toHaveLength(2);
    }
  });
});

describe('soft threshold configuration', () => {
  const errorsOf = (patch: Partial<KubeletConfiguration>) =>
    validateKubeletConfiguration({ ...defaultKubeletConfiguration(), ...patch }).map(formatFieldError);

  it('rejects a soft threshold without a grace period, as the kubelet does', () => {
    expect(errorsOf({ evictionSoft: { 'nodefs.available': '10Gi' } })).toEqual([
      'evictionSoftGracePeriod[nodefs.available]: Required value: grace period must be specified for the soft eviction threshold nodefs.available',
    ]);
    expect(
      errorsOf({
        evictionSoft: { 'nodefs.available': '10Gi' },
        evictionSoftGracePeriod: { 'nodefs.available': '30s' },
      }),
    ).toEqual([]);
  });

  it('reads the soft eviction flags into the configuration', () => {
    const { configOverrides, errors } = parseFlags([
      '--eviction-soft=nodefs.available<10Gi',
      '--eviction-soft-grace-period=nodefs.available=1m30s',
      '--eviction-max-pod-grace-period=30',
    ]);
    expect(errors).toEqual([]);
    expect(configOverrides).toMatchObject({
      evictionSoft: { 'nodefs.available': '10Gi' },
      evictionSoftGracePeriod: { 'nodefs.available': '1m30s' },
      evictionMaxPodGracePeriod: 30,
    });
  });

  it('switches thresholds of 0% and 100% off: no threshold, and no grace period needed', () => {
    const patch = {
      evictionHard: { 'memory.available': '0%' },
      evictionSoft: { 'nodefs.available': '100%', 'imagefs.available': '10%' },
      evictionSoftGracePeriod: { 'imagefs.available': '1m' },
      evictionMinimumReclaim: { 'imagefs.available': '0%' },
    };
    expect(errorsOf(patch)).toEqual([]);
    const c = configOf(patch);
    expect(c.thresholds.map((t) => [t.signal, t.hard, t.gracePeriodMs, t.minReclaim])).toEqual([
      ['imagefs.available', false, 60_000, undefined],
    ]);
  });
});

describe('thresholds', () => {
  it('resolves percentages against capacity, truncating', () => {
    expect(thresholdAmount({ percentage: 0.1 }, 1001), 'percent').toBe(100);
    expect(thresholdAmount({ quantity: Quantity.parse('100Mi') }, 0)).toBe(100 * Mi);
  });

  it('is met only strictly below the value, and with minimum reclaim until value + reclaim', () => {
    const [mem] = configOf({ evictionMinimumReclaim: { 'memory.available': '50Mi' } }).thresholds;
    if (!mem) throw new Error('no threshold');
    expect(thresholdsMet([mem], memoryObs(100 * Mi), false)).toEqual([]);
    expect(thresholdsMet([mem], memoryObs(100 * Mi - 1), false)).toEqual([mem]);
    expect(thresholdsMet([mem], memoryObs(120 * Mi), true)).toEqual([mem]);
    expect(thresholdsMet([mem], memoryObs(150 * Mi), true)).toEqual([]);
  });

  it('ignores signals that were not observed', () => {
    const c = configOf({});
    const met = thresholdsMet(
      c.thresholds,
      { 'nodefs.available': { available: 5 * Gi, capacity: 100 * Gi } },
      false,
    );
    expect(met.map((t) => t.signal)).toEqual(['nodefs.available']);
  });
});
