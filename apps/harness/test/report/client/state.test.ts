import { describe, expect, it } from 'vitest';
import { logTicks, niceTicks } from '../../../src/report/client/charts.js';
import { formatMs } from '../../../src/report/client/format.js';
import { decodeHash, encodeHash, normalizeState, visibleAxes } from '../../../src/report/client/state.js';
import type { ReportModel } from '../../../src/report/model.js';

const model: Pick<ReportModel, 'runtimes' | 'scenarios' | 'cells'> = {
  runtimes: ['containerd', 'docker', 'fake'].map((name) => ({
    name,
    runtimeName: name,
    runtimeVersion: '1',
  })),
  scenarios: ['probes', 'gc', 'eviction'],
  cells: [
    ['containerd', 'probes', 'passed'],
    ['docker', 'probes', 'failed'],
    ['fake', 'probes', 'passed'],
    ['containerd', 'gc', 'passed'],
    ['docker', 'gc', 'passed'],
    ['containerd', 'eviction', 'failed'],
    ['fake', 'eviction', 'skipped'],
  ].map(([runtime, scenario, outcome]) => ({
    id: `${runtime}/${scenario}`,
    runtime: runtime!,
    scenario: scenario!,
    outcome: outcome as 'passed',
    startedAt: '',
    durationMs: 1,
    assertions: [],
    timeline: [],
    logs: [],
  })),
};

describe('URL hash', () => {
  it('encodes the example from the issue readably and decodes it back', () => {
    const state = { runtime: 'containerd', failuresOnly: true, cell: 'containerd/probes' };
    expect(encodeHash(state)).toBe('runtime=containerd&failures=1&cell=containerd/probes');
    expect(decodeHash('#runtime=containerd&failures=1&cell=containerd/probes')).toEqual(state);
  });

  it('round-trips names that need escaping', () => {
    const state = {
      runtime: 'cri-o & co',
      scenario: 'a=b/c#d',
      failuresOnly: false,
      cell: 'cri-o & co/a=b/c#d',
    };
    const hash = encodeHash(state);
    expect(hash).not.toContain('#');
    expect(hash).not.toContain(' ');
    expect(decodeHash(`#${hash}`)).toEqual(state);
  });

  it('leaves defaults out and tolerates junk', () => {
    expect(encodeHash({ failuresOnly: false })).toBe('');
    expect(decodeHash('')).toEqual({ failuresOnly: false });
    expect(decodeHash('#failures=true&unknown=1&runtime=')).toEqual({ failuresOnly: true });
    expect(decodeHash('#failures=0')).toEqual({ failuresOnly: false });
  });
});

describe('normalizeState', () => {
  it('drops runtimes, scenarios and cells the report does not have', () => {
    expect(
      normalizeState({ runtime: 'crio', scenario: 'gc', failuresOnly: true, cell: 'crio/gc' }, model),
    ).toEqual({ scenario: 'gc', failuresOnly: true });
    expect(normalizeState({ failuresOnly: false, cell: 'docker/probes' }, model)).toEqual({
      failuresOnly: false,
      cell: 'docker/probes',
    });
  });
});

describe('visibleAxes', () => {
  it('shows everything without filters', () => {
    expect(visibleAxes(model, { failuresOnly: false })).toEqual({
      runtimes: ['containerd', 'docker', 'fake'],
      scenarios: ['probes', 'gc', 'eviction'],
    });
  });

  it('keeps only rows and columns with a failure for "failures only"', () => {
    expect(visibleAxes(model, { failuresOnly: true })).toEqual({
      runtimes: ['containerd', 'docker'],
      scenarios: ['probes', 'eviction'],
    });
    expect(visibleAxes(model, { failuresOnly: true, runtime: 'docker' })).toEqual({
      runtimes: ['docker'],
      scenarios: ['probes'],
    });
    expect(visibleAxes(model, { failuresOnly: true, runtime: 'fake' })).toEqual({
      runtimes: [],
      scenarios: [],
    });
  });

  it('combines runtime and scenario filters', () => {
    expect(visibleAxes(model, { failuresOnly: false, runtime: 'fake', scenario: 'gc' })).toEqual({
      runtimes: ['fake'],
      scenarios: ['gc'],
    });
  });
});

describe('formatting', () => {
  it('formats durations for people', () => {
    expect(formatMs(0.25)).toBe('0.3 ms');
    expect(formatMs(9.96)).toBe('10 ms');
    expect(formatMs(96)).toBe('96 ms');
    expect(formatMs(1234)).toBe('1.2 s');
    expect(formatMs(67_035)).toBe('1 min 07 s');
  });

  it('picks round axis ticks', () => {
    expect(niceTicks(2710)).toEqual([0, 1000, 2000, 3000]);
    expect(niceTicks(2400)).toEqual([0, 500, 1000, 1500, 2000, 2500]);
    expect(niceTicks(0.9)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
    expect(niceTicks(0)).toEqual([0]);
    expect(logTicks(0.2, 1800)).toEqual([0.1, 1, 10, 100, 1000, 10000]);
    expect(logTicks(5, 5)).toEqual([1, 10]);
  });
});
