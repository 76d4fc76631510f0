#!/usr/bin/env node
// Prints one line per workspace from the vitest JSON reports that each package's test scripts write,
// then the closing `N passed, N failed` line CI reads.
// Usage: test-summary.mjs [--checks <file>] <npm script>=<report file name> ...,
//   e.g. `--checks .reports/failed-checks.txt test=vitest.json test:e2e=vitest-e2e.json`.
// A workspace that has the script but wrote no report (a crash, a build error) counts as one failure,
// so a broken package never looks green by omission. Callers delete old reports before the run.
// --checks names a file of failed checks that are not vitest suites (lint, typecheck), one per line;
// each counts as one failure, so a red lint step cannot end in `0 failed`. A missing file means none.
// A test skipped with `meta.quarantined` (the e2e matrix's failed cell that a kh.config.json
// quarantine holds) counts as quarantined, not skipped: the line then ends `, N quarantined`.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { stripVTControlCharacters } from 'node:util';

// KH_REPO_ROOT points it at another tree (its tests use a small one).
const root = process.env.KH_REPO_ROOT ?? new URL('..', import.meta.url).pathname;
const args = process.argv.slice(2);
const checksAt = args.indexOf('--checks');
const checksFile = checksAt >= 0 ? args.splice(checksAt, 2)[1] : undefined;
const pairs = args.map((arg) => arg.split('='));
if (pairs.length === 0 || pairs.some((p) => p.length !== 2) || (checksAt >= 0 && !checksFile)) {
  console.error('usage: test-summary.mjs [--checks <file>] <npm script>=<report file name> ...');
  process.exit(2);
}
const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'));
// A message's lines before its stack trace, colour codes stripped, blank lines dropped, each cut
// to 200 characters. A failure shows up to MESSAGE_LINES of them: CI keeps only the log's tail, and
// an assertion's own message (a command's output, say) often starts on the line after its name.
const MESSAGE_LINES = 8;
const messageLines = (text) => {
  const lines = stripVTControlCharacters(text ?? '').split('\n');
  const stack = lines.findIndex((l) => /^\s*at /.test(l));
  return lines
    .slice(0, stack < 0 ? undefined : stack)
    .map((l) => l.trim().slice(0, 200))
    .filter((l) => l !== '');
};
const firstLine = (text) => messageLines(text)[0] ?? '';
/** `    ✗ <what>: <first line>`, then the message's next lines indented under it. */
const printFailure = (what, text) => {
  const [first = '', ...rest] = messageLines(text);
  console.log(`    ✗ ${what}: ${first}`);
  for (const line of rest.slice(0, MESSAGE_LINES - 1)) console.log(`        ${line}`);
  if (rest.length > MESSAGE_LINES - 1)
    console.log(`        … ${rest.length - MESSAGE_LINES + 1} more line(s)`);
};

const workspaces = readJson(join(root, 'package.json')).workspaces.flatMap((pattern) => {
  if (!pattern.endsWith('/*')) return [pattern];
  const parent = pattern.slice(0, -2);
  return readdirSync(join(root, parent)).map((d) => `${parent}/${d}`);
});

let passed = 0;
let failed = 0;
let skipped = 0;
let quarantined = 0;
const withQuarantined = (line, q) => (q > 0 ? `${line}, ${q} quarantined` : line);
for (const [script, reportName] of pairs)
  for (const dir of workspaces.sort()) {
    const pkgFile = join(root, dir, 'package.json');
    if (!existsSync(pkgFile)) continue;
    const pkg = readJson(pkgFile);
    if (!pkg.scripts?.[script]) continue;
    const report = join(root, dir, '.reports', reportName);
    if (!existsSync(report)) {
      failed += 1;
      console.log(`  ${pkg.name}: no ${reportName} (the ${script} task failed before reporting)`);
      continue;
    }
    const r = readJson(report);
    // A suite that failed to load (import error) has no tests but is a failure.
    const brokenSuites = (r.testResults ?? []).filter(
      (s) => s.status === 'failed' && (s.assertionResults ?? []).length === 0,
    ).length;
    const p = r.numPassedTests ?? 0;
    // Vitest fails a run whose tests all passed when an error escaped them (an unhandled rejection).
    const unhandled = r.success === false && (r.numFailedTests ?? 0) + brokenSuites === 0 ? 1 : 0;
    const f = (r.numFailedTests ?? 0) + brokenSuites + unhandled;
    // Skipped with meta.quarantined: ran, failed, held by a quarantine entry.
    const held = (r.testResults ?? []).flatMap((suite) =>
      (suite.assertionResults ?? [])
        .filter((t) => t.meta?.quarantined && (t.status === 'skipped' || t.status === 'pending'))
        .map((t) => ({ suite, t })),
    );
    const q = held.length;
    const s = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0) - q;
    passed += p;
    failed += f;
    skipped += s;
    quarantined += q;
    console.log(withQuarantined(`  ${pkg.name} ${script}: ${p} passed, ${f} failed, ${s} skipped`, q));
    // The failures by name, so a log that keeps only its tail still says what broke.
    if (unhandled) console.log('    ✗ an error outside any test (unhandled error or rejection; see the log)');
    for (const suite of r.testResults ?? []) {
      const file = suite.name ? suite.name.slice(join(root, dir).length + 1) : '?';
      if (suite.status === 'failed' && (suite.assertionResults ?? []).length === 0)
        printFailure(file, suite.message);
      for (const t of suite.assertionResults ?? [])
        if (t.status === 'failed') printFailure(`${file} > ${t.fullName}`, t.failureMessages?.[0]);
    }
    for (const { suite, t } of held) {
      const file = suite.name ? suite.name.slice(join(root, dir).length + 1) : '?';
      const e = t.meta.quarantined.entry;
      const by = e ? ` until ${e.expires} (${e.owner})` : '';
      console.log(`    ~ ${file} > ${t.fullName}: quarantined${by}: ${firstLine(t.meta.quarantined.reason)}`);
    }
  }
if (checksFile && existsSync(checksFile))
  for (const check of readFileSync(checksFile, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')) {
    failed += 1;
    console.log(`  ✗ check failed: ${check.trim()}`);
  }
console.log(withQuarantined(`${passed} passed, ${failed} failed, ${skipped} skipped`, quarantined));
process.exitCode = failed > 0 ? 1 : 0;
