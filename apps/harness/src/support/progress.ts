// Progress lines for long work. Plain text with a prefix per runtime, so parallel nodes stay
// readable in a terminal and in CI logs alike.
export interface Progress {
  step(message: string): void;
  ok(message: string): void;
  fail(message: string): void;
  skip(message: string): void;
  warn(message: string): void;
  info(message: string): void;
  child(prefix: string): Progress;
}

export function consoleProgress(
  write: (line: string) => void = (l) => process.stderr.write(`${l}\n`),
  prefix = '',
  t0 = Date.now(),
): Progress {
  const stamp = () => `${((Date.now() - t0) / 1000).toFixed(1).padStart(6)}s`;
  const emit = (mark: string, m: string) => write(`${stamp()} ${mark} ${prefix ? `[${prefix}] ` : ''}${m}`);
  return {
    step: (m) => emit('▸', m),
    ok: (m) => emit('✓', m),
    fail: (m) => emit('✗', m),
    skip: (m) => emit('–', m),
    warn: (m) => emit('!', m),
    info: (m) => emit(' ', m),
    child: (p) => consoleProgress(write, prefix ? `${prefix}/${p}` : p, t0),
  };
}
