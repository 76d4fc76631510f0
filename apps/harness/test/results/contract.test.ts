import { describe, expect, it } from 'vitest';
import {
  contractText,
  criContract,
  KUBELET_CRI_METHODS,
  withCriContract,
} from '../../src/results/contract.js';
import type { CriCallStats } from '../../src/results/model.js';

const stats = (
  method: string,
  count: number,
  codes?: Record<string, number>,
  source: CriCallStats['source'] = 'agent',
): CriCallStats => ({
  source,
  method,
  count,
  errors: Object.values(codes ?? {}).reduce((a, b) => a + b, 0),
  ...(codes ? { codes } : {}),
  min: 1,
  p50: 1,
  p90: 1,
  p99: 1,
  max: 1,
});

describe('criContract', () => {
  it('lists every kubelet 1.33 method, the ones the issue names and UpdateContainerResources among them', () => {
    const methods = criContract([]).map((r) => r.method);
    expect(methods).toEqual(KUBELET_CRI_METHODS.map((m) => m.method));
    for (const m of [
      'ReopenContainerLog',
      'RuntimeConfig',
      'UpdateRuntimeConfig',
      'PodSandboxStats',
      'ListPodSandboxStats',
      'CheckpointContainer',
      'UpdateContainerResources',
      'PullImage',
      'ImageFsInfo',
    ])
      expect(methods).toContain(m);
    expect(new Set(methods).size).toBe(methods.length);
    // kubelet 1.33 never asks for one container's stats; a row for it could only ever say "not called".
    expect(methods).not.toContain('ContainerStats');
  });

  it("counts the agent's calls, keeps error codes, and shows UNIMPLEMENTED as its own status", () => {
    const rows = criContract([
      stats('Version', 3),
      stats('ContainerStatus', 10, { NOT_FOUND: 2 }),
      stats('CheckpointContainer', 1, { UNIMPLEMENTED: 1 }),
      // The harness's own checks are not the kubelet's contract.
      stats('UpdateContainerResources', 4, undefined, 'harness'),
    ]);
    const by = new Map(rows.map((r) => [r.method, r]));
    expect(by.get('Version')).toEqual({
      method: 'Version',
      service: 'RuntimeService',
      status: 'called',
      count: 3,
    });
    expect(by.get('ContainerStatus')).toMatchObject({ status: 'called', count: 10, codes: { NOT_FOUND: 2 } });
    expect(by.get('CheckpointContainer')).toMatchObject({
      status: 'unimplemented',
      count: 1,
      codes: { UNIMPLEMENTED: 1 },
    });
    expect(by.get('UpdateContainerResources')).toEqual({
      method: 'UpdateContainerResources',
      service: 'RuntimeService',
      status: 'not-called',
      count: 0,
    });
    expect(by.get('ImageStatus')).toMatchObject({ service: 'ImageService', status: 'not-called' });
  });

  it('adds methods the agent called that the kubelet does not, after the kubelet ones', () => {
    const rows = criContract([stats('StreamContainers', 2), stats('Version', 1)]);
    expect(rows.at(-1)).toEqual({ method: 'StreamContainers', status: 'called', count: 2 });
    expect(rows).toHaveLength(KUBELET_CRI_METHODS.length + 1);
  });

  it('is attached to a runtime from its statistics', () => {
    const rt = withCriContract({
      name: 'a',
      runtimeName: 'a',
      runtimeVersion: '1',
      criCalls: [stats('Status', 5)],
    });
    expect(rt.criContract?.find((r) => r.method === 'Status')).toMatchObject({ status: 'called', count: 5 });
  });
});

describe('contractText', () => {
  it('reads as the status in words, then the failed calls by code', () => {
    expect(contractText({ method: 'X', status: 'not-called', count: 0 })).toBe('not called');
    expect(contractText({ method: 'X', status: 'called', count: 1 })).toBe('1 call');
    expect(
      contractText({ method: 'X', status: 'called', count: 7, codes: { NOT_FOUND: 2, UNKNOWN: 1 } }),
    ).toBe('7 calls, failed: NOT_FOUND ×2, UNKNOWN ×1');
    expect(
      contractText({ method: 'X', status: 'unimplemented', count: 2, codes: { UNIMPLEMENTED: 2 } }),
    ).toBe('Unimplemented: 2 calls, UNIMPLEMENTED ×2');
  });
});
