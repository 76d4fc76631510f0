import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { CellResult, RunResults } from '../../src/results/model.js';

export const SAMPLE_PATH = fileURLToPath(new URL('../fixtures/results.sample.json', import.meta.url));
export const BASELINE_PATH = fileURLToPath(new URL('../fixtures/results.baseline.json', import.meta.url));

export const loadFixture = (path: string): RunResults => JSON.parse(readFileSync(path, 'utf8')) as RunResults;

/** A minimal cell for tests that only care about a few fields. */
export function cell(runtime: string, scenario: string, over: Partial<CellResult> = {}): CellResult {
  return {
    runtime,
    scenario,
    outcome: 'passed',
    startedAt: '2026-11-22T03:00:00.000Z',
    durationMs: 1000,
    assertions: [],
    timeline: [],
    logs: [],
    ...over,
  };
}

export function run(cells: CellResult[], over: Partial<RunResults> = {}): RunResults {
  return {
    schemaVersion: 1,
    runId: 'test-run',
    startedAt: '2026-11-22T03:00:00.000Z',
    finishedAt: '2026-11-22T03:10:00.000Z',
    durationMs: 600_000,
    host: { node: 'v22', platform: 'linux-x64', cpus: 2 },
    runtimes: [...new Set(cells.map((c) => c.runtime))].map((name) => ({
      name,
      runtimeName: name,
      runtimeVersion: '1.0',
    })),
    scenarios: [...new Set(cells.map((c) => c.scenario))],
    cells,
    ...over,
  };
}
