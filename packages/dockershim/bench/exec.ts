import { Writable } from 'node:stream';
import type { CriClient } from '@kh/cri-api';
import { streamRemoteCommand } from '@kh/cri-streaming';
import type Dockerode from 'dockerode';

/** Three ways to run `true` in a running container and learn its exit code. */
export const EXEC_PATHS = ['shim-exec', 'docker-exec', 'shim-execsync'] as const;
export type ExecPath = (typeof EXEC_PATHS)[number];

const CMD = ['true'];

/** Discards output; exec of `true` has none, but the streams are asked for as kubectl does. */
const discard = () =>
  new Writable({
    write(_chunk, _enc, done) {
      done();
    },
  });

/** One round trip per path, each resolving with the exit code. */
export function execRoundTrips(
  client: CriClient,
  docker: Dockerode,
  containerId: string,
): Record<ExecPath, () => Promise<number>> {
  return {
    // What kubectl exec costs the node: CRI Exec for a URL, then the SPDY session to the exit code.
    'shim-exec': async () => {
      const { url } = await client.exec({ containerId, cmd: CMD, stdout: true, stderr: true });
      return (await streamRemoteCommand(url, { stdout: discard(), stderr: discard() })).exitCode;
    },
    // What `docker exec` asks of the Engine, minus spawning the CLI (the shim side spawns nothing
    // either): the CLI inspects the container first (so "no such container" wins over exec errors),
    // then exec create, the hijacked start, and exec inspect for the code. The shim makes the same
    // calls: the inspect in CRI Exec, the rest in the streaming session.
    'docker-exec': async () => {
      const container = docker.getContainer(containerId);
      await container.inspect();
      const exec = await container.exec({ Cmd: CMD, AttachStdout: true, AttachStderr: true, Tty: false });
      const stream = (await exec.start({ hijack: true, stdin: false })) as NodeJS.ReadableStream;
      stream.resume();
      await new Promise((resolve, reject) => {
        stream.once('close', resolve);
        stream.once('error', reject);
      });
      for (;;) {
        const r = await exec.inspect();
        if (!r.Running && r.ExitCode !== null) return r.ExitCode;
      }
    },
    'shim-execsync': async () => (await client.execSync({ containerId, cmd: CMD, timeout: 10n })).exitCode,
  };
}

/**
 * Runs every path `iterations` times after `warmup` untimed rounds, interleaved round by round so
 * background load falls on all of them alike. Returns the latencies in ms per path.
 */
export async function benchExec(
  trips: Record<ExecPath, () => Promise<number>>,
  iterations: number,
  warmup: number,
  progress: (line: string) => void,
): Promise<Record<ExecPath, number[]>> {
  const samples = Object.fromEntries(EXEC_PATHS.map((p) => [p, [] as number[]])) as unknown as Record<
    ExecPath,
    number[]
  >;
  for (let i = -warmup; i < iterations; i++) {
    for (const path of EXEC_PATHS) {
      const t0 = performance.now();
      const code = await trips[path]();
      const ms = performance.now() - t0;
      if (code !== 0) throw new Error(`${path}: \`true\` exited ${code}`);
      if (i >= 0) samples[path].push(ms);
    }
    if ((i + 1) % 50 === 0 && i >= 0) progress(`bench: ${i + 1}/${iterations} exec rounds`);
  }
  return samples;
}
