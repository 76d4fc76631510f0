import type { CaseResult, SuiteResult } from './runner.js';

/** The human summary: per group counts, then every failure and skip with its reason. */
export function formatSummary(result: SuiteResult): string {
  const lines = [`CRI conformance: ${result.runtime.name} ${result.runtime.version} (${result.endpoint})`];
  const groups = new Map<string, CaseResult[]>();
  for (const c of result.cases) groups.set(c.group, [...(groups.get(c.group) ?? []), c]);
  for (const [group, cases] of groups) {
    const count = (s: string) => cases.filter((c) => c.status === s).length;
    lines.push(
      `  ${group.padEnd(20)} ${count('passed')} passed, ${count('failed')} failed, ${count('skipped')} skipped`,
    );
  }
  const notable = result.cases.filter((c) => c.status !== 'passed');
  if (notable.length > 0) lines.push('');
  for (const c of notable)
    lines.push(`  ${c.status.toUpperCase()} ${c.group} › ${c.name}: ${c.message ?? ''}`);
  const t = result.totals;
  lines.push(
    '',
    `${t.passed} passed, ${t.failed} failed, ${t.skipped} skipped in ${(result.durationMs / 1000).toFixed(1)} s`,
  );
  return lines.join('\n');
}

const escapeXml = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** JUnit XML: one testsuite per group, one testcase per case; skips carry their reason. */
export function toJUnitXml(result: SuiteResult): string {
  const groups = new Map<string, CaseResult[]>();
  for (const c of result.cases) groups.set(c.group, [...(groups.get(c.group) ?? []), c]);
  const seconds = (ms: number) => (ms / 1000).toFixed(3);
  const out = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="cri-conformance ${escapeXml(result.runtime.name)}" tests="${result.cases.length}" failures="${result.totals.failed}" skipped="${result.totals.skipped}" time="${seconds(result.durationMs)}">`,
  ];
  for (const [group, cases] of groups) {
    const failures = cases.filter((c) => c.status === 'failed').length;
    const skipped = cases.filter((c) => c.status === 'skipped').length;
    const time = cases.reduce((s, c) => s + c.durationMs, 0);
    out.push(
      `  <testsuite name="${escapeXml(group)}" tests="${cases.length}" failures="${failures}" skipped="${skipped}" time="${seconds(time)}">`,
    );
    for (const c of cases) {
      const open = `    <testcase classname="${escapeXml(group)}" name="${escapeXml(c.name)}" time="${seconds(c.durationMs)}"`;
      if (c.status === 'passed') out.push(`${open}/>`);
      else if (c.status === 'skipped')
        out.push(`${open}><skipped message="${escapeXml(c.message ?? '')}"/></testcase>`);
      else {
        const msg = escapeXml(c.message ?? '');
        out.push(`${open}><failure message="${msg}">${msg}</failure></testcase>`);
      }
    }
    out.push('  </testsuite>');
  }
  out.push('</testsuites>', '');
  return out.join('\n');
}
