// `kubelet-harness history`: the results of many runs as one grid, with flaky rows named, failing
// streaks and their first commit, failures grouped by message, the benchmarks' trend, and the
// alerts TestGrid's job annotations raise (--fail-after, --stale-hours), and bench regressions
// against the median of the runs before (--bench-regression).
import { appendFile, copyFile, mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { buildReportModel } from '../report/aggregate.js';
import { loadClientScript, renderReportHtml } from '../report/html.js';
import { readResultsFile, resultsFilesUnder } from '../results/load.js';
import type { RunResults } from '../results/model.js';
import { benchSeries, readBenchRecords } from './bench.js';
import { buildHistory, entriesOf, type RunEntry, readHistoryFile, runEntry } from './collect.js';
import { loadHistoryScript, renderHistoryHtml } from './html.js';
import type { HistoryModel, HistorySettings } from './model.js';
import { markdownSummary } from './summary.js';

export const HISTORY_USAGE = `Usage: kubelet-harness history [<results.json | dir>...] [options]

Reads the results.json of many runs (files, or directories searched for them, such as downloaded
CI artifacts: a shard's results are left out when the merged results made from it are read, and
refused otherwise) and an earlier history, and writes the history: history.json, history.html (one
row per cell or case, one column per run, newest first) and each new run's report as runs/<run>.html.

Options:
      --from <dir|history.json>  an earlier history to extend (its runs are kept, with their reports)
  -o, --out <dir>                where to write (default: .reports/history)
  -n, --runs <n>                 keep the newest n runs (default: 30)
      --flaky-window <n>         runs the flakiness rule looks at (default: 10); a row is flaky when
                                 it passed only on a retry, passed and failed at one commit, or
                                 changed outcome more than once within the window
      --fail-after <n>           exit 1 when a row (not quarantined) failed the newest n runs in a row
      --stale-hours <h>          exit 1 when the newest run started more than h hours ago
      --bench <dir|file>         bench JSON files (<package>/.reports/bench/), drawn over time;
                                 repeatable
      --bench-regression <pct>   exit 1 when a bench figure's newest point is more than pct percent
                                 worse than the median of the --bench-window points before it
                                 (worse: the way the figure's target says; a figure with no target,
                                 or with fewer earlier points, is not judged)
      --bench-window <n>         earlier points that median is over (default: 5)
      --run-url <url>            the page of the run(s) read here, e.g. the CI run; linked from the column
      --summary <file>           append a Markdown summary (new failures, new flakes, fixed, still
                                 failing, alerts), e.g. "$GITHUB_STEP_SUMMARY"
      --reports <n>              keep the reports of the newest n runs only (default: every run's;
                                 0: none); an older run's squares link to its --run-url
  -h, --help                     show this help

Exit status: 0, or 1 when an alert (--fail-after, --stale-hours, --bench-regression) fired, 2 on bad arguments or
unreadable input.`;

export const DEFAULTS = { out: '.reports/history', runs: 30, flakyWindow: 10 } as const;

export interface HistoryCommandOptions {
  inputs: string[];
  from?: string;
  out: string;
  settings: HistorySettings;
  bench: string[];
  runUrl?: string;
  summary?: string;
  /** Runs whose report is kept, newest first; undefined: all. */
  reports?: number;
}

export class HistoryUsageError extends Error {
  override name = 'HistoryUsageError';
}

function nonNegativeInteger(flag: string, value: string): number {
  if (!/^\d+$/.test(value.trim()))
    throw new HistoryUsageError(`--${flag} must be a whole number, got ${JSON.stringify(value)}`);
  return Number(value);
}

function positiveInteger(flag: string, value: string | undefined, fallback?: number): number | undefined {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < 1)
    throw new HistoryUsageError(`--${flag} must be a positive integer, got ${JSON.stringify(value)}`);
  return n;
}

