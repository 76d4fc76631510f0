// `kubelet-harness report`: results.json -> one self-contained HTML file, or a page on 127.0.0.1.
// The harness CLI dispatches the `report` subcommand here with the arguments after it.

import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { readResultsFile, readResultsPath } from '../results/load.js';
import type { RunResults } from '../results/model.js';
import { buildReportModel } from './aggregate.js';
import { DEFAULT_THRESHOLDS } from './compare.js';
import { loadClientScript, renderReportHtml } from './html.js';
import type { ReportModel } from './model.js';
import { serveReport } from './serve.js';

export const REPORT_USAGE = `Usage: kubelet-harness report [options]

Turns a harness results file into one self-contained HTML page (inline CSS and JS, no network).

Options:
  -i, --input <file>              results file to read (default: $KH_OUT/results.json,
                                  where KH_OUT defaults to .reports/e2e like "run --out")
  -o, --out <file>                HTML file to write (default: $KH_OUT/report.html;
                                  with --serve, only written when given)
  -b, --baseline <file|dir>       earlier results file (or a directory holding one) to compare
                                  with; flags regressions: passed -> failed, slower, CRI p99 higher
      --regression-threshold <%>  a passing cell is slower when its duration grew by at least
                                  this percentage (default: ${DEFAULT_THRESHOLDS.durationPct}, i.e. 1.5x)
      --regression-min-ms <ms>    ...and by at least this many milliseconds (default: ${DEFAULT_THRESHOLDS.durationMinMs})
      --cri-regression-ratio <x>  a CRI method regressed when its p99 is at least this many times
                                  the baseline's (default: ${DEFAULT_THRESHOLDS.criP99Ratio})
      --cri-regression-min-ms <ms>  ...and at least this many milliseconds higher (default: ${DEFAULT_THRESHOLDS.criMinMs})
      --fail-on-regression        exit with status 1 when the baseline comparison finds regressions
      --serve                     serve the report on http://127.0.0.1:<port>/ until interrupted
  -p, --port <port>               port for --serve (default: 8080; 0 picks a free port)
  -h, --help                      show this help

Exit status: 0 on success, 1 on regressions with --fail-on-regression, 2 on bad arguments,
unreadable or invalid input, or a failure to write or serve the report.`;

export interface ReportCommandOptions {
  input: string;
  out?: string;
  baseline?: string;
  serve: boolean;
  port: number;
  durationPct: number;
  durationMinMs: number;
  criP99Ratio: number;
  criMinMs: number;
  failOnRegression: boolean;
}

export class UsageError extends Error {
  override name = 'UsageError';
}

function nonNegativeNumber(
  flag: string,
  value: string | undefined,
  fallback: number,
  integer = false,
): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0 || (integer && !Number.isInteger(n))) {
    throw new UsageError(
      `--${flag} must be a non-negative ${integer ? 'integer' : 'number'}, got ${JSON.stringify(value)}`,
    );
  }
  return n;
}

