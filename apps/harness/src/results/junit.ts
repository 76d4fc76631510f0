import { caseEvents, caseTitle } from './cases.js';
import type { AssertionResult, CaseResult, CellResult, RunResults } from './model.js';
import { heldByQuarantine } from './quarantine.js';

const escapeXml = (s: string): string =>
  s.replace(
    /[<>&"']/g,
    (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!,
  );

/** One JUnit testcase: a cell, or one case of a cell that declares cases. */
interface TestCase {
  classname: string;
  name: string;
  durationMs: number;
  outcome: CellResult['outcome'];
  message?: string;
  body?: string;
}

/**
 * JUnit XML: one testsuite per runtime; one testcase per cell, or, for a cell that declares cases,
 * one per case named as Ginkgo names it (with its [labels]), so TestGrid-style readers get a row per
 * upstream case. Such a cell's own failure outside every case (its teardown) is a testcase too.
 */
export function toJUnit(results: RunResults): string {
  const out: string[] = ['<?xml version="1.0" encoding="UTF-8"?>'];
  const suites = results.runtimes.map((runtime) => ({
    runtime: runtime.name,
    cases: results.cells.filter((c) => c.runtime === runtime.name).flatMap(testCases),
  }));
  const count = (cases: TestCase[], outcome: CellResult['outcome']) =>
    cases.filter((c) => c.outcome === outcome).length;
  const all = suites.flatMap((s) => s.cases);
  out.push(
    `<testsuites name="kubelet-harness" tests="${all.length}" failures="${count(all, 'failed')}" skipped="${count(all, 'skipped')}" time="${(results.durationMs / 1000).toFixed(3)}">`,
  );
  for (const { runtime, cases } of suites) {
    const time = cases.reduce((a, c) => a + c.durationMs, 0) / 1000;
    out.push(
      `  <testsuite name="${escapeXml(runtime)}" tests="${cases.length}" failures="${count(cases, 'failed')}" skipped="${count(cases, 'skipped')}" time="${time.toFixed(3)}">`,
    );
    for (const c of cases) {
      const open = `    <testcase classname="${escapeXml(c.classname)}" name="${escapeXml(c.name)}" time="${(c.durationMs / 1000).toFixed(3)}"`;
      if (c.outcome === 'passed') {
        out.push(`${open}/>`);
        continue;
      }
      out.push(`${open}>`);
      if (c.outcome === 'skipped')
        out.push(`      <skipped message="${escapeXml(c.message ?? 'skipped')}"/>`);
      else
        out.push(
          `      <failure message="${escapeXml(c.message ?? 'failed')}">${escapeXml(c.body || c.message || '')}</failure>`,
        );
      out.push('    </testcase>');
    }
    out.push('  </testsuite>');
  }
  out.push('</testsuites>');
  return `${out.join('\n')}\n`;
}

function testCases(cell: CellResult): TestCase[] {
  // A held failure stays a failure here; its message says who owns it and until when.
  const held = heldByQuarantine(cell) ? quarantineNote(cell) : '';
  const whole: TestCase = {
    classname: `kubelet-harness.${cell.runtime}`,
    name: cell.scenario,
    durationMs: cell.durationMs,
    outcome: cell.outcome,
    ...(cell.outcome === 'failed'
      ? { message: `${held}${cell.reason ?? 'failed'}`, body: failedAssertions(cell.assertions) }
      : cell.reason
        ? { message: cell.reason }
        : {}),
  };
  if (!cell.cases?.length) return [whole];
  const cases = cell.cases.map(
    (k): TestCase => ({
      classname: `kubelet-harness.${cell.runtime}.${cell.scenario}`,
      name: caseTitle(k),
      durationMs: k.durationMs ?? 0,
      outcome: k.outcome,
      ...(k.outcome === 'failed'
        ? {
            message: `${k.quarantine ? quarantineNote(k) : ''}${k.reason ?? 'failed'}`,
            body: [failedAssertions(k.assertions ?? []), podEvents(cell, k)].filter(Boolean).join('\n'),
          }
        : k.reason
          ? { message: k.reason }
          : {}),
    }),
  );
  const outsideCases = cell.outcome === 'failed' && !cell.cases.some((k) => k.outcome === 'failed');
  return outsideCases ? [...cases, whole] : cases;
}

function failedAssertions(assertions: readonly AssertionResult[]): string {
  return assertions
    .filter((a) => a.outcome === 'failed')
    .map((a) => {
      const detail = [a.message, a.expected !== undefined ? `expected: ${JSON.stringify(a.expected)}` : '']
        .concat(a.actual !== undefined ? [`actual: ${JSON.stringify(a.actual)}`] : [])
        .filter(Boolean)
        .join('\n  ');
      return `${a.name}\n  ${detail}`;
    })
    .join('\n');
}

/** The events of the case's pods, as the kubelet reported them: what a failure reader looks at next. */
function podEvents(cell: CellResult, k: CaseResult): string {
  const events = caseEvents(cell, k);
  if (events.length === 0) return '';
  return [
    'events of its pods:',
    ...events.map((e) => `  ${(e.t / 1000).toFixed(1)}s ${e.detail?.object} ${e.summary}`),
  ].join('\n');
}

function quarantineNote(c: Pick<CellResult, 'quarantine' | 'cases'>): string {
  const q = c.quarantine ?? c.cases?.find((k) => k.outcome === 'failed')?.quarantine;
  return q ? `[quarantined until ${q.expires} (${q.owner}): ${q.reason}] ` : '[quarantined] ';
}
