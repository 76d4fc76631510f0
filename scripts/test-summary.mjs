#!/usr/bin/env node
// Prints one line per workspace from the vitest JSON reports that each package's test scripts write,
// then the closing `N passed, N failed` line CI reads.
// Usage: test-summary.mjs <npm script>=<report file name> ..., e.g. `test=vitest.json test:e2e=vitest-e2e.json`.
// A workspace that has the script but wrote no report (a crash, a build error) counts as one failure,
// so a broken package never looks green by omission. Callers delete old reports before the run.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { stripVTControlCharacters } from 'node:util';

// KH_REPO_ROOT points it at another tree (its tests use a small one).
const root = process.env.KH_REPO_ROOT ?? new URL('..', import.meta.url).pathname;
const pairs = process.argv.slice(2).map((arg) => arg.split('='));
if (pairs.length === 0 || pairs.some((p) => p.length !== 2)) {
  console.error('usage: test-summary.mjs <npm script>=<report file name> ...');
  process.exit(2);
}
const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'));
// Colour codes stripped, cut to one line a reader can take in.
const firstLine = (text) =>
  stripVTControlCharacters(text ?? '')
    .split('\n')
    .find((l) => l.trim() !== '')
    ?.trim()
    .slice(0, 200) ?? '';

const workspaces = readJson(join(root, 'package.json')).workspaces.flatMap((pattern) => {
  if (!pattern.endsWith('/*')) return [pattern];
  const parent = pattern.slice(0, -2);
  return readdirSync(join(root, parent)).map((d) => `${parent}/${d}`);
});

let passed = 0;
let failed = 0;
let skipped = 0;
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
    const f = (r.numFailedTests ?? 0) + brokenSuites;
    const s = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
    passed += p;
    failed += f;
    skipped += s;
    console.log(`  ${pkg.name} ${script}: ${p} passed, ${f} failed, ${s} skipped`);
    // The failures by name, so a log that keeps only its tail still says what broke.
    for (const suite of r.testResults ?? []) {
      const file = suite.name ? suite.name.slice(join(root, dir).length + 1) : '?';
      if (suite.status === 'failed' && (suite.assertionResults ?? []).length === 0)
        console.log(`    ✗ ${file}: ${firstLine(suite.message)}`);
      for (const t of suite.assertionResults ?? [])
        if (t.status === 'failed')
          console.log(`    ✗ ${file} > ${t.fullName}: ${firstLine(t.failureMessages?.[0])}`);
    }
  }
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exitCode = failed > 0 ? 1 : 0;
