// Go's time.Duration text form ("1m30s", "300ms", "1.5h"), because KubeletConfiguration files
// written for the real kubelet carry durations that way. Values are milliseconds (fractional
// for sub-millisecond units).

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

// Escaped: esbuild copies regex literals as written, and one non-ASCII character in the bundle
// makes V8 keep all of its source text as two-byte (UTF-16) instead of one-byte, 5 MiB more.
const PART = /^(\d+(?:\.\d*)?|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)/;

/** Parses a Go duration; throws an Error whose message says what is wrong. */
export function parseDuration(text: string): number {
  if (typeof text !== 'string') throw new Error('must be a duration string such as "1m30s"');
  let rest = text;
  let sign = 1;
  if (rest.startsWith('-') || rest.startsWith('+')) {
    if (rest[0] === '-') sign = -1;
    rest = rest.slice(1);
  }
  // Go accepts a bare zero without a unit, and nothing else without one.
  if (rest === '0') return 0;
  if (rest === '') throw new Error(`invalid duration "${text}"`);
  let total = 0;
  while (rest !== '') {
    const m = PART.exec(rest);
    if (!m) {
      const missingUnit = /^(\d+(?:\.\d*)?|\.\d+)$/.test(rest);
      throw new Error(missingUnit ? `missing unit in duration "${text}"` : `invalid duration "${text}"`);
    }
    const [whole, num, unit] = m as unknown as [string, string, string];
    total += Number(num) * (UNIT_MS[unit] as number);
    rest = rest.slice(whole.length);
  }
  return sign * total;
}

/** Formats milliseconds the way Go's Duration.String does ("1h0m0s", "1m30s", "500ms", "0s"). */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  const neg = ms < 0;
  let ns = Math.round(Math.abs(ms) * 1e6);
  let out: string;
  if (ns < 1e9) {
    // Below one second Go picks the largest unit that keeps the integer part non-zero.
    if (ns < 1e3) out = `${ns}ns`;
    else if (ns < 1e6) out = `${trimFraction(ns / 1e3)}µs`;
    else out = `${trimFraction(ns / 1e6)}ms`;
  } else {
    const h = Math.floor(ns / 3.6e12);
    ns -= h * 3.6e12;
    const m = Math.floor(ns / 6e10);
    ns -= m * 6e10;
    const s = `${trimFraction(ns / 1e9)}s`;
    out = h > 0 ? `${h}h${m}m${s}` : m > 0 ? `${m}m${s}` : s;
  }
  return neg ? `-${out}` : out;
}

function trimFraction(n: number): string {
  return Number(n.toFixed(9)).toString();
}
