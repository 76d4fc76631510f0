// Public surface of @kh/cri-conformance.

export { critestSides } from './critest/cli.js';
export {
  DEFAULT_NODE_SIDES,
  NODE_SIDES,
  type NodeCritestOptions,
  type NodeCritestRun,
  type NodeSide,
  runCritestInNode,
  runCritestInNodes,
} from './critest/nodes.js';
export { CRITEST_NODES_USAGE, formatNodeRun } from './critest/nodes-cli.js';
export { parseGinkgoReport, type SpecResult } from './critest/report.js';
export {
  type CritestOptions,
  type CritestResult,
  type CritestSite,
  critestAt,
  findCritest,
  runCritest,
} from './critest/run.js';
export { CRITEST_SKIPS, type CritestSkip } from './critest/skips.js';
export {
  AssertionError,
  CaseContext,
  type ConformanceCase,
  type ConformanceOptions,
  defineGroup,
  Skip,
} from './framework/framework.js';
export {
  cliInNode,
  conformanceCli,
  dockershimCli,
  PROJECT_IN_NODE,
  withCheckout,
} from './node/checkout.js';
export { dockershimCommand, startDockershim } from './node/dockershim.js';
export { type NodeSuiteRun, runConformanceInNode } from './node/suite.js';
export { ALL_CASES } from './suite/cases.js';
export { SUITE_CLI_OPTIONS, type SuiteCliOptions, suiteCliArgs } from './suite/cli-args.js';
export {
  type Comparison,
  type ComparisonRow,
  compareSides,
  formatComparison,
  type Side,
  suiteSide,
} from './suite/compare.js';
export { formatSummary, toJUnitXml } from './suite/report.js';
export {
  type CaseResult,
  type CaseStatus,
  type RunOptions,
  runConformance,
  type SuiteResult,
} from './suite/runner.js';
