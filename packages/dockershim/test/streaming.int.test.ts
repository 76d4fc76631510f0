/**
 * CRI Exec, Attach and PortForward of the dockershim, driven by the upstream Go crictl v1.26 (its
 * SPDY client is client-go's, the kubelet's and kubectl's) against the host dockerd. Interactive
 * sessions run crictl under `script`, which gives it the terminal it wants for -t.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { CriClient, FailedPreconditionError, InvalidArgumentError, NotFoundError } from '@kh/cri-api';
import { PortForwardClient, streamRemoteCommand } from '@kh/cri-streaming';
import { criTools } from '@kh/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { docker, ENGINE_ENDPOINT, ShimHarness, waitFor } from './harness.js';
import { awaitSize, freePort, hostNetworkHttpd, processes, Sink, Sizes } from './streaming_helpers.js';

const h = new ShimHarness();
let crictlBin: string;
let pod: Awaited<ReturnType<ShimHarness['runPod']>>;
let sleeper: string;

beforeAll(async () => {
  crictlBin = (await criTools()).crictl;
  await h.start();
  pod = await h.runPod();
  sleeper = await h.runContainer(pod.podId, pod.config, 'sleeper');
});
afterAll(async () => {
  await h.cleanup();
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function crictlArgs(...args: string[]): string[] {
  // Flags, so that an /etc/crictl.yaml on the machine has no say.
  return [
    '--runtime-endpoint',
    h.shim.endpoint,
    '--image-endpoint',
    h.shim.endpoint,
    '--timeout',
    '20s',
    ...args,
  ];
}

function crictl(args: string[], input?: string): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(crictlBin, crictlArgs(...args), { timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err.code as number | undefined) ?? -1) : 0, stdout, stderr });
    });
    child.stdin?.end(input ?? '');
  });
}

/** crictl in a terminal (`script`) sized rows x cols; the caller types into `input` and reads `output`. */
function crictlInTerminal(args: string[], rows = 24, cols = 80) {
  const command = [crictlBin, ...crictlArgs(...args)].map((a) => `'${a}'`).join(' ');
  const child = spawn('script', ['-qec', `stty rows ${rows} cols ${cols}; exec ${command}`, '/dev/null'], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (b: Buffer) => {
    output += b.toString();
  });
  child.stderr.on('data', (b: Buffer) => {
    output += b.toString();
  });
  const exited = new Promise<number>((resolve) => child.on('close', (code) => resolve(code ?? -1)));
  return {
    type: (text: string) => child.stdin.write(text),
    output: () => output,
    waitFor: (re: RegExp, what: string) => waitFor(async () => (re.test(output) ? true : undefined), what),
    exited,
    kill: () => child.kill('SIGKILL'),
  };
}

