// The streaming server with an in-memory runtime, driven by our client over SPDY and WebSocket.
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo, Server } from 'node:net';
import { PassThrough, Readable, Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  PortForwardClient,
  type PortForwardTransport,
  type RemoteCommandClientOptions,
  StreamingServer,
  streamRemoteCommand,
} from '../src/index.js';
import { SpdySession, type SpdyStream } from '../src/spdy/session.js';
import { CONTAINER, echoServer, MemoryRuntime, payload, readAll, SANDBOX } from './memory_runtime.js';

let runtime: MemoryRuntime;
let server: StreamingServer;
let echo: { port: number; server: Server };

beforeAll(async () => {
  runtime = new MemoryRuntime();
  server = await StreamingServer.start({ runtime });
  echo = await echoServer();
});

afterAll(async () => {
  await server?.close();
  echo?.server.close();
});

/** Collects what is written to it. */
function sink(): Writable & { text: () => string } {
  const chunks: Buffer[] = [];
  const w = new Writable({
    write(chunk, _enc, cb) {
      chunks.push(chunk);
      cb();
    },
  });
  return Object.assign(w, { text: () => Buffer.concat(chunks).toString('utf8') });
}

const transports: { name: string; client: Pick<RemoteCommandClientOptions, 'transport' | 'protocols'> }[] = [
  { name: 'SPDY v4', client: { transport: 'spdy' } },
  { name: 'SPDY v3', client: { transport: 'spdy', protocols: ['v3.channel.k8s.io'] } },
  { name: 'SPDY v2', client: { transport: 'spdy', protocols: ['v2.channel.k8s.io'] } },
  { name: 'WebSocket v5', client: { transport: 'websocket', protocols: ['v5.channel.k8s.io'] } },
  { name: 'WebSocket v4', client: { transport: 'websocket', protocols: ['v4.channel.k8s.io'] } },
  {
    name: 'WebSocket v4 base64',
    client: { transport: 'websocket', protocols: ['v4.base64.channel.k8s.io'] },
  },
];

describe.each(transports)('exec over $name', ({ client }) => {
  const v4 = client.transport === 'spdy' ? !client.protocols : true;
  const hasResize = client.protocols?.[0] !== 'v2.channel.k8s.io';
  const closesStdin = client.transport === 'spdy' || client.protocols?.[0] === 'v5.channel.k8s.io';

  it('separates stdout and stderr and reports the exit code', async () => {
    const url = server.getExec({
      containerId: CONTAINER,
      cmd: ['print', 'out\n', 'err\n', '3'],
      stdout: true,
      stderr: true,
    }).url;
    const stdout = sink();
    const stderr = sink();
    const run = streamRemoteCommand(url, { ...client, stdout, stderr });
    if (v4) {
      expect((await run).exitCode).toBe(3);
    } else {
      // Before v4 the error stream carries text only; client-go turns it into an error too.
      await expect(run).rejects.toThrow(/non-zero exit code: exit status 3/);
    }
    expect(stdout.text()).toBe('out\n');
    expect(stderr.text()).toBe('err\n');
  });

  it.runIf(closesStdin)('copies stdin until the client closes it', async () => {
    const url = server.getExec({ containerId: CONTAINER, cmd: ['echo'], stdin: true, stdout: true }).url;
    const stdout = sink();
    const result = await streamRemoteCommand(url, {
      ...client,
      stdin: Readable.from(['hello ', 'world\n']),
      stdout,
    });
    expect(result.exitCode).toBe(0);
    expect(stdout.text()).toBe('hello world\n');
  });

  // kubectl exec -it whose stdin closes at once (v5 close signal, SPDY FIN): containerd then closes
  // the output and reports the exit code when the process ends; the session waits for it.
  it.runIf(closesStdin && v4)(
    'reports the exit code when a TTY runtime closes the output as stdin ends',
    async () => {
      const url = server.getExec({
        containerId: CONTAINER,
        cmd: ['detach', '200', '5'],
        tty: true,
        stdin: true,
        stdout: true,
      }).url;
      const stdout = sink();
      const result = await streamRemoteCommand(url, {
        ...client,
        tty: true,
        stdin: Readable.from([]),
        stdout,
      });
      expect(result.exitCode).toBe(5);
      expect(stdout.text()).toBe('');
    },
  );

  // v2 has no resize stream: a TTY session there gets no sizes (the runtime sees no `resize`).
  it.runIf(hasResize)('passes terminal sizes of a TTY session to the runtime', async () => {
    const url = server.getExec({
      containerId: CONTAINER,
      cmd: ['sizes', '2'],
      tty: true,
      stdin: true,
      stdout: true,
    }).url;
    const stdout = sink();
    async function* sizes() {
      yield { width: 80, height: 24 };
      yield { width: 120, height: 40 };
    }
    const result = await streamRemoteCommand(url, {
      ...client,
      tty: true,
      stdin: new PassThrough(),
      stdout,
      resize: sizes(),
    });
    expect(result.exitCode).toBe(0);
    expect(stdout.text()).toBe('80x24\n120x40\n');
    const call = runtime.calls.at(-1)!;
    expect(call.tty).toBe(true);
    expect(call.streams).toEqual(['stdin', 'stdout', 'resize']);
  });

  it('reports a runtime NotFound as a Status naming the container', async () => {
    const url = server.getExec({ containerId: 'nope', cmd: ['print', 'x'], stdout: true }).url;
    const run = streamRemoteCommand(url, { ...client, stdout: sink() });
    await expect(run).rejects.toThrow(/error executing command in container: container "nope" not found/);
    if (v4) await expect(run).rejects.toMatchObject({ status: { reason: 'NotFound', code: 404 } });
  });

  // Without a stdin close signal (WebSocket v4) the command would never see the end.
  it.runIf(closesStdin)('streams 8 MiB of stdin and reads the digest back', async () => {
    const { data, sha256 } = payload(8 * 1024 * 1024);
    const url = server.getExec({ containerId: CONTAINER, cmd: ['sha256'], stdin: true, stdout: true }).url;
    const stdout = sink();
    const result = await streamRemoteCommand(url, { ...client, stdin: Readable.from([data]), stdout });
    expect(result.exitCode).toBe(0);
    expect(stdout.text()).toBe(`${sha256} ${data.length}\n`);
  });
});

