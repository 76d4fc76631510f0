// The report's public surface, for the harness CLI and for tools that post-process results.

export { ResultsFileError, readResultsFile, validateResults } from '../results/load.js';
export {
  buildReportModel,
  countCells,
  criLatencyByMethod,
  matrixAxes,
  podStartupByRuntime,
} from './aggregate.js';
export type { ReportCommandIO, ReportCommandOptions } from './cli.js';
export { generateReport, parseReportArgs, REPORT_USAGE, runReportCommand } from './cli.js';
export { cellId, compareCell, compareRuns, DEFAULT_THRESHOLDS } from './compare.js';
export { renderReportHtml } from './html.js';
export type * from './model.js';
export { serveReport } from './serve.js';
export { percentile, summarize } from './stats.js';
