// Upstream's table cases for node allocatable (node_container_manager_linux_test.go):
// the scheduling reservation includes hard eviction, the cgroup enforcement value does not, and
// reservations above capacity are refused.
import { describe, expect, test } from 'vitest';
import {
  cgroupConfigFor,
  nodeAllocatableAbsolute,
  nodeAllocatableProblem,
  nodeAllocatableReservation,
  readMaxPID,
} from '../../src/cm/node_allocatable.js';
import type { EvictionThreshold, ResourceList } from '../../src/config/resolve.js';
import { Quantity } from '../../src/util/quantity.js';

/** getResourceList: '' leaves the resource out. */
const rl = (cpu: string, memory: string): ResourceList => ({
  ...(cpu ? { cpu: Quantity.parse(cpu) } : {}),
  ...(memory ? { memory: Quantity.parse(memory) } : {}),
});
const storage = (v: string): ResourceList => (v ? { 'ephemeral-storage': Quantity.parse(v) } : {});
const threshold = (signal: string, value: string | number): EvictionThreshold[] => [
  {
    signal,
    operator: 'LessThan',
    value: typeof value === 'number' ? { percentage: value } : { quantity: Quantity.parse(value) },
    gracePeriodMs: 0,
  },
];
const milli = (list: ResourceList) =>
  Object.fromEntries(Object.entries(list).map(([k, v]) => [k, v.milliValue()]));

interface Case {
  kube: ResourceList;
  system?: ResourceList;
  capacity: ResourceList;
  hard?: string | number;
  expected: ResourceList;
}

describe('nodeAllocatableReservation (TestNodeAllocatableReservationForScheduling)', () => {
  const cpuMem: Case[] = [
    {
      kube: rl('100m', '100Mi'),
      system: rl('50m', '50Mi'),
      capacity: rl('10', '10Gi'),
      expected: rl('150m', '150Mi'),
    },
    {
      kube: rl('100m', '100Mi'),
      system: rl('50m', '50Mi'),
      hard: '100Mi',
      capacity: rl('10', '10Gi'),
      expected: rl('150m', '250Mi'),
    },
    // 5% is a float32: 536870920 bytes of 10Gi, plus 150Mi.
    {
      kube: rl('100m', '100Mi'),
      system: rl('50m', '50Mi'),
      hard: 0.05,
      capacity: rl('10', '10Gi'),
      expected: rl('150m', '694157320'),
    },
    { kube: {}, system: {}, capacity: rl('10', '10Gi'), expected: rl('', '') },
    {
      kube: rl('', '100Mi'),
      system: rl('50m', '50Mi'),
      capacity: rl('10', '10Gi'),
      expected: rl('50m', '150Mi'),
    },
    {
      kube: rl('50m', '100Mi'),
      system: rl('', '50Mi'),
      capacity: rl('10', '10Gi'),
      expected: rl('50m', '150Mi'),
    },
    { kube: rl('', '100Mi'), system: rl('', '50Mi'), capacity: rl('10', ''), expected: rl('', '') },
  ];
  test.each(cpuMem.map((c, i) => [i + 1, c] as const))('cpu/memory case %i', (_, c) => {
    const got = nodeAllocatableReservation(
      {
        kubeReserved: c.kube,
        systemReserved: c.system ?? {},
        evictionHard: c.hard === undefined ? [] : threshold('memory.available', c.hard),
      },
      c.capacity,
    );
    expect(milli(got)).toEqual(milli(c.expected));
  });

  const storageCases: Case[] = [
    { kube: storage('100Mi'), capacity: storage('10Gi'), expected: storage('100Mi') },
    { kube: storage('100Mi'), hard: '100Mi', capacity: storage('10Gi'), expected: storage('200Mi') },
    { kube: storage('150Mi'), hard: 0.05, capacity: storage('10Gi'), expected: storage('694157320') },
    { kube: {}, capacity: storage('10Gi'), expected: storage('') },
  ];
  test.each(storageCases.map((c, i) => [i + 1, c] as const))('ephemeral-storage case %i', (_, c) => {
    const got = nodeAllocatableReservation(
      {
        kubeReserved: c.kube,
        systemReserved: {},
        evictionHard: c.hard === undefined ? [] : threshold('nodefs.available', c.hard),
      },
      c.capacity,
    );
    expect(milli(got)).toEqual(milli(c.expected));
  });
});

describe('nodeAllocatableAbsolute (TestNodeAllocatableForEnforcement): hard eviction is not subtracted', () => {
  const cases: Case[] = [
    {
      kube: rl('100m', '100Mi'),
      system: rl('50m', '50Mi'),
      capacity: rl('10', '10Gi'),
      expected: rl('9850m', '10090Mi'),
    },
    {
      kube: rl('100m', '100Mi'),
      system: rl('50m', '50Mi'),
      hard: '100Mi',
      capacity: rl('10', '10Gi'),
      expected: rl('9850m', '10090Mi'),
    },
    {
      kube: rl('100m', '100Mi'),
      system: rl('50m', '50Mi'),
      hard: 0.05,
      capacity: rl('10', '10Gi'),
      expected: rl('9850m', '10090Mi'),
    },
    { kube: {}, system: {}, capacity: rl('10', '10Gi'), expected: rl('10', '10Gi') },
    {
      kube: rl('', '100Mi'),
      system: rl('50m', '50Mi'),
      capacity: rl('10', '10Gi'),
      expected: rl('9950m', '10090Mi'),
    },
    {
      kube: rl('50m', '100Mi'),
      system: rl('', '50Mi'),
      capacity: rl('10', '10Gi'),
      expected: rl('9950m', '10090Mi'),
    },
    { kube: rl('', '100Mi'), system: rl('', '50Mi'), capacity: rl('10', ''), expected: rl('10', '') },
  ];
  test.each(cases.map((c, i) => [i + 1, c] as const))('case %i', (_, c) => {
    expect(
      milli(nodeAllocatableAbsolute(c.capacity, { kubeReserved: c.kube, systemReserved: c.system ?? {} })),
    ).toEqual(milli(c.expected));
  });

  test('a reservation above capacity gives zero, never a negative limit', () => {
    expect(
      milli(nodeAllocatableAbsolute(rl('1', '1Gi'), { kubeReserved: rl('2', '2Gi'), systemReserved: {} })),
    ).toEqual({
      cpu: 0n,
      memory: 0n,
    });
  });
});

