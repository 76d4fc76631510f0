// Public surface of @kh/cri-conformance.
export { ALL_CASES } from './cases.js';
export {
  AssertionError,
  CaseContext,
  type ConformanceCase,
  type ConformanceOptions,
  defineGroup,
  Skip,
} from './framework.js';
export { formatSummary, toJUnitXml } from './report.js';
export {
  type CaseResult,
  type CaseStatus,
  type RunOptions,
  runConformance,
  type SuiteResult,
} from './runner.js';
