import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';

const VERSIONED = '/usr/lib/google-cloud-sdk/bin/kubectl';

/** The kubectl binary for a minor version ("1.33"), or the one on PATH. */
export function kubectlBinary(version = '1.33'): string {
  const pinned = `${VERSIONED}.${version}`;
  return existsSync(pinned) ? pinned : 'kubectl';
}

export interface KubectlOptions {
  input?: string;
  version?: string;
  /**
   * Runs kubectl on a pseudo-terminal (util-linux `script`), so `exec -t` / `attach -t` really
   * get a TTY; the exit code is still kubectl's (`script -e`).
   */
  tty?: boolean;
}

export interface KubectlResult {
  stdout: string;
  stderr: string;
  code: number;
  /**
   * runKubectl's timeout ended it: code is -1 and stderr says where kubectl was waiting (its
   * goroutine dump, taken with SIGABRT, cut to the client-go and kubectl frames).
   */
  timedOut?: boolean;
}

/** A kubectl that keeps running (port-forward, logs -f, attach) until stopped. */
export interface KubectlProcess {
  /** Everything it wrote to stdout so far. */
  stdout(): string;
  stderr(): string;
  /** Writes to its stdin (attach -i); `end` closes it. */
  write(data: string, end?: boolean): void;
  /** Resolves when kubectl exits by itself. */
  readonly exited: Promise<KubectlResult>;
  /** SIGTERM, then what it wrote. */
  stop(): Promise<KubectlResult>;
  /**
   * SIGABRT to kubectl (a Go program dumps its goroutines and exits; kubectl catches SIGQUIT on a
   * terminal), SIGKILL after `graceMs`.
   */
  abort(graceMs: number): Promise<KubectlResult>;
}

const shellQuote = (s: string): string => `'${s.replaceAll("'", `'\\''`)}'`;

function spawnKubectl(
  kubeconfigPath: string,
  args: string[],
  opts: KubectlOptions,
): ChildProcessWithoutNullStreams {
  const argv = [kubectlBinary(opts.version), `--kubeconfig=${kubeconfigPath}`, ...args];
  return opts.tty
    ? spawn('script', ['-qefc', argv.map(shellQuote).join(' '), '/dev/null'], { stdio: 'pipe' })
    : spawn(argv[0]!, argv.slice(1), { stdio: 'pipe' });
}

/** Starts kubectl against a kubeconfig file and collects what it writes. */
export function startKubectl(
  kubeconfigPath: string,
  args: string[],
  opts: KubectlOptions = {},
): KubectlProcess {
  const child = spawnKubectl(kubeconfigPath, args, opts);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  child.stdin.on('error', () => {}); // kubectl may exit before reading its input
  const exited = new Promise<KubectlResult>((resolve) => {
    child.on('error', (err) => resolve({ stdout, stderr: `${stderr}${err.message}`, code: -1 }));
    child.on('close', (code, signal) => resolve({ stdout, stderr, code: code ?? (signal ? -1 : 0) }));
  });
  if (opts.input !== undefined) child.stdin.end(opts.input);
  return {
    stdout: () => stdout,
    stderr: () => stderr,
    write: (data, end = false) => (end ? child.stdin.end(data) : child.stdin.write(data)),
    exited,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
    abort: async (graceMs) => {
      if (child.exitCode !== null || child.signalCode !== null) return exited;
      // Under `script` kubectl is a grandchild, and script answers signals by killing its shell.
      const pids = [child.pid!, ...descendants(child.pid!)].filter((p) => commOf(p).startsWith('kubectl'));
      for (const pid of pids) signal(pid, 'SIGABRT');
      const kill = setTimeout(() => {
        for (const pid of [...descendants(child.pid!), child.pid!]) signal(pid, 'SIGKILL');
      }, graceMs);
      try {
        return await exited;
      } finally {
        clearTimeout(kill);
      }
    },
  };
}

const signal = (pid: number, sig: NodeJS.Signals) => {
  try {
    process.kill(pid, sig);
  } catch {} // already gone
};

/** A process's children, grandchildren and so on, from /proc (Linux). */
function descendants(pid: number): number[] {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  return tasks.flatMap((task) => {
    let children = '';
    try {
      children = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8');
    } catch {}
    return children
      .split(' ')
      .filter(Boolean)
      .flatMap((c) => [Number(c), ...descendants(Number(c))]);
  });
}

function commOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

const GO_DUMP = /SIGABRT: abort\r?\n/;

/**
 * Where kubectl was waiting, from its SIGABRT dump: each goroutine in client-go or kubectl code,
 * as its state and its innermost frames there.
 */
function waitingGoroutines(dump: string): string[] {
  return dump
    .split(/\n\s*\n/)
    .filter((block) => /k8s\.io\/(client-go|kubectl)/.test(block))
    .map((block) => {
      const lines = block.split('\n');
      const state = /^goroutine \d+ .*\[([^\]]+)\]/.exec(lines[0] ?? '')?.[1] ?? '?';
      // Function lines only (file lines are indented), without their arguments and package paths.
      const frames = lines
        .filter((l) => /^k8s\.io\/(client-go|kubectl)\//.test(l))
        .map((l) => l.replace(/\((0x|\{|\.\.\.|\)).*$/, '').replace(/^.*\//, ''))
        .slice(0, 3);
      return `[${state}] ${frames.join(' < ')}`;
    });
}

/** Runs kubectl to completion; never rejects on a non-zero exit (the code is returned). */
export async function runKubectl(
  kubeconfigPath: string,
  args: string[],
  opts: KubectlOptions & { timeoutMs?: number } = {},
): Promise<KubectlResult> {
  const p = startKubectl(kubeconfigPath, args, { ...opts, input: opts.input ?? '' });
  const timeoutMs = opts.timeoutMs ?? 60_000;
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    void p.abort(5_000);
  }, timeoutMs);
  try {
    const r = await p.exited;
    if (!timedOut) return r;
    // On a terminal the dump comes with stdout; either way it is summed up, not kept whole.
    const cut = (s: string) => s.split(GO_DUMP)[0]!;
    const waiting = waitingGoroutines(`${r.stdout}\n${r.stderr}`);
    return {
      stdout: cut(r.stdout),
      stderr:
        `${cut(r.stderr)}kubectl did not exit within ${timeoutMs / 1000} s` +
        (waiting.length > 0 ? `; waiting in:\n${waiting.join('\n')}` : ''),
      code: -1,
      timedOut: true,
    };
  } finally {
    clearTimeout(timer);
  }
}
