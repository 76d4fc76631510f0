import { describe, expect, it } from 'vitest';
import {
  isExtendedResourceName,
  isHugePageResourceName,
  isNativeResource,
  qualifiedNameProblem,
} from '../src/index.js';

describe('resource names', () => {
  it('native: unprefixed, or in the kubernetes.io namespace', () => {
    for (const n of ['cpu', 'memory', 'hugepages-2Mi', 'kubernetes.io/foo', 'node.kubernetes.io/bar'])
      expect(isNativeResource(n), n).toBe(true);
    expect(isNativeResource('dummy.com/dummy')).toBe(false);
  });

  it('extended: any other qualified name, except quota-style requests. names', () => {
    for (const n of ['dummy.com/dummy', 'nvidia.com/gpu', 'example.com/a_b.c'])
      expect(isExtendedResourceName(n), n).toBe(true);
    for (const n of [
      'cpu',
      'kubernetes.io/foo',
      'requests.example.com/x',
      'example.com/-bad',
      'Example.com/x',
      'a/b/c',
    ])
      expect(isExtendedResourceName(n), n).toBe(false);
  });

  it('hugepages by prefix', () => {
    expect(isHugePageResourceName('hugepages-1Gi')).toBe(true);
    expect(isHugePageResourceName('memory')).toBe(false);
  });

  it('qualified names: optional DNS subdomain prefix, name part of at most 63 characters', () => {
    expect(qualifiedNameProblem('example.com/name')).toBeUndefined();
    expect(qualifiedNameProblem('a'.repeat(63))).toBeUndefined();
    expect(qualifiedNameProblem('a'.repeat(64))).toMatch(/name part/);
    expect(qualifiedNameProblem('/name')).toMatch(/prefix part/);
    expect(qualifiedNameProblem('a/b/c')).toMatch(/optional DNS subdomain prefix/);
  });
});