/** The arguments after `history`; undefined means --help. */
export function parseHistoryArgs(argv: string[]): HistoryCommandOptions | undefined {
  let parsed: ReturnType<typeof parse>;
  const parse = (args: string[]) =>
    parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: {
        from: { type: 'string' },
        out: { type: 'string', short: 'o' },
        runs: { type: 'string', short: 'n' },
        'flaky-window': { type: 'string' },
        'fail-after': { type: 'string' },
        'stale-hours': { type: 'string' },
        bench: { type: 'string', multiple: true },
        'bench-regression': { type: 'string' },
        'bench-window': { type: 'string' },
        'run-url': { type: 'string' },
        summary: { type: 'string' },
        reports: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  try {
    parsed = parse(argv);
  } catch (err) {
    throw new HistoryUsageError((err as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) return undefined;
  // Bench figures alone make a history too: a bench trend needs no matrix run.
  if (positionals.length === 0 && !values.from && !values.bench?.length)
    throw new HistoryUsageError(
      'nothing to read: name results files or directories, --bench figures, or --from an earlier history',
    );
  const stale = values['stale-hours'];
  if (stale !== undefined && !(stale.trim() !== '' && Number(stale) > 0))
    throw new HistoryUsageError(`--stale-hours must be a positive number, got ${JSON.stringify(stale)}`);
  const failAfter = positiveInteger('fail-after', values['fail-after']);
  const regression = values['bench-regression'];
  if (regression !== undefined && !(regression.trim() !== '' && Number(regression) > 0))
    throw new HistoryUsageError(
      `--bench-regression must be a positive percentage, got ${JSON.stringify(regression)}`,
    );
  const benchWindow = positiveInteger('bench-window', values['bench-window']);
  const settings: HistorySettings = {
    runs: positiveInteger('runs', values.runs, DEFAULTS.runs)!,
    flakyWindow: positiveInteger('flaky-window', values['flaky-window'], DEFAULTS.flakyWindow)!,
    ...(failAfter !== undefined ? { failAfter } : {}),
    ...(stale !== undefined ? { staleHours: Number(stale) } : {}),
    ...(regression !== undefined ? { benchRegression: Number(regression) / 100 } : {}),
    ...(benchWindow !== undefined ? { benchWindow } : {}),
  };
  return {
    inputs: positionals,
    ...(values.from ? { from: values.from } : {}),
    out: values.out ?? DEFAULTS.out,
    settings,
    bench: values.bench ?? [],
    ...(values['run-url'] ? { runUrl: values['run-url'] } : {}),
    ...(values.summary ? { summary: values.summary } : {}),
    ...(values.reports !== undefined ? { reports: nonNegativeInteger('reports', values.reports) } : {}),
  };
}

/** A run's report file name: its id with anything but [\w.-] replaced. */
export const runReportFile = (runId: string) => `runs/${runId.replace(/[^\w.-]/g, '_')}.html`;

const isUrl = (link: string) => /^[a-z][a-z0-9+.-]*:/i.test(link);

/** The earlier history: a history.json, or a directory holding one (a downloaded artifact). */
async function readFrom(
  path: string,
): Promise<{ dir: string; history: Awaited<ReturnType<typeof readHistoryFile>> }> {
  const info = await stat(path).catch(() => undefined);
  if (!info) throw new Error(`${path}: no such file or directory`);
  const file = info.isDirectory() ? join(path, 'history.json') : path;
  return { dir: dirname(file), history: await readHistoryFile(file) };
}

export interface HistoryResultFiles {
  model: HistoryModel;
  json: string;
  html: string;
}

/**
 * The runs in the inputs. A directory of a nightly's downloaded artifacts holds each shard's
 * results beside the merged ones: a shard that a merged file was made from is already in that
 * run, and one that none was is refused, since half a matrix as a column would read as a night
 * on which the other half did not run.
 */
async function wholeRuns(inputs: readonly string[]): Promise<RunResults[]> {
  const read: { file: string; results: RunResults }[] = [];
  for (const input of inputs) {
    const files = await resultsFilesUnder(input);
    if (files.length === 0) throw new Error(`${input}: no results.json in this directory`);
    for (const file of files) read.push({ file, results: await readResultsFile(file) });
  }
  const merged = new Set(read.flatMap(({ results }) => results.mergedFrom ?? []));
  const runs: RunResults[] = [];
  for (const { file, results } of read) {
    const { shard } = results;
    if (!shard || shard.total === 1) runs.push(results);
    else if (!merged.has(results.runId))
      throw new Error(
        `${file}: shard ${shard.index}/${shard.total} of a run, not a whole run; merge its shards first (kubelet-harness merge) or read the merged results.json`,
      );
  }
  return runs;
}

/** Reads, classifies and writes; the alerts are in the returned model. */
export async function writeHistory(options: HistoryCommandOptions, now: Date): Promise<HistoryResultFiles> {
  const out = resolve(options.out);
  await mkdir(join(out, 'runs'), { recursive: true });
  const entries: RunEntry[] = [];
  let benches: HistoryModel['benches'] = [];
  if (options.from) {
    const { dir, history } = await readFrom(options.from);
    benches = history.benches;
    for (const entry of entriesOf(history)) {
      const link = entry.run.report;
      // The earlier history's run reports come along when it was written elsewhere.
      if (link && !isUrl(link) && resolve(dir) !== out) {
        const copied = await copyFile(join(dir, link), join(out, link)).then(
          () => true,
          () => false,
        );
        if (!copied) delete entry.run.report;
      }
      entries.push(entry);
    }
  }
  const reportScript = options.reports === 0 ? undefined : await loadClientScript();
  for (const results of await wholeRuns(options.inputs)) {
    const report = reportScript ? runReportFile(results.runId) : undefined;
    if (report && reportScript)
      await writeFile(join(out, report), renderReportHtml(buildReportModel(results, { now }), reportScript));
    entries.push(
      runEntry(results, {
        ...(report ? { report } : {}),
        ...(options.runUrl ? { url: options.runUrl } : {}),
      }),
    );
  }
  benches = benchSeries(options.bench.length ? await readBenchRecords(options.bench) : [], benches);
  const model = buildHistory(entries, benches, options.settings, now);
  // Reports of runs past --reports, and of runs that left the window, go.
  for (const run of model.runs.slice(options.reports ?? model.runs.length))
    if (run.report && !isUrl(run.report)) delete run.report;
  const kept = new Set(model.runs.map((r) => r.report).filter((r): r is string => Boolean(r)));
  for (const name of await readdir(join(out, 'runs')))
    if (name.endsWith('.html') && !kept.has(`runs/${name}`)) await rm(join(out, 'runs', name));
  const json = join(out, 'history.json');
  const html = join(out, 'history.html');
  await writeFile(json, `${JSON.stringify(model, null, 2)}\n`);
  await writeFile(html, renderHistoryHtml(model, await loadHistoryScript()));
  return { model, json, html };
}

export interface HistoryCommandIO {
  out: (s: string) => void;
  err: (s: string) => void;
  /** The clock staleness is judged by. */
  now?: () => Date;
}

export async function runHistoryCommand(argv: string[], io: HistoryCommandIO): Promise<number> {
  let options: HistoryCommandOptions | undefined;
  try {
    options = parseHistoryArgs(argv);
  } catch (err) {
    if (!(err instanceof HistoryUsageError)) throw err;
    io.err(`kubelet-harness history: ${err.message}\n\n${HISTORY_USAGE}\n`);
    return 2;
  }
  if (!options) {
    io.out(`${HISTORY_USAGE}\n`);
    return 0;
  }
  let written: HistoryResultFiles;
  try {
    written = await writeHistory(options, io.now?.() ?? new Date());
    if (options.summary) await appendFile(options.summary, markdownSummary(written.model));
  } catch (err) {
    io.err(`kubelet-harness history: ${(err as Error).message}\n`);
    return 2;
  }
  const { model } = written;
  const s = model.summary;
  io.out(
    `Wrote ${written.html} and ${basename(written.json)}: ${model.runs.length} runs, ${model.rows.length} rows; ` +
      `${s.newFailures.length} new failures, ${s.newFlakes.length} new flakes, ${s.fixed.length} fixed, ${s.stillFailing.length} still failing\n`,
  );
  for (const a of model.alerts) io.err(`alert (${a.kind}): ${a.message}\n`);
  return model.alerts.length > 0 ? 1 : 0;
}