describe('attach', () => {
  it.each(['spdy', 'websocket'] as const)(
    'streams to and from the main process over %s',
    async (transport) => {
      const url = server.getAttach({ containerId: CONTAINER, stdin: true, stdout: true, stderr: true }).url;
      const stdout = sink();
      const result = await streamRemoteCommand(url, {
        transport,
        stdin: Readable.from(['abc']),
        stdout,
        stderr: sink(),
      });
      expect(result.exitCode).toBe(0);
      expect(stdout.text()).toBe('attached\nABC');
    },
  );
});

const forwardTransports: PortForwardTransport[] = ['spdy', 'websocket'];

describe.each(forwardTransports)('port-forward over %s', (transport) => {
  it('carries 4 MiB to a TCP echo server and back, intact', async () => {
    const url = server.getPortForward({
      podSandboxId: SANDBOX,
      port: transport === 'websocket' ? [echo.port] : [],
    }).url;
    const pf = await PortForwardClient.connect(url, { transport, ports: [echo.port] });
    const { data, sha256 } = payload(4 * 1024 * 1024);
    const conn = await pf.open(echo.port);
    const hash = createHash('sha256');
    let received = 0;
    const done = new Promise<void>((resolve) => {
      conn.stream.on('data', (c: Buffer) => {
        hash.update(c);
        received += c.length;
        if (received === data.length) resolve();
      });
    });
    conn.stream.write(data);
    await done;
    expect(hash.digest('hex')).toBe(sha256);
    if (transport !== 'websocket') {
      // SPDY half-closes: the echo server sees the end, closes, and the streams finish cleanly.
      conn.stream.end();
      await readAll(conn.stream);
      expect(await conn.error).toBe('');
    }
    await pf.close();
  });

  it('reports a port nobody listens on through the error stream', async () => {
    const closed = await echoServer();
    closed.server.close();
    const url = server.getPortForward({ podSandboxId: SANDBOX, port: [closed.port] }).url;
    const pf = await PortForwardClient.connect(url, { transport, ports: [closed.port] });
    const conn = await pf.open(closed.port);
    conn.stream.resume();
    if (transport !== 'websocket') conn.stream.end();
    expect(await conn.error).toMatch(
      new RegExp(`error forwarding port ${closed.port} to pod sandbox ${SANDBOX}: connect ECONNREFUSED`),
    );
    await pf.close();
  });
});

describe('several forwarded connections on one SPDY session', () => {
  it('keeps them apart', async () => {
    const url = server.getPortForward({ podSandboxId: SANDBOX }).url;
    const pf = await PortForwardClient.connect(url);
    const conns = await Promise.all([1, 2, 3].map(() => pf.open(echo.port)));
    const replies = conns.map(async (c, i) => {
      c.stream.end(`connection ${i}`);
      return (await readAll(c.stream)).toString();
    });
    expect(await Promise.all(replies)).toEqual(['connection 0', 'connection 1', 'connection 2']);
    await pf.close();
  });
});

describe('the SPDY remotecommand client', () => {
  // A server that answers no stream until all of them are there: a client that waits for each
  // SYN_REPLY before opening the next stream would hang here.
  it('opens all its streams before waiting for the first reply', { timeout: 5_000 }, async () => {
    const http = createServer();
    http.on('upgrade', (_req, socket, head) => {
      socket.write(
        'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n',
      );
      const held: SpdyStream[] = [];
      new SpdySession(socket, {
        role: 'server',
        head,
        onStream: (stream) => {
          held.push(stream);
          if (held.length < 3) return;
          for (const s of held) {
            void s.reply();
            s.end();
          }
        },
      });
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = http.address() as AddressInfo;
      const result = await streamRemoteCommand(`http://127.0.0.1:${port}/exec/any`, {
        stdout: sink(),
        stderr: sink(),
      });
      expect(result).toEqual({ exitCode: 0, protocol: 'v4.channel.k8s.io' });
    } finally {
      http.close();
    }
  });
});
