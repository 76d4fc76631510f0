// A NodeHost that is this machine: processes are the harness's children. The endpoint backend's
// agent runs here, next to a CRI runtime the user already runs.
import { execFile, spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { NodeHost, NodeProcess } from './host.js';
import { LineTail } from './lines.js';

/** How long stop() waits after its signal before SIGKILL. */
const STOP_GRACE_MS = 15_000;

export class LocalHost implements NodeHost {
  private readonly processes = new Set<NodeProcess>();

  exec(cmd: string[], opts: { timeoutMs?: number } = {}): Promise<{ exitCode: number; output: string }> {
    const [file, ...args] = cmd;
    if (!file) throw new Error('exec needs a command');
    return new Promise((resolve) => {
      execFile(
        file,
        args,
        { timeout: opts.timeoutMs ?? 60_000, maxBuffer: 64 * 1024 * 1024 },
        (err, stdout, stderr) => {
          const code = (err as { code?: unknown } | null)?.code;
          resolve({
            exitCode: err ? (typeof code === 'number' ? code : -1) : 0,
            output: `${stdout}${stderr}${err && typeof code !== 'number' ? err.message : ''}`,
          });
        },
      );
    });
  }

  async spawn(cmd: string[], opts: { name: string; env?: Record<string, string> }): Promise<NodeProcess> {
    const [file, ...args] = cmd;
    if (!file) throw new Error('spawn needs a command');
    const child = spawn(file, args, {
      env: { ...process.env, ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out = new LineTail();
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => out.push(c));
    const exited = new Promise<number | null>((resolve) => {
      child.on('exit', (code) => resolve(code));
      child.on('error', (err) => {
        out.push(`${opts.name}: ${err.message}\n`);
        resolve(null);
      });
    });
    const handle: NodeProcess = {
      name: opts.name,
      exited,
      tail: (n) => out.tail(n),
      stop: async (signal = 'SIGTERM') => {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill(signal);
          const timeout = new Promise<'timeout'>((r) =>
            setTimeout(() => r('timeout'), STOP_GRACE_MS).unref(),
          );
          if ((await Promise.race([exited, timeout])) === 'timeout') child.kill('SIGKILL');
          await exited;
        }
        this.processes.delete(handle);
      },
    };
    this.processes.add(handle);
    return handle;
  }

  async writeFile(path: string, content: string): Promise<void> {
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, content, { mode: 0o600 });
  }

  async stopAll(): Promise<void> {
    await Promise.allSettled([...this.processes].map((p) => p.stop()));
  }
}
