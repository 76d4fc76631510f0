import { EventEmitter } from 'node:events';
import type { ParseArgsOptionsConfig } from 'node:util';
import { describe, expect, it } from 'vitest';
import {
  BENCH_ARGS_OK,
  BENCH_TURN,
  type BenchIo,
  benchArgs,
  numberOption,
  parseOptions,
  UsageError,
} from '../src/util/bench-args.js';

const OPTIONS = {
  pods: { type: 'string', default: '30' },
  'node-options': { type: 'string', default: '' },
  'skip-x': { type: 'boolean', default: false },
  runtime: { type: 'string', short: 'r' },
  arg: { type: 'string', multiple: true, default: [] },
} satisfies ParseArgsOptionsConfig;

describe('parseOptions', () => {
  it('takes --name value, --name=value, short options, booleans, repeats and the defaults', () => {
    expect(
      parseOptions(['--pods', '5', '-r', 'docker', '--skip-x', '--arg=a', '--arg', 'b'], OPTIONS),
    ).toEqual({
      pods: '5',
      'node-options': '',
      'skip-x': true,
      runtime: 'docker',
      arg: ['a', 'b'],
    });
    expect(parseOptions([], OPTIONS)).toEqual({ pods: '30', 'node-options': '', 'skip-x': false, arg: [] });
  });

  it('takes a value that starts with a dash in both forms', () => {
    const spaced = ['--node-options', '--cpu-prof --cpu-prof-dir=/tmp/prof', '--arg', '--inspect'];
    expect(parseOptions(spaced, OPTIONS)).toMatchObject({
      'node-options': '--cpu-prof --cpu-prof-dir=/tmp/prof',
      arg: ['--inspect'],
    });
    expect(parseOptions(['--node-options=--cpu-prof'], OPTIONS)['node-options']).toBe('--cpu-prof');
  });

  it('refuses an unknown option (a typo too), naming the known ones', () => {
    expect(() => parseOptions(['--pod', '10'], OPTIONS)).toThrow(
      new UsageError('unknown option --pod, known: --pods, --node-options, --skip-x, -r/--runtime, --arg'),
    );
    expect(() => parseOptions(['--bogus=1'], OPTIONS)).toThrow(/^unknown option --bogus, known: /);
    expect(() => parseOptions(['-x'], OPTIONS)).toThrow(/^unknown option -x, known: /);
  });

  it('refuses a missing value, a value on a boolean and a positional argument', () => {
    expect(() => parseOptions(['--pods'], OPTIONS)).toThrow(new UsageError('--pods needs a value'));
    expect(() => parseOptions(['--runtime', '--pods', '3'], OPTIONS)).toThrow(
      new UsageError('--runtime needs a value'),
    );
    expect(() => parseOptions(['--skip-x=yes'], OPTIONS)).toThrow(new UsageError('--skip-x takes no value'));
    expect(() => parseOptions(['10'], OPTIONS)).toThrow(
      new UsageError('unexpected argument "10": this command takes options only'),
    );
  });
});

describe('numberOption', () => {
  it('takes whole numbers >= min by default, fractions when asked', () => {
    expect(numberOption('--pods', '0')).toBe(0);
    expect(numberOption('--pods', '110')).toBe(110);
    expect(numberOption('--rate', '0.1', { integer: false })).toBe(0.1);
    expect(numberOption('--batch', '1', { min: 1 })).toBe(1);
  });

  it('refuses what is not one, naming the flag', () => {
    for (const bad of ['abc', '', '-1', '1.5', '1e3', ' 2', '0x10'])
      expect(() => numberOption('--pods', bad)).toThrow(
        new UsageError(`--pods must be a whole number >= 0, not ${JSON.stringify(bad)}`),
      );
    expect(() => numberOption('--batch', '0', { min: 1 })).toThrow(
      new UsageError('--batch must be a whole number >= 1, not "0"'),
    );
    expect(() => numberOption('--rate', '.5', { integer: false })).toThrow(
      new UsageError('--rate must be a number >= 0, not ".5"'),
    );
  });
});

