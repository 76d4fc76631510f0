// Upstream's cases for CgroupName conversions (cgroup_manager_linux_test.go).
import { expect, test } from 'vitest';
import {
  cgroupNameToCgroupfs,
  cgroupNameToSystemd,
  cgroupNameToSystemdBasename,
  cgroupRootForKubepods,
  parseCgroupfsToCgroupName,
  parseSystemdToCgroupName,
} from '../../src/cm/cgroup_name.js';

test.each([
  [['system'], 'system.slice'],
  [['system', 'Burstable'], 'system-Burstable.slice'],
  [['Burstable', 'pod-123'], 'Burstable-pod_123.slice'],
  [['test', 'a', 'b'], 'test-a-b.slice'],
  [['test', 'a', 'b', 'Burstable'], 'test-a-b-Burstable.slice'],
  [['Burstable'], 'Burstable.slice'],
  [
    ['BestEffort', 'pod-6c1a4e95-6bb6-11e6-bc26-28d2444e470d'],
    'BestEffort-pod_6c1a4e95_6bb6_11e6_bc26_28d2444e470d.slice',
  ],
])('systemd basename of %j is %s (TestCgroupNameToSystemdBasename)', (name, want) => {
  expect(cgroupNameToSystemdBasename(name)).toBe(want);
});

test.each([
  [[], '/'],
  [['system'], '/system.slice'],
  [['system', 'Burstable'], '/system.slice/system-Burstable.slice'],
  [
    ['kubepods', 'burstable', 'pod0b3e9b79-85f2-4fb7-9a64-1d6d5b0e5d8c'],
    '/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0b3e9b79_85f2_4fb7_9a64_1d6d5b0e5d8c.slice',
  ],
])('systemd name of %j is %s (TestCgroupNameToSystemd)', (name, want) => {
  expect(cgroupNameToSystemd(name)).toBe(want);
});

test.each([
  [[], '/'],
  [['Burstable'], '/Burstable'],
  [['kubepods', 'burstable', 'pod-1'], '/kubepods/burstable/pod-1'],
])('cgroupfs name of %j is %s (TestCgroupNameToCgroupfs)', (name, want) => {
  expect(cgroupNameToCgroupfs(name)).toBe(want);
});

test('parsing inverts the names', () => {
  expect(parseCgroupfsToCgroupName('/docker/abc/')).toEqual(['docker', 'abc']);
  expect(parseCgroupfsToCgroupName('/')).toEqual([]);
  expect(parseCgroupfsToCgroupName('')).toEqual([]);
  expect(
    parseSystemdToCgroupName('/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1_2.slice'),
  ).toEqual(['kubepods', 'besteffort', 'pod1-2']);
  expect(parseSystemdToCgroupName('/')).toEqual([]);
});

test('cgroupRootForKubepods: the root whose kubepods is the given path', () => {
  expect(cgroupRootForKubepods('/docker/abc/kubepods')).toBe('/docker/abc');
  expect(cgroupRootForKubepods('/kubepods')).toBe('/');
  expect(() => cgroupRootForKubepods('/docker/abc')).toThrow('/docker/abc is not a kubepods cgroup');
});
