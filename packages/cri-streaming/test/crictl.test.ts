// The real Go crictl v1.26 (client-go's SPDY executor and port-forwarder, moby/spdystream)
// against the streaming server: a tiny CRI server answers Exec/Attach/PortForward with its URLs.
// Needs the cri-tools build (`bash scripts/cri-tools.sh`).
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer as createHttpServer, get, type Server as HttpServer } from 'node:http';
import { connect, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type CriServer, serveCri } from '@kh/cri-api';
import { criTools } from '@kh/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StreamingServer } from '../src/index.js';
import { CONTAINER, echoServer, MemoryRuntime, payload, SANDBOX } from './memory_runtime.js';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

let crictlBin: string;
let dir: string;
let cri: CriServer;
let streaming: StreamingServer;
let runtime: MemoryRuntime;
let echo: { port: number; server: Server };
let web: HttpServer;
let webPort: number;

beforeAll(async () => {
  // Missing binaries fail every test with criTools()'s set-up message; nothing is skipped.
  crictlBin = (await criTools()).crictl;
  dir = await mkdtemp(path.join(tmpdir(), 'kh-stream-'));
  runtime = new MemoryRuntime();
  streaming = await StreamingServer.start({ runtime });
  cri = await serveCri(
    {
      name: 'streaming-test',
      runtime: {
        version: () => ({
          version: '0.1.0',
          runtimeName: 'streaming-test',
          runtimeVersion: '0',
          runtimeApiVersion: 'v1',
        }),
        exec: (req) => streaming.getExec(req),
        attach: (req) => streaming.getAttach(req),
        portForward: (req) => streaming.getPortForward(req),
      },
    },
    { socketPath: path.join(dir, 'cri.sock') },
  );
  echo = await echoServer();
  web = createHttpServer((req, res) => res.end(`hello from the pod, you asked for ${req.url}\n`));
  await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
  webPort = (web.address() as { port: number }).port;
});

afterAll(async () => {
  await cri?.close();
  await streaming?.close();
  echo?.server.close();
  web?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function crictlArgs(args: string[]): string[] {
  return ['--runtime-endpoint', cri.endpoint, '--image-endpoint', cri.endpoint, '--timeout', '10s', ...args];
}

/** Runs a command with `input` on its stdin; resolves with its exit code and output. */
function run(cmd: string, args: string[], input = ''): Promise<Run> {
  const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  return finished(child, input);
}

function finished(child: ChildProcess, input: string | Buffer = ''): Promise<Run> {
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c) => {
    stdout += c;
  });
  child.stderr!.on('data', (c) => {
    stderr += c;
  });
  child.stdin!.end(input);
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/** crictl on a pseudo-terminal of `cols` x `rows` (crictl -t insists on one), via util-linux script. */
function crictlOnTerminal(args: string[], input: string, cols = 91, rows = 31): Promise<Run> {
  const quoted = [crictlBin, ...crictlArgs(args)].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
  return run('script', ['-qec', `stty cols ${cols} rows ${rows}; exec ${quoted}`, '/dev/null'], input);
}

describe('crictl exec', () => {
  it('gets stdout and stderr apart and reports the exit code', async () => {
    const r = await run(
      crictlBin,
      crictlArgs(['exec', CONTAINER, 'print', 'to stdout\n', 'to stderr\n', '3']),
    );
    expect(r.stdout).toBe('to stdout\n');
    expect(r.stderr).toContain('to stderr\n');
    // crictl v1.26 exits 1 on any failure; the code itself travels in the v4 Status.
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('command terminated with exit code 3');
  });

  it('succeeds with exit code 0', async () => {
    const r = await run(crictlBin, crictlArgs(['exec', CONTAINER, 'print', 'fine\n', '', '0']));
    expect(r).toMatchObject({ code: 0, stdout: 'fine\n' });
  });

  it('-i copies piped stdin until it ends', async () => {
    const text = 'line one\nline two\n'.repeat(1000);
    const r = await run(crictlBin, crictlArgs(['exec', '-i', CONTAINER, 'echo']), text);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(text);
    expect(runtime.calls.at(-1)).toMatchObject({
      kind: 'exec',
      tty: false,
      streams: ['stdin', 'stdout', 'stderr'],
    });
  });

  it('-i carries 16 MiB of stdin (no flow-control stall)', async () => {
    const { data, sha256 } = payload(16 * 1024 * 1024);
    const r = await finished(spawn(crictlBin, crictlArgs(['exec', '-i', CONTAINER, 'sha256'])), data);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`${sha256} ${data.length}\n`);
  });

  it('-it runs on a terminal: the runtime gets a TTY and its size, output comes back', async () => {
    const sizes = await crictlOnTerminal(['exec', '-it', CONTAINER, 'sizes', '1'], '');
    expect(sizes.code).toBe(0);
    expect(sizes.stdout).toContain('91x31');
    expect(runtime.calls.at(-1)).toMatchObject({ tty: true, streams: ['stdin', 'stdout', 'resize'] });

    const echoed = await crictlOnTerminal(['exec', '-it', CONTAINER, 'echo'], 'typed on a terminal\x04');
    expect(echoed.code).toBe(0);
    expect(echoed.stdout).toContain('typed on a terminal');
  });

  it('names a missing container in the error', async () => {
    const r = await run(crictlBin, crictlArgs(['exec', 'no-such-container', 'print', 'x']));
    expect(r.code).toBe(1);
    // crictl logs through logrus, which escapes the quotes.
    expect(r.stderr).toMatch(
      /error executing command in container: container \\?"no-such-container\\?" not found/,
    );
  });

  it('is refused by the CRI call itself when the request is invalid', async () => {
    const r = await run(crictlBin, crictlArgs(['exec', CONTAINER, '']));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('code = InvalidArgument desc = missing required cmd');
  });
});

