export { BACKENDS, selectBackends } from './backends/registry.js';
export type * from './backends/types.js';
export { createChecks } from './framework/checks.js';
export {
  AssertionFailure,
  type Checks,
  type CriItem,
  type CriView,
  type Scenario,
  type ScenarioContext,
} from './framework/scenario.js';
export { toJUnit } from './results/junit.js';
export * from './results/model.js';
export { countOutcomes, formatMatrix } from './results/table.js';
export { writeResults } from './results/writer.js';
export { type HarnessDeps, type HarnessIO, type HarnessRunResult, runHarness } from './run/harness.js';
export { parseRunOptions, type RunOptions, selectScenarios } from './run/options.js';
export { consoleProgress, type Progress } from './run/progress.js';
export { type MatrixDeps, type ReadyNode, runMatrix, type World } from './run/runner.js';
export { RunLedger } from './world/ledger.js';
