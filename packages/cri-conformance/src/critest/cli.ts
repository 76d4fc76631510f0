import { parseArgs } from 'node:util';
import { writeOut } from '../framework/output.js';
import { type Comparison, compareSides, formatComparison, type Side } from '../suite/compare.js';
import { type CritestResult, runCritest } from './run.js';
import { CRITEST_SKIPS } from './skips.js';

export const CRITEST_USAGE = `Usage: cri-conformance critest --endpoint <A> [--endpoint <B>] --busybox-image <ref> --httpd-image <ref> [options]

Runs upstream critest (cri-tools) against each endpoint in turn, with the same images file and the
same skips, and prints one table of specs: where the endpoints differ first, with the failure
messages. A is the reference: exit code 1 when B fails a spec A passes (with one endpoint: when a
spec failed), 2 when critest could not run.

Options:
  --endpoint <ep>            CRI endpoint; give it twice to compare                   [required]
  --busybox-image <ref>      critest's defaultTestContainerImage                      [required]
  --httpd-image <ref>        critest's webServerTestImage (HTTP on :80)               [required]
  --critest <path>           critest binary (default: on PATH, else the cri-tools cache)
  --focus <regex>            --ginkgo.focus (Go regexp; repeatable)
  --skip <regex>             --ginkgo.skip, added to the built-in list (repeatable)
  --flake-attempts <n>       runs per spec before it fails (default 1); a later pass shows as flaky
  --json <file>              write every endpoint's specs and the comparison
  --timeout <minutes>        per critest run (default 20)
  -h, --help

Always skipped (on every endpoint alike):
${CRITEST_SKIPS.map((s) => `  ${s.spec}: ${s.reason}`).join('\n')}`;

/** The options of every critest command (`critest`, `critest-nodes`), for parseArgs. */
export const CRITEST_RUN_OPTIONS = {
  focus: { type: 'string', multiple: true },
  skip: { type: 'string', multiple: true },
  json: { type: 'string' },
  timeout: { type: 'string', default: '20' },
  'flake-attempts': { type: 'string', default: '1' },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

/** `--flake-attempts`: a whole number, at least 1; undefined when it is not one. */
export function flakeAttemptsOf(value: string): number | undefined {
  const n = Number(value);
  return Number.isInteger(n) && n >= 1 ? n : undefined;
}

/**
 * The reference is the first result: exit code 1 when another fails a spec it passes; with one
 * result, when a spec failed.
 */
export function critestExitCode(results: readonly CritestResult[], comparison: Comparison): number {
  if (results.length > 1) return comparison.regressions > 0 ? 1 : 0;
  return results[0]?.totals.failed ? 1 : 0;
}

/** critest results as sides of the table, specs sorted by name (ginkgo shuffles their order per run). */
export function critestSides(results: readonly CritestResult[]): Side[] {
  return results.map((r) => ({
    label: `${r.side ? `${r.side}: ` : ''}${r.runtime.name} ${r.runtime.version} (${r.endpoint}), ${(r.durationMs / 1000).toFixed(1)} s`,
    results: [...r.specs].sort((x, y) => x.id.localeCompare(y.id)),
  }));
}

export async function critestMain(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      endpoint: { type: 'string', multiple: true },
      'busybox-image': { type: 'string' },
      'httpd-image': { type: 'string' },
      critest: { type: 'string' },
      ...CRITEST_RUN_OPTIONS,
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${CRITEST_USAGE}\n`);
    return 0;
  }
  const endpoints = values.endpoint ?? [];
  const busybox = values['busybox-image'];
  const httpd = values['httpd-image'];
  if (endpoints.length === 0 || !busybox || !httpd) {
    process.stderr.write(
      `cri-conformance critest: --endpoint, --busybox-image and --httpd-image are required\n\n${CRITEST_USAGE}\n`,
    );
    return 2;
  }
  const flakeAttempts = flakeAttemptsOf(values['flake-attempts']);
  if (flakeAttempts === undefined) {
    process.stderr.write(
      `cri-conformance critest: --flake-attempts must be a whole number of at least 1\n\n${CRITEST_USAGE}\n`,
    );
    return 2;
  }
  const results: CritestResult[] = [];
  for (const endpoint of endpoints) {
    results.push(
      await runCritest({
        endpoint,
        images: { busybox, httpd },
        critest: values.critest,
        focus: values.focus,
        skip: values.skip,
        flakeAttempts,
        timeoutMs: Number(values.timeout) * 60_000,
        progress: (line) => process.stderr.write(`${line}\n`),
      }),
    );
  }
  const comparison = compareSides(critestSides(results));
  process.stdout.write(`\n${formatComparison(comparison)}\n`);
  if (values.json) await writeOut(values.json, `${JSON.stringify({ results, comparison }, null, 2)}\n`);
  return critestExitCode(results, comparison);
}
