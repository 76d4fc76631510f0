// Failures grouped by message, as upstream's triage clusters them: a message's numbers, ids and
// generated names change from run to run while the cause stays, so they are stripped first.
import type { FailureCluster, HistoryRow } from './model.js';

const SIGNATURE_MAX = 300;

/**
 * The message with what varies between runs replaced: UUIDs and long hex ids (container ids,
 * digests) by <id>, IP addresses by <ip>, numbers by <n> (a unit after them stays: 90s -> <n>s),
 * and any other word with a digit in it (pod, node and namespace names: kh-3f9a-containerd-2) by
 * <name>. Whitespace is collapsed.
 */
export function normalizeMessage(text: string): string {
  return text
    .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, '<id>')
    .replace(/\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b/g, '<ip>')
    .replace(/\b(?=[0-9a-f]*\d)[0-9a-f]{12,}\b/gi, '<id>')
    .replace(/[A-Za-z0-9][\w.-]*/g, (word) => {
      if (!/\d/.test(word)) return word;
      const number = /^\d+(?:\.\d+)*([a-zµ%]*)$/i.exec(word);
      return number ? `<n>${number[1]}` : '<name>';
    })
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, SIGNATURE_MAX);
}

/** Every failed square of every row grouped by its normalised message, most failures first. */
export function clusterFailures(rows: readonly HistoryRow[]): FailureCluster[] {
  const clusters = new Map<string, FailureCluster & { runIndexes: Set<number>; newest: number }>();
  for (const row of rows)
    row.results.forEach((r, i) => {
      if (r?.outcome !== 'failed') return;
      const message = r.reason?.trim() || '(no message)';
      const signature = normalizeMessage(message);
      let c = clusters.get(signature);
      if (!c) {
        c = { signature, example: message, failures: 0, rows: [], runs: 0, runIndexes: new Set(), newest: i };
        clusters.set(signature, c);
      }
      c.failures++;
      if (!c.rows.includes(row.id)) c.rows.push(row.id);
      c.runIndexes.add(i);
      // Runs are newest first: a lower index is a newer failure.
      if (i < c.newest) {
        c.newest = i;
        c.example = message;
      }
    });
  return [...clusters.values()]
    .map(({ runIndexes, newest: _n, ...c }) => ({ ...c, runs: runIndexes.size }))
    .sort((a, b) => b.failures - a.failures || a.signature.localeCompare(b.signature));
}
