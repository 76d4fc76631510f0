// A NodeHost inside a kind-style node container, driven through the Docker Engine API: the agent
// and the dockershim run there, next to their runtime, as a kubelet runs next to its runtime.
import type Docker from 'dockerode';
import { type CpuClock, containerCpuClock } from './cpu.js';
import type { NodeHost, NodeProcess } from './host.js';
import { LineTail } from './lines.js';

export class ContainerHost implements NodeHost {
  private readonly processes = new Set<NodeProcess>();
  private cpuClock?: Promise<CpuClock>;

  constructor(
    private readonly docker: Docker,
    readonly containerId: string,
  ) {}

  async exec(
    cmd: string[],
    opts: { timeoutMs?: number } = {},
  ): Promise<{ exitCode: number; output: string }> {
    const container = this.docker.getContainer(this.containerId);
    const exec = await container.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true });
    const stream = await exec.start({ hijack: true, stdin: false });
    const out = new LineTail(100_000);
    this.docker.modem.demuxStream(
      stream,
      { write: (c: Buffer) => out.push(c) } as never,
      { write: (c: Buffer) => out.push(c) } as never,
    );
    const timeoutMs = opts.timeoutMs ?? 60_000;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        stream.destroy();
        reject(new Error(`exec ${cmd.join(' ')} timed out after ${timeoutMs} ms`));
      }, timeoutMs);
      stream.on('end', () => {
        clearTimeout(timer);
        resolve();
      });
      stream.on('close', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    const info = await exec.inspect();
    return { exitCode: info.ExitCode ?? -1, output: out.tail(100_000).join('\n') };
  }

  /**
   * Starts a process with `docker exec`. A pid file lets stop() signal the process itself, since
   * closing an exec stream does not stop what it runs.
   */
  async spawn(cmd: string[], opts: { name: string; env?: Record<string, string> }): Promise<NodeProcess> {
    const pidFile = `/run/kh/${opts.name}.pid`;
    const quoted = cmd.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
    const container = this.docker.getContainer(this.containerId);
    const exec = await container.exec({
      Cmd: ['sh', '-c', `mkdir -p /run/kh && echo $$ > ${pidFile} && exec ${quoted}`],
      Env: Object.entries(opts.env ?? {}).map(([k, v]) => `${k}=${v}`),
      AttachStdout: true,
      AttachStderr: true,
    });
    const stream = await exec.start({ hijack: true, stdin: false });
    const out = new LineTail();
    this.docker.modem.demuxStream(
      stream,
      { write: (c: Buffer) => out.push(c) } as never,
      { write: (c: Buffer) => out.push(c) } as never,
    );
    const exited = new Promise<number | null>((resolve) => {
      const done = () =>
        void exec.inspect().then(
          (i) => resolve(i.ExitCode ?? null),
          () => resolve(null),
        );
      stream.on('end', done);
      stream.on('close', done);
    });
    const handle: NodeProcess = {
      name: opts.name,
      exited,
      tail: (n) => out.tail(n),
      stop: async (signal = 'SIGTERM') => {
        const sig = signal.replace(/^SIG/, '');
        await this.exec([
          'sh',
          '-c',
          `test -f ${pidFile} && kill -${sig} "$(cat ${pidFile})" 2>/dev/null; true`,
        ]).catch(() => {});
        const timeout = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 15_000));
        if ((await Promise.race([exited, timeout])) === 'timeout') {
          await this.exec(['sh', '-c', `kill -KILL "$(cat ${pidFile})" 2>/dev/null; true`]).catch(() => {});
        }
        this.processes.delete(handle);
      },
    };
    this.processes.add(handle);
    return handle;
  }

  async writeFile(path: string, content: string): Promise<void> {
    const b64 = Buffer.from(content).toString('base64');
    const dir = path.slice(0, path.lastIndexOf('/')) || '/';
    const r = await this.exec(['sh', '-c', `mkdir -p '${dir}' && echo '${b64}' | base64 -d > '${path}'`]);
    if (r.exitCode !== 0) throw new Error(`writing ${path} in the node failed: ${r.output}`);
  }

  async cpuSeconds(): Promise<number> {
    // The cgroup stays the container's for its life: found once (a failed look is tried again).
    this.cpuClock ??= containerCpuClock(this.docker, this.containerId).catch((err) => {
      this.cpuClock = undefined;
      throw err;
    });
    return (await this.cpuClock)();
  }

  async stopAll(): Promise<void> {
    await Promise.allSettled([...this.processes].map((p) => p.stop()));
  }
}
