export { PRECONFIGURED_RUNTIME_HANDLER } from '@kh/testkit';
export { BACKENDS, BackendRegistry, loadBackends, selectBackends } from './backends/registry.js';
export type * from './backends/types.js';
export { createChecks } from './framework/checks.js';
export {
  AssertionFailure,
  type CasesScenario,
  type Checks,
  type ClosureScenario,
  type CriItem,
  type CriView,
  type Isolation,
  type Scenario,
  type ScenarioCase,
  type ScenarioContext,
  ScenarioSkipped,
  type UpstreamCase,
} from './framework/scenario.js';
export { AGENT_STATIC_POD_PATH, agentPath } from './node/agent.js';
export type * from './node/host.js';
export { caseEvents, caseTitle, outcomeOfCases } from './results/cases.js';
export { toJUnit } from './results/junit.js';
export * from './results/model.js';
export { applyQuarantine, failsRun, heldByQuarantine } from './results/quarantine.js';
export {
  type AgentStartupRecord,
  percentiles,
  podStartupRow,
  rowProblems,
  startupBreakdown,
} from './results/startup.js';
export { countOutcomes, countsLine, formatMatrix } from './results/table.js';
export { writeResults } from './results/writer.js';
export {
  type CaseSelection,
  caseSelected,
  NODE_CONFORMANCE,
  scenariosWithSelectedCases,
} from './run/cases.js';
export { type HarnessDeps, type HarnessIO, type HarnessRunResult, runHarness } from './run/harness.js';
export { parseRunOptions, type RunOptions, selectScenarios } from './run/options.js';
export { type MatrixDeps, runMatrix } from './run/runner.js';
export { DEFAULT_RUN_TIMEOUT_MS, RunTimedOut, runDeadlineMs } from './run/timeout.js';
export type { KubectlOptions, KubectlProcess, KubectlResult } from './support/kubectl.js';
export { consoleProgress, type Progress } from './support/progress.js';
export { CLUSTER_CIDR, NODE_CIDR_MASK_SIZE } from './world/apiserver.js';
export { RunLedger } from './world/ledger.js';
export type { ReadyNode, World } from './world/types.js';
