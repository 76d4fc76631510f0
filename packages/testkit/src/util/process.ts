import { spawn } from 'node:child_process';
import { access, constants } from 'node:fs/promises';
import { delimiter, join } from 'node:path';

const SETUP_HINT = 'Run `sudo npm run setup` (scripts/setup-host.sh) to install the host tools.';

export class MissingToolError extends Error {
  constructor(
    readonly tool: string,
    readonly debianPackage: string,
  ) {
    super(`\`${tool}\` is not installed (Debian package ${debianPackage}). ${SETUP_HINT}`);
    this.name = 'MissingToolError';
  }
}

/** Resolves a program on PATH, or throws a MissingToolError that names the package providing it. */
export async function requireTool(tool: string, debianPackage: string): Promise<string> {
  const dirs = (process.env.PATH ?? '').split(delimiter).concat(['/usr/sbin', '/sbin', '/usr/bin', '/bin']);
  for (const dir of dirs) {
    const candidate = join(dir, tool);
    try {
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {}
  }
  throw new MissingToolError(tool, debianPackage);
}

/** Ensures a file the recipes rely on exists (e.g. /bin/busybox), with the same setup hint. */
export async function requireFile(path: string, debianPackage: string): Promise<string> {
  try {
    await access(path, constants.R_OK);
    return path;
  } catch {
    throw new MissingToolError(path, debianPackage);
  }
}

export interface RunResult {
  stdout: string;
  stderr: string;
}

/**
 * Runs a program to completion and returns its output; a non-zero exit throws with the
 * tail of stderr, which is where debootstrap, tar and skopeo explain themselves.
 */
export function run(
  program: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; onLine?: (line: string) => void } = {},
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let pending = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      if (!options.onLine) return;
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) options.onLine(line);
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code === 0) return resolve({ stdout, stderr });
      const tail = (stderr || stdout).trim().split('\n').slice(-15).join('\n');
      reject(new Error(`${program} ${args.join(' ')} failed (${signal ?? `exit ${code}`}):\n${tail}`));
    });
  });
}
