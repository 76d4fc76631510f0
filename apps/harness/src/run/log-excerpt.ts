// Log excerpts for a failed cell. A scenario often fails an assertion early and goes on (or waits
// for its clean-up), so the last lines of a log may say nothing about the failure: the excerpt
// holds the lines logged around each failure, found by their timestamps, plus the last lines.

/** Lines logged from this long before a failure... */
export const EXCERPT_BEFORE_MS = 10_000;
/** ...to this long after it are "around" it. */
export const EXCERPT_AFTER_MS = 5_000;

// The first ISO 8601 time on a line: klog-style `E2026-11-23T01:44:56.719Z`, containerd's
// `time="2026-11-23T01:44:44.222336310Z"`, dockerd's the same. Offsets other than Z are not used.
const STAMP = /(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)/;

function lineTimes(lines: readonly string[]): (number | undefined)[] {
  let last: number | undefined;
  // A line without a time (a stack trace, a continuation) belongs with the line before it.
  return lines.map((line) => {
    const m = STAMP.exec(line);
    const t = m ? Date.parse(m[1]!) : Number.NaN;
    if (Number.isFinite(t)) last = t;
    return last;
  });
}

/**
 * At most `max` lines: those within the window around any failure time (epoch ms), the last
 * `tail` lines, and a `…` line where lines were left out. Without failure times, or when no line
 * has a time, it is the last `max` lines.
 */
export function excerptAround(
  lines: readonly string[],
  failuresAt: readonly number[],
  max = 80,
  tail = 20,
): string[] {
  if (failuresAt.length === 0) return lines.slice(-max);
  const times = lineTimes(lines);
  const around = (t: number | undefined) =>
    t !== undefined && failuresAt.some((f) => t >= f - EXCERPT_BEFORE_MS && t <= f + EXCERPT_AFTER_MS);
  const tailFrom = Math.max(0, lines.length - tail);
  let picked = lines.map((_, i) => i).filter((i) => i < tailFrom && around(times[i]));
  if (picked.length === 0) return lines.slice(-max);
  // Over budget: the lines just before each failure say most, so keep the latest of the window.
  picked = picked.slice(-(max - (lines.length - tailFrom)));
  const keep = [...picked, ...lines.map((_, i) => i).slice(tailFrom)];
  const out: string[] = [];
  let prev = -1;
  for (const i of keep) {
    if (i !== prev + 1) out.push('…');
    out.push(lines[i]!);
    prev = i;
  }
  return out;
}