/** Output and exit status of benchArgs, with an exit that ends the call as process.exit would. */
function io(parent?: BenchIo['parent']) {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out,
    err,
    io: {
      out: (t: string) => out.push(t),
      err: (t: string) => err.push(t),
      exit: (code: number): never => {
        throw Object.assign(new Error('exit'), { exitCode: code });
      },
      parent,
    } satisfies BenchIo,
  };
}

const exitCode = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: { exitCode?: number }) => e.exitCode,
  );

describe('benchArgs', () => {
  const spec = (argv: string[]) => ({
    prog: 'x bench',
    usage: 'Usage: x bench [--pods N]',
    options: OPTIONS,
    argv,
  });
  const read = (v: { pods: string }) => ({ pods: numberOption('--pods', v.pods) });

  it('returns what read makes of the options', async () => {
    const o = io();
    await expect(benchArgs(spec(['--pods', '7']), read, o.io)).resolves.toEqual({ pods: 7 });
    expect([...o.out, ...o.err]).toEqual([]);
  });

  it('prints the usage on stdout and exits 0 on -h and --help, before reading the values', async () => {
    for (const help of ['-h', '--help']) {
      const o = io();
      expect(await exitCode(benchArgs(spec(['--pods', 'abc', help]), read, o.io))).toBe(0);
      expect(o.out).toEqual(['Usage: x bench [--pods N]\n']);
      expect(o.err).toEqual([]);
    }
  });

  it('reports bad input as one line on stderr and exits 2', async () => {
    for (const [argv, line] of [
      [['--pods', 'abc'], 'x bench: --pods must be a whole number >= 0, not "abc" (see --help)\n'],
      [['--pod', '1'], /^x bench: unknown option --pod, known: .*-h\/--help \(see --help\)\n$/],
    ] as const) {
      const o = io();
      expect(await exitCode(benchArgs(spec([...argv]), read, o.io))).toBe(2);
      expect(o.err).toHaveLength(1);
      expect(o.err[0]).toMatch(line);
      expect(o.out).toEqual([]);
    }
  });

  it('lets other errors through', async () => {
    const boom = () => {
      throw new Error('boom');
    };
    await expect(benchArgs(spec([]), boom, io().io)).rejects.toThrow('boom');
  });

  it('under bench-serial, says the arguments are good and returns on its turn only', async () => {
    const sent: unknown[] = [];
    let disconnected = false;
    const parent = Object.assign(new EventEmitter(), {
      send: (m: unknown) => sent.push(m) > 0,
      disconnect: () => {
        disconnected = true;
      },
    });
    let returned = false;
    const args = benchArgs(spec([]), read, io(parent).io).then((a) => {
      returned = true;
      return a;
    });
    await new Promise((r) => setImmediate(r));
    expect(sent).toEqual([BENCH_ARGS_OK]);
    parent.emit('message', 'something else');
    await new Promise((r) => setImmediate(r));
    expect(returned).toBe(false);
    parent.emit('message', BENCH_TURN);
    await expect(args).resolves.toEqual({ pods: 30 });
    expect(disconnected).toBe(true);
  });

  it('under bench-serial, never asks for a turn on --help or bad input', async () => {
    const sent: unknown[] = [];
    const parent = Object.assign(new EventEmitter(), { send: (m: unknown) => sent.push(m), disconnect() {} });
    expect(await exitCode(benchArgs(spec(['--help']), read, io(parent).io))).toBe(0);
    expect(await exitCode(benchArgs(spec(['--bogus']), read, io(parent).io))).toBe(2);
    expect(sent).toEqual([]);
  });

  it('fails when bench-serial goes away before the turn', async () => {
    const parent = Object.assign(new EventEmitter(), { send: () => true, disconnect() {} });
    const args = benchArgs(spec([]), read, io(parent).io);
    parent.emit('disconnect');
    await expect(args).rejects.toThrow('bench-serial went away before this bench had its turn');
  });
});
