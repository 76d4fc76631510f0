// The matrix's CRI contract check (issue 35) on results made up here: no node, no runtime.
import type { CellResult, CriContractRow, RunResults } from '@kh/harness';
import { describe, expect, it } from 'vitest';
import { scenarios } from '../src/index.js';
import { CONTRACT_DRIVERS, contractGaps } from '../src/support/cri_contract.js';

const cell = (scenario: string, outcome: CellResult['outcome'], runtime = 'docker-26'): CellResult =>
  ({ runtime, scenario, outcome }) as CellResult;

function results(cells: CellResult[], rows: Partial<Record<string, CriContractRow['status']>>): RunResults {
  const criContract = Object.keys(CONTRACT_DRIVERS).map(
    (method): CriContractRow => ({
      method,
      status: rows[method] ?? 'not-called',
      count: rows[method] ? 1 : 0,
    }),
  );
  return { cells, runtimes: [{ name: 'docker-26', criContract }] } as unknown as RunResults;
}

const startUp = { RuntimeConfig: 'unimplemented', UpdateRuntimeConfig: 'called' } as const;

describe('contractGaps', () => {
  it('names every driving scenario after a scenario of this suite', () => {
    const names = new Set(scenarios.map((s) => s.name));
    for (const drivers of Object.values(CONTRACT_DRIVERS))
      for (const d of drivers) expect(names).toContain(d);
  });

  it("asks the start-up methods of any passed cell, and a scenario's methods only once it passed", () => {
    expect(
      contractGaps(
        results([cell('log-rotation', 'failed'), cell('cri-surface', 'skipped')], {}),
        'docker-26',
      ),
    ).toEqual([]);
    expect(contractGaps(results([cell('pod-lifecycle', 'passed')], {}), 'docker-26')).toEqual([
      'RuntimeConfig: not called, though pod-lifecycle passed',
      'UpdateRuntimeConfig: not called, though pod-lifecycle passed',
    ]);
    expect(
      contractGaps(
        results([cell('pod-lifecycle', 'passed'), cell('cri-surface', 'passed')], startUp),
        'docker-26',
      ),
    ).toEqual([
      'UpdateContainerResources: not called, though cri-surface passed',
      'PodSandboxStats: not called, though cri-surface passed',
      'ListPodSandboxStats: not called, though cri-surface passed',
      'CheckpointContainer: not called, though cri-surface passed',
    ]);
  });

  it('accepts Unimplemented as an answer, and judges only the runtime asked about', () => {
    const all = { ...startUp, ReopenContainerLog: 'called', UpdateContainerResources: 'called' } as const;
    const cells = [
      cell('log-rotation', 'passed'),
      cell('cri-surface', 'passed'),
      cell('cri-surface', 'passed', 'other'),
    ];
    expect(
      contractGaps(
        results(cells, {
          ...all,
          PodSandboxStats: 'unimplemented',
          ListPodSandboxStats: 'unimplemented',
          CheckpointContainer: 'unimplemented',
        }),
        'docker-26',
      ),
    ).toEqual([]);
    expect(contractGaps(results(cells, all), 'other')).toHaveLength(6);
  });
});