describe('crictl exec', () => {
  it('prints the command output, stdout and stderr apart', async () => {
    const r = await crictl(['exec', sleeper, 'sh', '-c', 'echo out; echo err >&2']);
    expect(r).toMatchObject({ code: 0, stdout: 'out\n' });
    expect(r.stderr).toContain('err\n');
  });

  it("fails with the command's exit code", async () => {
    const r = await crictl(['exec', sleeper, 'sh', '-c', 'exit 3']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('command terminated with exit code 3');
  });

  it('pipes stdin with -i, to its end', async () => {
    const r = await crictl(['exec', '-i', sleeper, 'tr', 'a-z', 'A-Z'], 'hello streaming\n');
    expect(r).toMatchObject({ code: 0, stdout: 'HELLO STREAMING\n' });
  });

  it('runs an interactive shell in a terminal of the client size with -it', async () => {
    const term = crictlInTerminal(['exec', '-it', sleeper, 'sh'], 40, 100);
    // The first size races the shell's start (Docker 20.10 cannot take it with the exec), so wait for it.
    term.type(awaitSize('size', 40, 100));
    await term.waitFor(/size-40x100/, 'the terminal size inside');
    term.type('tty\n');
    await term.waitFor(/\/dev\/pts\/\d+/, 'a terminal inside');
    term.type('exit 7\n');
    expect(await term.exited).not.toBe(0);
    expect(term.output()).toContain('command terminated with exit code 7');
  });

  it('leaves no process in the container when the client is killed mid-command', async () => {
    const term = crictlInTerminal(['exec', '-it', sleeper, 'sh', '-c', 'sleep 1005 & sleep 1006']);
    await waitFor(
      async () => ((await processes(sleeper)).some((p) => p.includes('sleep 1006')) ? true : undefined),
      'the command to run',
    );
    term.kill();
    await term.exited;
    await waitFor(
      async () => ((await processes(sleeper)).length === 1 ? true : undefined),
      'only the main process to remain',
    );
    expect(await processes(sleeper)).toEqual(['sleep 3600']);
  });
});

describe('crictl attach', () => {
  it('talks to the main process of a container created with stdin and tty', async () => {
    const c = await h.runContainer(pod.podId, pod.config, 'shell', {
      command: ['sh'],
      stdin: true,
      tty: true,
    });
    const term = crictlInTerminal(['attach', '-it', c]);
    term.type('echo attached-$((6*7))\n');
    await term.waitFor(/attached-42/, 'the shell to answer');
    term.type('exit\n');
    expect(await term.exited).toBe(0);
    expect((await docker.getContainer(c).inspect()).State.Running).toBe(false);
  });
});

describe('crictl lifecycle, with nothing made by our own client', () => {
  it('version, runp, create, start, ps, inspect, stop, rm, stopp and rmp', async () => {
    const version = await crictl(['version']);
    expect(version.code, version.stderr).toBe(0);
    expect(version.stdout).toMatch(/RuntimeName:\s+docker/);
    const podConfig = join(h.dir, 'crictl-pod.json');
    const ctrConfig = join(h.dir, 'crictl-ctr.json');
    const pod = h.podConfig();
    await writeFile(podConfig, JSON.stringify(pod));
    await writeFile(
      ctrConfig,
      JSON.stringify(h.containerConfig('by-crictl', { command: ['sleep', '3600'] })),
    );
    const runp = await crictl(['runp', podConfig]);
    expect(runp.code, runp.stderr).toBe(0);
    const podId = runp.stdout.trim();
    const create = await crictl(['create', podId, ctrConfig, podConfig]);
    expect(create.code, create.stderr).toBe(0);
    const ctrId = create.stdout.trim();
    expect((await crictl(['start', ctrId])).code).toBe(0);
    const ps = await crictl(['ps', '--pod', podId, '-q']);
    expect(ps.stdout.trim()).toBe(ctrId);
    const inspect = JSON.parse((await crictl(['inspect', ctrId])).stdout) as { status: { state: string } };
    expect(inspect.status.state).toBe('CONTAINER_RUNNING');
    for (const args of [
      ['stop', ctrId],
      ['rm', ctrId],
      ['stopp', podId],
      ['rmp', podId],
    ]) {
      const r = await crictl(args);
      expect(r.code, `crictl ${args.join(' ')}: ${r.stderr}`).toBe(0);
    }
    const left = await docker.listContainers({
      all: true,
      filters: { label: [`io.kubernetes.pod.uid=${pod.metadata?.uid}`] },
    });
    expect(left).toEqual([]);
  });
});

describe('crictl logs', () => {
  it('prints what a container wrote, stdout and stderr', async () => {
    const c = await h.runContainer(pod.podId, pod.config, 'talker', {
      command: ['sh', '-c', 'echo to-stdout; echo to-stderr >&2'],
    });
    await waitFor(
      async () => ((await docker.getContainer(c).inspect()).State.Running ? undefined : true),
      'exit',
    );
    const r = await crictl(['logs', c]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('to-stdout');
    expect(r.stderr).toContain('to-stderr');
  });
});

/** `crictl port-forward POD :REMOTE` on a random local port; resolves once it listens. */
async function portForward(podId: string, remote: number) {
  const child: ChildProcess = spawn(crictlBin, crictlArgs('port-forward', podId, `:${remote}`), {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (b: Buffer) => {
    stdout += b.toString();
  });
  child.stderr?.on('data', (b: Buffer) => {
    stderr += b.toString();
  });
  const local = await waitFor(async () => {
    if (child.exitCode !== null) throw new Error(`crictl port-forward exited: ${stderr}`);
    const m = /Forwarding from 127\.0\.0\.1:(\d+) ->/.exec(stdout);
    return m ? Number(m[1]) : undefined;
  }, 'crictl port-forward to listen');
  return {
    url: `http://127.0.0.1:${local}/`,
    stderr: () => stderr,
    stop: async () => {
      child.kill('SIGINT');
      if (child.exitCode === null) await new Promise((r) => child.once('exit', r));
    },
  };
}

describe('crictl port-forward', () => {
  it('reaches httpd in a pod, connection after connection', async () => {
    const web = await h.runPod();
    await h.runContainer(web.podId, web.config, 'web', { image: { image: h.images.httpd }, command: [] });
    const pf = await portForward(web.podId, 80);
    try {
      for (let i = 0; i < 3; i++) {
        const res = await fetch(pf.url);
        expect(res.status).toBe(200);
        expect(await res.text()).toContain('kubelet-harness');
      }
    } finally {
      await pf.stop();
    }
  });

  it('reaches a host-network pod that listens on 127.0.0.1 only', async () => {
    const web = await hostNetworkHttpd(h);
    const pf = await portForward(web.podId, web.port);
    try {
      const res = await waitFor(() => fetch(pf.url).catch(() => undefined), 'httpd on the host network');
      expect(await res.text()).toContain('kubelet-harness');
    } finally {
      await pf.stop();
    }
  });

  it('tells the client why when nothing listens on the port', async () => {
    const pf = await portForward(pod.podId, 81);
    try {
      await expect(fetch(pf.url)).rejects.toThrow();
      await waitFor(
        async () => (/cannot connect to port 81 .*ECONNREFUSED/.test(pf.stderr()) ? true : undefined),
        'the error on crictl stderr',
      );
    } finally {
      await pf.stop();
    }
  });
});

describe('the TS client (what crictl cannot show)', () => {
  it('WebSocket v5: a resize mid-session reaches the terminal, the end of stdin is not a detach', async () => {
    const { url } = await h.client.exec({
      containerId: sleeper,
      cmd: ['sh'],
      stdin: true,
      stdout: true,
      tty: true,
    });
    const stdin = new PassThrough();
    const stdout = new Sink();
    const resize = new Sizes();
    resize.push({ width: 100, height: 40 });
    const done = streamRemoteCommand(url, { transport: 'websocket', stdin, stdout, tty: true, resize });
    stdin.write(awaitSize('first', 40, 100));
    await waitFor(async () => (stdout.text.includes('first-40x100') ? true : undefined), 'the first size');
    resize.push({ width: 132, height: 50 });
    stdin.write(awaitSize('second', 50, 132));
    await waitFor(async () => (stdout.text.includes('second-50x132') ? true : undefined), 'the new size');
    stdin.end('exit 5\n');
    expect(await done).toEqual({ exitCode: 5, protocol: 'v5.channel.k8s.io' });
  });

  it('SPDY: aborting mid-command leaves no process behind', async () => {
    const { url } = await h.client.exec({
      containerId: sleeper,
      cmd: ['sh', '-c', 'sleep 1007 & sleep 1008'],
      stdout: true,
      stderr: true,
    });
    const abort = new AbortController();
    const done = streamRemoteCommand(url, { stdout: new Sink(), stderr: new Sink(), signal: abort.signal });
    await waitFor(
      async () => ((await processes(sleeper)).some((p) => p.includes('sleep 1008')) ? true : undefined),
      'the command to run',
    );
    abort.abort(new Error('gone'));
    await expect(done).rejects.toThrow();
    await waitFor(
      async () => ((await processes(sleeper)).length === 1 ? true : undefined),
      'only the main process to remain',
    );
  });

  it('port-forward over WebSocket channels', async () => {
    const web = await h.runPod();
    await h.runContainer(web.podId, web.config, 'web', { image: { image: h.images.httpd }, command: [] });
    const body = await waitFor(async () => {
      const { url } = await h.client.portForward({ podSandboxId: web.podId, port: [80] });
      const client = await PortForwardClient.connect(url, { transport: 'websocket', ports: [80] });
      try {
        const conn = await client.open(80);
        const received = new Sink();
        conn.stream.pipe(received);
        conn.stream.write('GET / HTTP/1.0\r\n\r\n');
        await new Promise((r) => conn.stream.once('end', r));
        return received.text.includes('kubelet-harness') ? received.text : undefined;
      } finally {
        await client.close();
      }
    }, 'httpd answering');
    expect(body).toMatch(/^HTTP\/1\.[01] 200/);
  });
});

describe('bad requests', () => {
  it('Exec: cmd, streams, tty with stderr, unknown and stopped containers', async () => {
    const stopped = await h.runContainer(pod.podId, pod.config, 'stopped', {}, false);
    const base = { containerId: sleeper, cmd: ['true'], stdout: true };
    await expect(h.client.exec({ ...base, cmd: [] })).rejects.toThrow(InvalidArgumentError);
    await expect(h.client.exec({ ...base, cmd: [] })).rejects.toThrow('missing required cmd');
    await expect(h.client.exec({ ...base, stdout: false })).rejects.toThrow(InvalidArgumentError);
    await expect(h.client.exec({ ...base, tty: true, stderr: true })).rejects.toThrow(InvalidArgumentError);
    await expect(h.client.exec({ ...base, containerId: 'nope' })).rejects.toThrow(NotFoundError);
    await expect(h.client.exec({ ...base, containerId: pod.podId })).rejects.toThrow(NotFoundError);
    await expect(h.client.exec({ ...base, containerId: stopped })).rejects.toThrow(FailedPreconditionError);
    await expect(h.client.exec({ ...base, containerId: '' })).rejects.toThrow('container_id is required');
  });

  it('Attach and PortForward: unknown, stopped, missing ids', async () => {
    const stopped = await h.runContainer(pod.podId, pod.config, 'stopped2', {}, false);
    await expect(h.client.attach({ containerId: stopped, stdout: true })).rejects.toThrow(
      FailedPreconditionError,
    );
    await expect(h.client.attach({ containerId: 'nope', stdout: true })).rejects.toThrow(NotFoundError);
    await expect(h.client.portForward({ podSandboxId: 'nope', port: [80] })).rejects.toThrow(NotFoundError);
    await expect(h.client.portForward({ podSandboxId: '' })).rejects.toThrow('pod_sandbox_id is required');
    const gone = await h.runPod();
    await h.client.stopPodSandbox({ podSandboxId: gone.podId });
    await expect(h.client.portForward({ podSandboxId: gone.podId, port: [80] })).rejects.toThrow(
      FailedPreconditionError,
    );
  });
});

describe('DockerShim.close()', () => {
  it('ends open sessions (their processes killed) and stops the streaming server', async () => {
    const other = new ShimHarness();
    try {
      await other.start();
      const { podId, config } = await other.runPod();
      const c = await other.runContainer(podId, config, 'sleeper');
      const { url } = await other.client.exec({ containerId: c, cmd: ['sleep', '1009'], stdout: true });
      const session = streamRemoteCommand(url, { stdout: new Sink() });
      await waitFor(
        async () => ((await processes(c)).includes('sleep 1009') ? true : undefined),
        'the command to run',
      );
      await other.stopShim();
      await session.catch(() => undefined); // settles; what it reports is the server's affair
      expect(await processes(c)).toEqual(['sleep 3600']);
      await expect(fetch(other.shim.streamingUrl)).rejects.toThrow();
    } finally {
      await other.cleanup();
    }
  });
});

describe('the CLI', () => {
  it('serves the streaming URLs on --streaming-address', async () => {
    const port = await freePort();
    const socket = join(h.dir, 'cli.sock');
    const cli = spawn(
      process.execPath,
      [
        fileURLToPath(new URL('../dist/cli.js', import.meta.url)),
        '--listen',
        `unix://${socket}`,
        '--docker-endpoint',
        ENGINE_ENDPOINT,
        '--pod-infra-container-image',
        h.images.pause,
        '--restrict-oom-score-adj',
        '--streaming-address',
        `127.0.0.1:${port}`,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    cli.stderr.on('data', (b: Buffer) => {
      stderr += b.toString();
    });
    const exited = new Promise((resolve) => cli.once('exit', resolve));
    try {
      await waitFor(async () => (stderr.includes('serving CRI') ? true : undefined), 'the CLI to serve');
      expect(stderr).toContain(`streaming on http://127.0.0.1:${port}/`);
      const client = await CriClient.connect(`unix://${socket}`);
      try {
        const { url } = await client.exec({ containerId: sleeper, cmd: ['true'], stdout: true });
        expect(url).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${port}/exec/`));
        const stdout = new Sink();
        const { url: echo } = await client.exec({
          containerId: sleeper,
          cmd: ['echo', 'via-cli'],
          stdout: true,
        });
        expect((await streamRemoteCommand(echo, { stdout })).exitCode).toBe(0);
        expect(stdout.text).toBe('via-cli\n');
      } finally {
        client.close();
      }
      cli.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      cli.kill('SIGKILL');
    }
  });
});
