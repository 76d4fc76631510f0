import type { CellResult, RunResults } from './model.js';
import { heldByQuarantine } from './quarantine.js';

const escapeXml = (s: string): string =>
  s.replace(
    /[<>&"']/g,
    (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!,
  );

/** JUnit XML: one testsuite per runtime, one testcase per scenario cell. */
export function toJUnit(results: RunResults): string {
  const out: string[] = ['<?xml version="1.0" encoding="UTF-8"?>'];
  const totals = { tests: results.cells.length, failures: 0, skipped: 0 };
  for (const c of results.cells) {
    if (c.outcome === 'failed') totals.failures++;
    if (c.outcome === 'skipped') totals.skipped++;
  }
  out.push(
    `<testsuites name="kubelet-harness" tests="${totals.tests}" failures="${totals.failures}" skipped="${totals.skipped}" time="${(results.durationMs / 1000).toFixed(3)}">`,
  );
  for (const runtime of results.runtimes) {
    const cells = results.cells.filter((c) => c.runtime === runtime.name);
    const failures = cells.filter((c) => c.outcome === 'failed').length;
    const skipped = cells.filter((c) => c.outcome === 'skipped').length;
    const time = cells.reduce((a, c) => a + c.durationMs, 0) / 1000;
    out.push(
      `  <testsuite name="${escapeXml(runtime.name)}" tests="${cells.length}" failures="${failures}" skipped="${skipped}" time="${time.toFixed(3)}">`,
    );
    for (const c of cells) {
      const open = `    <testcase classname="${escapeXml(`kubelet-harness.${c.runtime}`)}" name="${escapeXml(c.scenario)}" time="${(c.durationMs / 1000).toFixed(3)}"`;
      if (c.outcome === 'passed') {
        out.push(`${open}/>`);
        continue;
      }
      out.push(`${open}>`);
      if (c.outcome === 'skipped') {
        out.push(`      <skipped message="${escapeXml(c.reason ?? 'skipped')}"/>`);
      } else {
        const failed = c.assertions.filter((a) => a.outcome === 'failed');
        const body = failed
          .map((a) => {
            const detail = [
              a.message,
              a.expected !== undefined ? `expected: ${JSON.stringify(a.expected)}` : '',
            ]
              .concat(a.actual !== undefined ? [`actual: ${JSON.stringify(a.actual)}`] : [])
              .filter(Boolean)
              .join('\n  ');
            return `${a.name}\n  ${detail}`;
          })
          .join('\n');
        // A held failure stays a failure here; its message says who owns it and until when.
        const q = heldByQuarantine(c) ? quarantineNote(c) : '';
        out.push(
          `      <failure message="${escapeXml(`${q}${c.reason ?? 'failed'}`)}">${escapeXml(body || c.reason || '')}</failure>`,
        );
      }
      out.push('    </testcase>');
    }
    out.push('  </testsuite>');
  }
  out.push('</testsuites>');
  return `${out.join('\n')}\n`;
}

function quarantineNote(c: CellResult): string {
  const q = c.quarantine ?? c.cases?.find((k) => k.outcome === 'failed')?.quarantine;
  return q ? `[quarantined until ${q.expires} (${q.owner}): ${q.reason}] ` : '[quarantined] ';
}
