// The command line of a benchmark CLI: the checks every bench shares (unknown options, numbers,
// --help) and its part of scripts/bench-serial.mjs's handshake.
import { type ParseArgsOptionsConfig, parseArgs } from 'node:util';

/** Bad input on a command line: reported as one line, exit status 2. */
export class UsageError extends Error {}

/** The `-h, --help` every bench takes. */
const HELP = { help: { type: 'boolean', short: 'h' } } as const;

type Values<T extends ParseArgsOptionsConfig> = ReturnType<
  typeof parseArgs<{ options: T; strict: true; allowPositionals: false }>
>['values'];

/**
 * node:util parseArgs, strict, except that `--name value` takes any value, also one that starts
 * with a dash (`--agent-node-options "--cpu-prof --cpu-prof-dir=/tmp/prof"`), which parseArgs only
 * takes as `--name=value`. A missing value (the end of the line, or another option of `options`
 * next) is an error, as is an unknown option, which names the known ones.
 */
export function parseOptions<T extends ParseArgsOptionsConfig>(
  argv: readonly string[],
  options: T,
): Values<T> {
  const short = new Map(
    Object.entries(options).flatMap(([name, o]) => (o.short ? [[o.short, name] as const] : [])),
  );
  // `--name`, `--name=value` or `-s`: the option's name and its inline value.
  const option = (arg: string) => {
    const long = /^--([^=]+)(?:=([\s\S]*))?$/.exec(arg);
    const name = long ? long[1] : /^-([^-])$/.exec(arg)?.[1] && short.get(arg.slice(1));
    return name !== undefined && Object.hasOwn(options, name) ? { name, inline: long?.[2] } : undefined;
  };
  const known = () =>
    Object.entries(options)
      .map(([name, o]) => (o.short ? `-${o.short}/--${name}` : `--${name}`))
      .join(', ');
  const args: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (!arg.startsWith('-') || arg === '-' || arg === '--')
      throw new UsageError(`unexpected argument ${JSON.stringify(arg)}: this command takes options only`);
    const o = option(arg);
    if (!o) throw new UsageError(`unknown option ${arg.split('=')[0]}, known: ${known()}`);
    if (options[o.name]?.type === 'boolean') {
      if (o.inline !== undefined) throw new UsageError(`--${o.name} takes no value`);
      args.push(`--${o.name}`);
    } else if (o.inline !== undefined) {
      args.push(`--${o.name}=${o.inline}`);
    } else {
      const value = argv[i + 1];
      if (value === undefined || option(value)) throw new UsageError(`--${o.name} needs a value`);
      args.push(`--${o.name}=${value}`);
      i++;
    }
  }
  return parseArgs({ args, options, strict: true, allowPositionals: false }).values;
}

/**
 * A number option's value: digits (and, unless `integer`, a fraction), at least `min`. Counts
 * take the default, a whole number >= 0.
 */
export function numberOption(flag: string, value: string, { integer = true, min = 0 } = {}): number {
  const n = (integer ? /^\d+$/ : /^\d+(\.\d+)?$/).test(value) ? Number(value) : Number.NaN;
  if (!(n >= min))
    throw new UsageError(
      `${flag} must be a ${integer ? 'whole number' : 'number'} >= ${min}, not ${JSON.stringify(value)}`,
    );
  return n;
}

/** scripts/bench-serial.mjs's handshake: the bench says its arguments are good, then waits for its turn. */
export const BENCH_ARGS_OK = 'kh-bench:args-ok';
export const BENCH_TURN = 'kh-bench:turn';

/** Where a bench CLI writes and how it exits; `parent` is bench-serial's IPC channel, when it has one. */
export interface BenchIo {
  out(text: string): void;
  err(text: string): void;
  exit(code: number): never;
  parent?: BenchParent;
}

/** The IPC channel to bench-serial, as the process has it when started with one. */
export interface BenchParent extends NodeJS.EventEmitter {
  send(message: string): unknown;
  disconnect(): void;
}

const processIo: BenchIo = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  exit: (code) => process.exit(code),
  parent: process.send ? (process as BenchParent) : undefined,
};

/**
 * A bench's options, as the project's other CLIs read theirs: `-h/--help` prints `usage` and
 * exits 0; an unknown option, a missing value or a value `read` refuses (it throws UsageError)
 * is one line on stderr and exit status 2. All before the bench touches anything: under
 * scripts/bench-serial.mjs, it then waits for the bench lock, which help and bad input never take.
 */
export async function benchArgs<T extends ParseArgsOptionsConfig, R>(
  spec: { prog: string; usage: string; options: T; argv?: readonly string[] },
  read: (values: Values<T & typeof HELP>) => R,
  io: BenchIo = processIo,
): Promise<R> {
  let result: R;
  try {
    const values = parseOptions(spec.argv ?? process.argv.slice(2), { ...spec.options, ...HELP });
    if ((values as { help?: boolean }).help) {
      io.out(`${spec.usage}\n`);
      return io.exit(0);
    }
    result = read(values);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.err(`${spec.prog}: ${err.message} (see --help)\n`);
    return io.exit(2);
  }
  const parent = io.parent;
  if (parent) {
    let gone: () => void = () => {};
    const turn = new Promise<void>((resolve, reject) => {
      parent.on('message', (m) => m === BENCH_TURN && resolve());
      gone = () => reject(new Error('bench-serial went away before this bench had its turn'));
      parent.once('disconnect', gone);
    });
    parent.send(BENCH_ARGS_OK);
    await turn;
    // The channel would keep the bench alive, and its children must not inherit it.
    parent.off('disconnect', gone);
    parent.disconnect();
  }
  return result;
}
