import { readdir, readFile } from 'node:fs/promises';
import {
  CanceledError,
  DeadlineExceededError,
  type ExecSyncRequest,
  type ExecSyncResponse,
  FailedPreconditionError,
  InvalidArgumentError,
} from '@kh/cri-api';
import type { DockerClient } from '../docker/client.js';
import { CappedOutput, FrameSplitter } from '../docker/stream.js';
import { ContainerType } from '../model/labels.js';
import type { ShimContext } from './context.js';
import { docker } from './errors.js';
import { getManaged } from './lookup.js';

type Outcome = { kind: 'done' } | { kind: 'timeout' } | { kind: 'canceled' };

/**
 * ExecSync: run a command in a running container and return its output and exit code. stdout and
 * stderr share one byte budget (ShimConfig.execOutputLimitBytes); output beyond it is dropped. A
 * timeout (seconds, 0 = none) answers DEADLINE_EXCEEDED and kills the command's process.
 */
export async function execSync(
  ctx: ShimContext,
  req: ExecSyncRequest,
  signal?: AbortSignal,
): Promise<Partial<ExecSyncResponse>> {
  const info = await getManaged(ctx, req.containerId, ContainerType.container, 'container_id');
  if (req.cmd.length === 0) throw new InvalidArgumentError('cmd is required');
  if (!info.State.Running) {
    throw new FailedPreconditionError(`container ${JSON.stringify(req.containerId)} is not running`);
  }
  const what = `exec ${JSON.stringify(req.cmd)} in container ${JSON.stringify(req.containerId)}`;
  const exec = await docker(what, () =>
    ctx.docker.createExec(info.Id, {
      Cmd: req.cmd,
      AttachStdin: false,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
    }),
  );
  const stream = await docker(what, () => ctx.docker.startExec(exec, { stdin: false, tty: false }));
  const output = new CappedOutput(ctx.config.execOutputLimitBytes);
  // Output is kept as it arrives: pieces of frames, uncopied, under the budget.
  const frames = new FrameSplitter();
  const finished = new Promise<Outcome>((resolve, reject) => {
    stream.on('data', (chunk: Buffer) => {
      try {
        for (const f of frames.push(chunk)) output.write(f.stream, f.payload);
      } catch (err) {
        reject(err);
      }
    });
    stream.on('end', () => resolve({ kind: 'done' }));
    stream.on('close', () => resolve({ kind: 'done' }));
    stream.on('error', reject);
  });
  const timeoutSeconds = Number(req.timeout);
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<Outcome>((resolve) => {
    if (timeoutSeconds > 0) timer = setTimeout(() => resolve({ kind: 'timeout' }), timeoutSeconds * 1000);
  });
  const canceled = new Promise<Outcome>((resolve) => {
    signal?.addEventListener('abort', () => resolve({ kind: 'canceled' }), { once: true });
  });
  const outcome = await Promise.race([finished, timedOut, canceled]).finally(() => clearTimeout(timer));
  if (outcome.kind !== 'done') {
    stream.destroy();
    await killExecProcess(ctx.docker, exec);
    if (outcome.kind === 'timeout') {
      throw new DeadlineExceededError(
        `command ${JSON.stringify(req.cmd)} timed out after ${timeoutSeconds}s`,
      );
    }
    throw new CanceledError(`exec ${JSON.stringify(req.cmd)} canceled by the client`);
  }
  const exitCode = await waitExitCode(ctx.docker, exec);
  return { stdout: Buffer.concat(output.stdout), stderr: Buffer.concat(output.stderr), exitCode };
}

/**
 * The Engine has no "kill exec": signal the exec's pid directly, with every process it started (a
 * shell's children would otherwise live on under the container's init). That pid is in dockerd's pid
 * namespace; it is only ours if the process sits in the container's cgroup (whose path holds the
 * container id), so anything else is left alone rather than risk killing an unrelated process.
 */
export async function killExecProcess(docker: DockerClient, execId: string): Promise<void> {
  try {
    const { Pid, Running, ContainerID } = await docker.inspectExec(execId);
    if (Running && Pid > 0) await killProcessTree(Pid, ContainerID);
  } catch {
    // Best effort: the process may be gone already.
  }
}

/**
 * Stops the tree first, so nothing forks or gets reparented away between reading it and killing it,
 * and reads children again until no new process turns up; then SIGKILLs all of it.
 */
async function killProcessTree(root: number, containerId: string): Promise<void> {
  const stopped: number[] = [];
  const seen = new Set<number>();
  let frontier = [root];
  while (frontier.length > 0) {
    const next: number[] = [];
    for (const pid of frontier) {
      if (seen.has(pid)) continue;
      seen.add(pid);
      const cgroups = await readFile(`/proc/${pid}/cgroup`, 'utf8').catch(() => '');
      if (!cgroups.includes(containerId)) continue;
      try {
        process.kill(pid, 'SIGSTOP');
      } catch {
        continue;
      }
      stopped.push(pid);
    }
    for (const pid of stopped) next.push(...(await childPids(pid)).filter((c) => !seen.has(c)));
    frontier = next;
  }
  for (const pid of stopped) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

async function childPids(pid: number): Promise<number[]> {
  const tasks = await readdir(`/proc/${pid}/task`).catch(() => [] as string[]);
  const lists = await Promise.all(
    tasks.map((t) => readFile(`/proc/${pid}/task/${t}/children`, 'utf8').catch(() => '')),
  );
  return lists.flatMap((l) => l.split(' ').filter(Boolean).map(Number));
}

export async function waitExitCode(docker: DockerClient, execId: string): Promise<number> {
  // The output stream can close a moment before the Engine records the exit code.
  for (let i = 0; i < 50; i++) {
    const r = await docker.inspectExec(execId);
    if (!r.Running && r.ExitCode !== null) return r.ExitCode;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return -1;
}
