import { parseArgs } from 'node:util';

export interface RunOptions {
  runtimes: string[] | undefined; // undefined: every registered backend
  scenarios: string[] | undefined; // undefined: every scenario of the suite
  outDir: string;
  suite: string;
  keep: boolean;
}

const list = (v: string | undefined): string[] | undefined =>
  v
    ? v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : undefined;

/** `run` flags; KH_RUNTIME / KH_SCENARIO filter the matrix the same way (handy through turbo). */
export function parseRunOptions(argv: string[], env: NodeJS.ProcessEnv = process.env): RunOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      runtime: { type: 'string', short: 'r' },
      scenario: { type: 'string', short: 's' },
      out: { type: 'string', short: 'o' },
      suite: { type: 'string' },
      keep: { type: 'boolean', default: false },
    },
    allowPositionals: false,
    strict: true,
  });
  return {
    runtimes: list(values.runtime ?? env.KH_RUNTIME),
    scenarios: list(values.scenario ?? env.KH_SCENARIO),
    outDir: values.out ?? env.KH_OUT ?? '.reports/e2e',
    suite: values.suite ?? '@kh/e2e',
    keep: values.keep ?? false,
  };
}