const ARG_OPTIONS = {
  input: { type: 'string', short: 'i' },
  out: { type: 'string', short: 'o' },
  baseline: { type: 'string', short: 'b' },
  'regression-threshold': { type: 'string' },
  'regression-min-ms': { type: 'string' },
  'cri-regression-ratio': { type: 'string' },
  'cri-regression-min-ms': { type: 'string' },
  'fail-on-regression': { type: 'boolean' },
  serve: { type: 'boolean' },
  port: { type: 'string', short: 'p' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Parses the arguments after `report`; undefined means --help was asked for. */
export function parseReportArgs(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
): ReportCommandOptions | undefined {
  const values = (() => {
    try {
      return parseArgs({ args: argv, options: ARG_OPTIONS, strict: true, allowPositionals: false }).values;
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  })();
  if (values.help) return undefined;
  const port = nonNegativeNumber('port', values.port, 8080, true);
  if (port > 65535) throw new UsageError(`--port must be at most 65535, got ${port}`);
  if (values.port !== undefined && !values.serve) throw new UsageError('--port only applies with --serve');
  const serve = values.serve ?? false;
  // Next to what `kubelet-harness run` writes by default (--out / KH_OUT of the run command).
  const outDir = env.KH_OUT ?? '.reports/e2e';
  return {
    input: values.input ?? join(outDir, 'results.json'),
    out: values.out ?? (serve ? undefined : join(outDir, 'report.html')),
    baseline: values.baseline,
    serve,
    port,
    durationPct: nonNegativeNumber(
      'regression-threshold',
      values['regression-threshold'],
      DEFAULT_THRESHOLDS.durationPct,
    ),
    durationMinMs: nonNegativeNumber(
      'regression-min-ms',
      values['regression-min-ms'],
      DEFAULT_THRESHOLDS.durationMinMs,
    ),
    criP99Ratio: nonNegativeNumber(
      'cri-regression-ratio',
      values['cri-regression-ratio'],
      DEFAULT_THRESHOLDS.criP99Ratio,
    ),
    criMinMs: nonNegativeNumber(
      'cri-regression-min-ms',
      values['cri-regression-min-ms'],
      DEFAULT_THRESHOLDS.criMinMs,
    ),
    failOnRegression: values['fail-on-regression'] ?? false,
  };
}

/** Reads the input (and baseline) files and renders the page. */
export async function generateReport(
  options: ReportCommandOptions,
): Promise<{ html: string; model: ReportModel }> {
  const results = await readResultsFile(options.input);
  let baseline: RunResults | undefined;
  if (options.baseline) baseline = await readResultsPath(options.baseline);
  const { durationPct, durationMinMs, criP99Ratio, criMinMs } = options;
  const model = buildReportModel(results, {
    baseline,
    thresholds: { durationPct, durationMinMs, criP99Ratio, criMinMs },
  });
  return { html: renderReportHtml(model, await loadClientScript()), model };
}

function summaryLine(model: ReportModel): string {
  const c = model.counts;
  let text = `${c.total} cells: ${c.passed} passed, ${c.failed} failed, ${c.skipped} skipped`;
  if (model.baseline) {
    const all = regressionNames(model);
    const n = all.length;
    text += `; ${n} regression${n === 1 ? '' : 's'} against baseline ${model.baseline.runId}`;
    if (n > 0) text += ` (${all.join(', ')})`;
  }
  return text;
}

/** Every regression against the baseline: cells by id, CRI methods as `runtime <caller> Method p99`. */
export function regressionNames(model: ReportModel): string[] {
  const b = model.baseline;
  if (!b) return [];
  return [...b.regressions, ...b.criRegressions.map((r) => `${r.runtime} ${r.source} ${r.method} p99`)];
}

export interface ReportCommandIO {
  stdout?: { write(text: string): unknown };
  stderr?: { write(text: string): unknown };
  /** Stops --serve; without it, SIGINT or SIGTERM does. */
  signal?: AbortSignal;
}

/**
 * Entry point of `kubelet-harness report`. Takes the arguments after the subcommand name and
 * resolves to the process exit status; it never calls process.exit itself. With --serve it resolves
 * once the server has been stopped (signal, SIGINT or SIGTERM).
 */
export async function runReportCommand(argv: string[], io: ReportCommandIO = {}): Promise<number> {
  const stdout = io.stdout ?? process.stdout;
  const stderr = io.stderr ?? process.stderr;
  let options: ReportCommandOptions | undefined;
  try {
    options = parseReportArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    stderr.write(`kubelet-harness report: ${err.message}\n\n${REPORT_USAGE}\n`);
    return 2;
  }
  if (!options) {
    stdout.write(`${REPORT_USAGE}\n`);
    return 0;
  }
  try {
    const { html, model } = await generateReport(options);
    if (options.out) {
      await writeFile(options.out, html);
      stdout.write(`Wrote ${options.out} (${summaryLine(model)})\n`);
    } else {
      stdout.write(`${summaryLine(model)}\n`);
    }
    if (options.serve) await serveUntilStopped(options, stdout, io.signal);
    return options.failOnRegression && regressionNames(model).length > 0 ? 1 : 0;
  } catch (err) {
    // Unreadable or invalid input, an unwritable --out, a busy --port: say what, no stack trace.
    stderr.write(`kubelet-harness report: ${(err as Error).message}\n`);
    return 2;
  }
}

async function serveUntilStopped(
  options: ReportCommandOptions,
  stdout: { write(text: string): unknown },
  signal: AbortSignal | undefined,
): Promise<void> {
  const server = await serveReport(async () => (await generateReport(options)).html, options.port);
  stdout.write(`Serving the report at ${server.url} (Ctrl+C to stop)\n`);
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      signal?.removeEventListener('abort', stop);
      resolve();
    };
    if (signal) {
      if (signal.aborted) return stop();
      signal.addEventListener('abort', stop, { once: true });
    } else {
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    }
  });
  await server.close();
}