describe('crictl attach', () => {
  it('streams stdin to the main process and its output back', async () => {
    const r = await run(crictlBin, crictlArgs(['attach', '-i', CONTAINER]), 'shout this');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('attached\nSHOUT THIS');
    expect(runtime.calls.at(-1)).toMatchObject({
      kind: 'attach',
      tty: false,
      streams: ['stdin', 'stdout', 'stderr'],
    });
  });
});

describe('crictl port-forward', () => {
  /** Starts crictl port-forward to `remote`; resolves with the local port once it listens. */
  async function forward(remote: number): Promise<{ local: number; stop: () => Promise<Run> }> {
    const child = spawn(crictlBin, crictlArgs(['port-forward', SANDBOX, `0:${remote}`]));
    const done = finished(child);
    const local = await new Promise<number>((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (c) => {
        out += c;
        const m = /Forwarding from 127\.0\.0\.1:(\d+) ->/.exec(out);
        if (m) resolve(Number(m[1]));
      });
      child.on('close', () => reject(new Error(`crictl port-forward exited: ${out}`)));
    });
    return {
      local,
      stop: () => {
        child.kill('SIGINT');
        return done;
      },
    };
  }

  it('serves an HTTP fetch through the forwarded port', async () => {
    const pf = await forward(webPort);
    const body = await new Promise<string>((resolve, reject) => {
      get(`http://127.0.0.1:${pf.local}/through-crictl`, (res) => {
        let text = '';
        res.on('data', (c) => {
          text += c;
        });
        res.on('end', () => resolve(text));
      }).on('error', reject);
    });
    expect(body).toBe('hello from the pod, you asked for /through-crictl\n');
    const r = await pf.stop();
    expect(r.stdout).toContain('Handling connection for');
    expect(runtime.calls.filter((c) => c.kind === 'portForward').at(-1)).toMatchObject({
      id: SANDBOX,
      args: webPort,
    });
  });

  it('carries 100 MiB both ways without stalling, intact', async () => {
    const pf = await forward(echo.port);
    const { data, sha256 } = payload(100 * 1024 * 1024);
    const socket = connect(pf.local, '127.0.0.1');
    const hash = createHash('sha256');
    let received = 0;
    const back = new Promise<void>((resolve) => {
      socket.on('data', (c: Buffer) => {
        hash.update(c);
        received += c.length;
        if (received === data.length) resolve();
      });
    });
    socket.write(data);
    await back;
    socket.end();
    expect(hash.digest('hex')).toBe(sha256);
    await pf.stop();
  }, 120_000);

  it('reports a port nobody listens on', async () => {
    const closed = await echoServer();
    closed.server.close();
    const pf = await forward(closed.port);
    const socket = connect(pf.local, '127.0.0.1');
    socket.resume();
    await new Promise((resolve) => socket.on('close', resolve));
    const r = await pf.stop();
    expect(r.stderr).toContain(
      `error forwarding port ${closed.port} to pod sandbox ${SANDBOX}: connect ECONNREFUSED`,
    );
  });
});