describe('nodeAllocatableProblem (TestNodeAllocatableInputValidation)', () => {
  const valid: Case[] = [
    { kube: rl('100m', '100Mi'), system: rl('50m', '50Mi'), capacity: rl('10', '10Gi'), expected: {} },
    {
      kube: rl('100m', '100Mi'),
      system: rl('50m', '50Mi'),
      hard: '100Mi',
      capacity: rl('10', '10Gi'),
      expected: {},
    },
    {
      kube: rl('100m', '100Mi'),
      system: rl('50m', '50Mi'),
      hard: 0.05,
      capacity: rl('10', '10Gi'),
      expected: {},
    },
    { kube: {}, system: {}, capacity: rl('10', '10Gi'), expected: {} },
    { kube: rl('', '100Mi'), system: rl('50m', '50Mi'), capacity: rl('10', '10Gi'), expected: {} },
    { kube: rl('50m', '100Mi'), system: rl('', '50Mi'), capacity: rl('10', '10Gi'), expected: {} },
    { kube: rl('', '100Mi'), system: rl('', '50Mi'), capacity: rl('10', ''), expected: {} },
  ];
  const check = (c: Case, signal = 'memory.available') =>
    nodeAllocatableProblem(
      {
        kubeReserved: c.kube,
        systemReserved: c.system ?? {},
        evictionHard: c.hard === undefined ? [] : threshold(signal, c.hard),
      },
      c.capacity,
    );
  test.each(valid.map((c, i) => [i + 1, c] as const))('valid cpu/memory case %i', (_, c) => {
    expect(check(c)).toBeUndefined();
  });
  test('5 + 5 CPUs and 10Gi + 10Gi + 2Gi of memory do not fit 10 CPUs and 11Gi', () => {
    const problem = check({
      kube: rl('5', '10Gi'),
      system: rl('5', '10Gi'),
      hard: '2Gi',
      capacity: rl('10', '11Gi'),
      expected: {},
    });
    expect(problem).toMatch(/^invalid Node Allocatable configuration: resource "memory" reserves 22Gi/);
    // 10 of 10 CPUs is allowed: allocatable 0 is not negative.
    expect(problem).not.toMatch(/"cpu"/);
  });
  test('ephemeral-storage: 100Mi of 500Mi fits; 20Gi + 100Mi of 20Gi does not', () => {
    expect(
      check({ kube: storage('100Mi'), capacity: storage('500Mi'), expected: {} }, 'nodefs.available'),
    ).toBeUndefined();
    expect(
      check(
        { kube: storage('20Gi'), hard: '100Mi', capacity: storage('20Gi'), expected: {} },
        'nodefs.available',
      ),
    ).toMatch(/"ephemeral-storage"/);
  });
});

describe('cgroupConfigFor (getCgroupConfig)', () => {
  test('memory in bytes, cpu as shares, pid as the pids limit; nothing else', () => {
    expect(
      cgroupConfigFor({
        cpu: Quantity.parse('100m'),
        memory: Quantity.parse('200Mi'),
        pid: Quantity.parse('738'),
        'ephemeral-storage': Quantity.parse('1Gi'),
      }),
    ).toEqual({ cpuShares: 102n, memory: 200n * 1024n * 1024n, pidsLimit: 738n });
  });
  test('memory only', () => {
    expect(cgroupConfigFor({ memory: Quantity.parse('200Mi') })).toEqual({ memory: 200n * 1024n * 1024n });
  });
  test('1850m of CPU is 1894 shares', () => {
    expect(cgroupConfigFor({ cpu: Quantity.parse('1850m') })).toEqual({ cpuShares: 1894n });
  });
});

describe('readMaxPID (pidlimit.Stats)', () => {
  const files = (pidMax?: string, threadsMax?: string) => async (p: string) =>
    p.endsWith('pid_max') ? pidMax : p.endsWith('threads-max') ? threadsMax : undefined;
  test('the smaller of pid_max and threads-max', async () => {
    expect(await readMaxPID(files('4194304\n', '191620\n'))).toBe(191620n);
    expect(await readMaxPID(files('32768\n', '191620\n'))).toBe(32768n);
  });
  test('one readable file is enough; none is unknown', async () => {
    expect(await readMaxPID(files('32768\n', undefined))).toBe(32768n);
    expect(await readMaxPID(files(undefined, undefined))).toBeUndefined();
  });
});
