// A small structured logger in klog's spirit (severity letter, time, message, key=value pairs),
// writing to stderr. Components take a Logger so tests can capture or silence output.

export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** Verbose logging at a klog -v level. */
  v(level: number, msg: string, fields?: Record<string, unknown>): void;
}

function line(sev: string, msg: string, fields?: Record<string, unknown>): string {
  const kv = Object.entries(fields ?? {})
    .map(
      ([k, v]) =>
        `${k}=${typeof v === 'string' ? JSON.stringify(v) : v instanceof Error ? JSON.stringify(v.message) : JSON.stringify(v)}`,
    )
    .join(' ');
  return `${sev}${new Date().toISOString()} ${JSON.stringify(msg)}${kv ? ` ${kv}` : ''}\n`;
}

export function stderrLogger(
  verbosity = 0,
  write: (s: string) => void = (s) => process.stderr.write(s),
): Logger {
  return {
    info: (msg, fields) => write(line('I', msg, fields)),
    error: (msg, fields) => write(line('E', msg, fields)),
    v: (level, msg, fields) => {
      if (level <= verbosity) write(line('I', msg, fields));
    },
  };
}

export const silentLogger: Logger = { info() {}, error() {}, v() {} };
