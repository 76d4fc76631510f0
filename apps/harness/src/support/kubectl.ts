import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';

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
  };
}

/** Runs kubectl to completion; never rejects on a non-zero exit (the code is returned). */
export async function runKubectl(
  kubeconfigPath: string,
  args: string[],
  opts: KubectlOptions & { timeoutMs?: number } = {},
): Promise<KubectlResult> {
  const p = startKubectl(kubeconfigPath, args, { ...opts, input: opts.input ?? '' });
  const timer = setTimeout(() => void p.stop(), opts.timeoutMs ?? 60_000);
  try {
    return await p.exited;
  } finally {
    clearTimeout(timer);
  }
}
