import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';

const VERSIONED = '/usr/lib/google-cloud-sdk/bin/kubectl';

/** The kubectl binary for a minor version ("1.33"), or the one on PATH. */
export function kubectlBinary(version = '1.33'): string {
  const pinned = `${VERSIONED}.${version}`;
  return existsSync(pinned) ? pinned : 'kubectl';
}

/** Runs kubectl against a kubeconfig file; never rejects on a non-zero exit (the code is returned). */
export function runKubectl(
  kubeconfigPath: string,
  args: string[],
  opts: { input?: string; version?: string; timeoutMs?: number } = {},
): Promise<{ stdout: string; stderr: string; code: number }> {
  return new Promise((resolve) => {
    const child = spawn(kubectlBinary(opts.version), [`--kubeconfig=${kubeconfigPath}`, ...args], {
      stdio: ['pipe', 'pipe', 'pipe'],
      timeout: opts.timeoutMs ?? 60_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    child.on('error', (err) => resolve({ stdout, stderr: `${stderr}${err.message}`, code: -1 }));
    child.on('close', (code) => resolve({ stdout, stderr, code: code ?? -1 }));
    child.stdin.end(opts.input ?? '');
  });
}
