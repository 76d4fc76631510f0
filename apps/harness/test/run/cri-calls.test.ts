import { describe, expect, it } from 'vitest';
import type { AgentCriCall } from '../../src/node/cri-call-log.js';
import {
  agentCallEntry,
  CriCallTally,
  isReadOnlyCall,
  NEAR_FAILURE_MS,
  selectAgentCalls,
} from '../../src/run/cri-calls.js';

const T0 = 1_700_000_000_000;
const call = (t: number, method: string, durationMs = 1, code = 'OK'): AgentCriCall => ({
  at: T0 + t,
  method,
  durationMs,
  code,
});

describe('CriCallTally', () => {
  it('summarises every call per source and method with nearest-rank percentiles and errors', () => {
    const tally = new CriCallTally();
    for (let i = 1; i <= 100; i++)
      tally.add('agent', { method: 'ListContainers', durationMs: i, code: 'OK' });
    tally.add('agent', { method: 'ContainerStatus', durationMs: 5, code: 'NOT_FOUND' });
    tally.add('harness', { method: 'ListContainers', durationMs: 7 });
    expect(tally.stats()).toEqual([
      {
        source: 'agent',
        method: 'ContainerStatus',
        count: 1,
        errors: 1,
        codes: { NOT_FOUND: 1 },
        min: 5,
        p50: 5,
        p90: 5,
        p99: 5,
        max: 5,
      },
      {
        source: 'agent',
        method: 'ListContainers',
        count: 100,
        errors: 0,
        min: 1,
        p50: 50,
        p90: 90,
        p99: 99,
        max: 100,
      },
      {
        source: 'harness',
        method: 'ListContainers',
        count: 1,
        errors: 0,
        min: 7,
        p50: 7,
        p90: 7,
        p99: 7,
        max: 7,
      },
    ]);
  });
});

describe('isReadOnlyCall', () => {
  it('tells polling calls from calls that change state', () => {
    for (const m of [
      'ListContainers',
      'ListPodSandbox',
      'Version',
      'Status',
      'ContainerStatus',
      'ImageFsInfo',
      'ContainerStats',
    ])
      expect(isReadOnlyCall(m), m).toBe(true);
    for (const m of [
      'RunPodSandbox',
      'CreateContainer',
      'StartContainer',
      'StopPodSandbox',
      'PullImage',
      'ExecSync',
    ])
      expect(isReadOnlyCall(m), m).toBe(false);
  });
});

describe('selectAgentCalls', () => {
  it('keeps everything, in time order, when it fits', () => {
    const calls = [call(30, 'ListContainers'), call(10, 'RunPodSandbox'), call(20, 'CreateContainer')];
    expect(selectAgentCalls(calls, T0, []).map((c) => c.method)).toEqual([
      'RunPodSandbox',
      'CreateContainer',
      'ListContainers',
    ]);
  });

  it('fills a small budget with errors, then calls near a failure, then state changes, then the slowest reads', () => {
    const polls = Array.from({ length: 100 }, (_, i) =>
      call(i * 1_000, i % 2 ? 'ListContainers' : 'ListPodSandbox'),
    );
    const error = call(50_050, 'ContainerStatus', 2, 'NOT_FOUND');
    const nearFailure = call(90_000 - NEAR_FAILURE_MS + 10, 'ListContainers');
    const change = call(12_345, 'CreateContainer');
    const slow = call(70_070, 'ListPodSandbox', 900);
    const all = [...polls, error, nearFailure, change, slow];
    const picked = selectAgentCalls(all, T0, [90_000], 20);
    expect(picked).toHaveLength(20);
    expect(picked).toContain(error);
    expect(picked).toContain(change);
    // Polls at 85..95 s and nearFailure: all 12 are kept.
    expect(picked.filter((c) => Math.abs(c.at - T0 - 90_000) <= NEAR_FAILURE_MS)).toHaveLength(12);
    expect(picked).toContain(nearFailure);
    // The 6 places left go to the slowest reads first.
    expect(picked).toContain(slow);
    expect(picked.map((c) => c.at)).toEqual([...picked.map((c) => c.at)].sort((a, b) => a - b));
  });

  it('spreads the sample of routine calls over the whole cell', () => {
    const polls = Array.from({ length: 1_000 }, (_, i) => call(i * 100, 'ListContainers'));
    const picked = selectAgentCalls(polls, T0, [], 50);
    expect(picked).toHaveLength(50);
    const times = picked.map((c) => c.at - T0);
    expect(Math.min(...times)).toBeLessThan(10_000);
    expect(Math.max(...times)).toBeGreaterThan(90_000);
  });
});

describe('agentCallEntry', () => {
  it('becomes a cri-call timeline entry tagged with the agent as its source', () => {
    expect(
      agentCallEntry({ ...call(1_500, 'PullImage', 34, 'NOT_FOUND'), error: 'no such tag' }, T0),
    ).toEqual({
      t: 1_500,
      kind: 'cri-call',
      source: 'agent',
      summary: 'PullImage failed: no such tag',
      method: 'PullImage',
      durationMs: 34,
      code: 'NOT_FOUND',
    });
  });
});
