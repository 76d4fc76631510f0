// What the streaming server does with requests it cannot serve, clients that misbehave and
// clients that vanish: clear errors, runtimes told to stop, and a server that serves on.
import { createServer, request } from 'node:http';
import { connect } from 'node:net';
import { PassThrough, Readable } from 'node:stream';
import { InvalidArgumentError, ResourceExhaustedError } from '@kh/cri-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { dialSpdy } from '../src/client/dial.js';
import {
  PortForwardClient,
  type RemoteCommandClientOptions,
  StreamingError,
  StreamingServer,
  streamRemoteCommand,
} from '../src/index.js';
import { CONTAINER, echoServer, MemoryRuntime, SANDBOX } from './memory_runtime.js';

let runtime: MemoryRuntime;
let server: StreamingServer;

beforeAll(async () => {
  runtime = new MemoryRuntime();
  server = await StreamingServer.start({ runtime });
});

afterAll(async () => {
  await server?.close();
});

const printUrl = () => server.getExec({ containerId: CONTAINER, cmd: ['print', 'ok\n'], stdout: true }).url;

/** A raw HTTP request; resolves with status, headers and the parsed JSON body. */
function raw(url: string, headers: Record<string, string | string[]>, method = 'POST') {
  return new Promise<{ status: number; headers: Record<string, unknown>; body: Record<string, unknown> }>(
    (resolve, reject) => {
      const req = request(url, { method, headers });
      req.on('response', async (res) => {
        let text = '';
        for await (const c of res) text += c;
        resolve({ status: res.statusCode!, headers: res.headers, body: JSON.parse(text) });
      });
      req.on('upgrade', () => reject(new Error('unexpected upgrade')));
      req.on('error', reject);
      req.end();
    },
  );
}

/** Polls `check` until it holds (bounded: fails after 5 s). */
async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 250 && !check(); i++) await new Promise((r) => setTimeout(r, 20));
  if (!check()) throw new Error(`timed out waiting for ${what}`);
}

describe('the CRI calls validate requests as the kubelet does', () => {
  it.each([
    [{ cmd: ['x'], stdout: true }, /missing required container_id/],
    [{ containerId: CONTAINER, stdout: true }, /missing required cmd/],
    [{ containerId: CONTAINER, cmd: ['x'] }, /one of stdin, stdout, or stderr must be set/],
    [
      { containerId: CONTAINER, cmd: ['x'], tty: true, stdout: true, stderr: true },
      /tty and stderr cannot both be true/,
    ],
  ])('Exec %j is INVALID_ARGUMENT', (req, message) => {
    expect(() => server.getExec(req)).toThrow(InvalidArgumentError);
    expect(() => server.getExec(req)).toThrow(message);
  });

  it('Attach and PortForward too', () => {
    expect(() => server.getAttach({ stdout: true })).toThrow(/missing required container_id/);
    expect(() => server.getAttach({ containerId: CONTAINER, tty: true, stderr: true })).toThrow(
      /tty and stderr/,
    );
    expect(() => server.getPortForward({})).toThrow(/missing required pod_sandbox_id/);
    expect(() => server.getPortForward({ podSandboxId: SANDBOX, port: [70000] })).toThrow(/port 70000/);
  });

  it('refuses more pending URLs than the limit with RESOURCE_EXHAUSTED', async () => {
    const small = await StreamingServer.start({ runtime, maxInFlight: 2 });
    small.getPortForward({ podSandboxId: SANDBOX });
    small.getPortForward({ podSandboxId: SANDBOX });
    expect(() => small.getPortForward({ podSandboxId: SANDBOX })).toThrow(ResourceExhaustedError);
    expect(() => small.getPortForward({ podSandboxId: SANDBOX })).toThrow(/maximum number of in-flight/);
    await small.close();
  });
});

describe('tokens', () => {
  it.each(['spdy', 'websocket'] as const)('an unknown token is a 404 Status over %s', async (transport) => {
    const url = new URL('/exec/not-a-token', server.baseUrl).href;
    const err = await streamRemoteCommand(url, { transport, stdout: new PassThrough() }).catch((e) => e);
    expect(err).toBeInstanceOf(StreamingError);
    expect(err).toMatchObject({ httpStatus: 404, status: { reason: 'NotFound', code: 404 } });
    expect(err.message).toMatch(/unknown, used or expired exec token "not-a-token"/);
  });

  it('a token works once', async () => {
    const url = printUrl();
    const first = await streamRemoteCommand(url, { stdout: new PassThrough() });
    expect(first.exitCode).toBe(0);
    await expect(streamRemoteCommand(url, { stdout: new PassThrough() })).rejects.toMatchObject({
      httpStatus: 404,
    });
  });

  it('a token for exec does not open attach', async () => {
    const url = printUrl().replace('/exec/', '/attach/');
    await expect(streamRemoteCommand(url, { stdout: new PassThrough() })).rejects.toMatchObject({
      httpStatus: 404,
    });
  });

  it('an expired token is a 404', async () => {
    const quick = await StreamingServer.start({ runtime, requestTtlMs: 1 });
    const { url } = quick.getExec({ containerId: CONTAINER, cmd: ['print'], stdout: true });
    await new Promise((r) => setTimeout(r, 20));
    await expect(streamRemoteCommand(url, { stdout: new PassThrough() })).rejects.toThrow(/expired/);
    await quick.close();
  });
});

describe('upgrades and protocols', () => {
  it('a plain request gets 400 naming both upgrades, and keeps its token', async () => {
    const url = printUrl();
    const r = await raw(url, {}, 'GET');
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ kind: 'Status', status: 'Failure', reason: 'BadRequest' });
    expect(r.body.message).toMatch(/Upgrade: SPDY\/3\.1.*Upgrade: websocket/);
    expect((await streamRemoteCommand(url, { stdout: new PassThrough() })).exitCode).toBe(0);
  });

  it('SPDY without X-Stream-Protocol-Version gets 400 listing the protocols', async () => {
    const r = await raw(printUrl(), { Connection: 'Upgrade', Upgrade: 'SPDY/3.1' });
    expect(r.status).toBe(400);
    expect(r.body.message).toMatch(/X-Stream-Protocol-Version is required.*v4\.channel\.k8s\.io/);
  });

  it('SPDY with only unknown protocols gets 403 and the accepted list', async () => {
    const r = await raw(printUrl(), {
      Connection: 'Upgrade',
      Upgrade: 'SPDY/3.1',
      'X-Stream-Protocol-Version': 'v9.channel.k8s.io',
    });
    expect(r.status).toBe(403);
    expect(r.headers['x-accepted-stream-protocol-versions']).toContain('v4.channel.k8s.io');
    expect(r.body.message).toMatch(/client supports \[v9\.channel\.k8s\.io\], server accepts \[v4/);
  });

  it('WebSocket with only unknown subprotocols gets 403 and the supported list', async () => {
    const err = await streamRemoteCommand(printUrl(), {
      transport: 'websocket',
      protocols: ['v9.channel.k8s.io'],
      stdout: new PassThrough(),
    }).catch((e) => e);
    expect(err).toMatchObject({ httpStatus: 403 });
    expect(err.message).toMatch(
      /\[v9\.channel\.k8s\.io\] are not supported; supported: \[v5\.channel\.k8s\.io/,
    );
  });

  it('port-forward over WebSocket needs ports: from the request or the query', async () => {
    const { url } = server.getPortForward({ podSandboxId: SANDBOX });
    const err = await PortForwardClient.connect(url, { transport: 'websocket' }).catch((e) => e);
    expect(err).toMatchObject({ httpStatus: 400 });
    expect(err.message).toMatch(/query parameter "port" is required/);
  });

  it('a POST with another method is 405', async () => {
    const r = await raw(printUrl(), { Connection: 'Upgrade', Upgrade: 'SPDY/3.1' }, 'PUT');
    expect(r.status).toBe(405);
  });
});

describe('misbehaving clients', () => {
  it('garbage after the SPDY upgrade ends that connection only (GOAWAY), the runtime is not called', async () => {
    const calls = runtime.calls.length;
    const url = new URL(printUrl());
    const socket = connect(Number(url.port), url.hostname);
    socket.write(
      `POST ${url.pathname} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n` +
        'X-Stream-Protocol-Version: v4.channel.k8s.io\r\nContent-Length: 0\r\n\r\n',
    );
    // A control frame of SPDY version 2: the session must refuse it.
    socket.write(Buffer.from('8002000600000004000000aa', 'hex'));
    const answer = await new Promise<Buffer>((resolve) => {
      const chunks: Buffer[] = [];
      socket.on('data', (c) => chunks.push(c));
      socket.on('close', () => resolve(Buffer.concat(chunks)));
    });
    const text = answer.toString('latin1');
    expect(text).toMatch(/^HTTP\/1\.1 101 Switching Protocols/);
    const frames = answer.subarray(text.indexOf('\r\n\r\n') + 4);
    // GOAWAY (type 7), status PROTOCOL_ERROR (1).
    expect(frames.subarray(0, 4).toString('hex')).toBe('80030007');
    expect(frames.readUInt32BE(12)).toBe(1);
    expect(runtime.calls.length).toBe(calls);
    expect((await streamRemoteCommand(printUrl(), { stdout: new PassThrough() })).exitCode).toBe(0);
  });

  it('a SPDY stream of a type the session did not ask for is refused; the session goes on', async () => {
    const { url } = server.getExec({ containerId: CONTAINER, cmd: ['print', 'fine\n'], stdout: true });
    const { session } = await dialSpdy(url, ['v4.channel.k8s.io']);
    await expect(session.openStream({ streamtype: ['resize'] })).rejects.toThrow(/not accepted/);
    const error = await session.openStream({ streamtype: ['error'] });
    const stdout = await session.openStream({ streamtype: ['stdout'] });
    let out = '';
    stdout.on('data', (c) => {
      out += c;
    });
    let status = '';
    error.on('data', (c) => {
      status += c;
    });
    await new Promise((r) => error.once('end', r));
    expect(out).toBe('fine\n');
    expect(JSON.parse(status)).toMatchObject({ status: 'Success' });
    await session.end();
  });

  it('resize messages on a WebSocket session without a TTY are ignored', async () => {
    const { url } = server.getExec({ containerId: CONTAINER, cmd: ['echo'], stdin: true, stdout: true });
    const ws = new WebSocket(url.replace('http:', 'ws:'), ['v5.channel.k8s.io']);
    const received: Buffer[] = [];
    ws.on('message', (m: Buffer) => received.push(m));
    await new Promise((r) => ws.once('open', r));
    ws.send(Buffer.concat([Buffer.of(4), Buffer.from('{"Width":10,"Height":5}')]));
    ws.send(Buffer.concat([Buffer.of(4), Buffer.from('not json at all')]));
    ws.send(Buffer.concat([Buffer.of(0), Buffer.from('still here')]));
    ws.send(Buffer.of(255, 0));
    await new Promise((r) => ws.once('close', r));
    const byChannel = (ch: number) =>
      Buffer.concat(received.filter((m) => m[0] === ch).map((m) => m.subarray(1))).toString();
    expect(byChannel(1)).toBe('still here');
    expect(JSON.parse(byChannel(3))).toMatchObject({ status: 'Success' });
    expect(runtime.calls.at(-1)).toMatchObject({ tty: false, streams: ['stdin', 'stdout'] });
  });

  it('a malformed v5 close signal closes the socket with a protocol error', async () => {
    const { url } = server.getExec({ containerId: CONTAINER, cmd: ['echo'], stdin: true, stdout: true });
    const ws = new WebSocket(url.replace('http:', 'ws:'), ['v5.channel.k8s.io']);
    ws.on('message', () => {});
    await new Promise((r) => ws.once('open', r));
    ws.send(Buffer.of(255, 0, 0));
    const [code] = await new Promise<[number]>((r) => ws.once('close', (c) => r([c])));
    expect(code).toBe(1002);
  });

  it('stdin closed before any data: the command sees the end at once', async () => {
    for (const transport of ['spdy', 'websocket'] as const) {
      const { url } = server.getExec({ containerId: CONTAINER, cmd: ['echo'], stdin: true, stdout: true });
      const stdout = new PassThrough();
      const result = await streamRemoteCommand(url, { transport, stdin: Readable.from([]), stdout });
      expect(result.exitCode).toBe(0);
      expect(stdout.read()).toBe(null);
    }
  });
});

describe('clients that vanish', () => {
  it.each<RemoteCommandClientOptions['transport']>(['spdy', 'websocket'])(
    'aborts the runtime call of an exec whose %s client went away',
    async (transport) => {
      const before = runtime.calls.length;
      const { url } = server.getExec({ containerId: CONTAINER, cmd: ['wait'], stdin: true, stdout: true });
      const abort = new AbortController();
      const run = streamRemoteCommand(url, {
        transport,
        stdin: new PassThrough(),
        stdout: new PassThrough(),
        signal: abort.signal,
      });
      await until(() => runtime.calls.length > before, 'the exec to start');
      const call = runtime.calls.at(-1)!;
      expect(call.aborted).toBeUndefined();
      abort.abort();
      await expect(run).rejects.toThrow();
      await until(() => call.aborted === true, "the runtime's signal");
    },
  );

  it('aborts a port-forward whose client went away', async () => {
    const echo = await echoServer();
    const { url } = server.getPortForward({ podSandboxId: SANDBOX });
    const { session } = await dialSpdy(url, ['portforward.k8s.io']);
    const headers = { port: [String(echo.port)], requestid: ['0'] };
    await session.openStream({ ...headers, streamtype: ['error'] });
    const data = await session.openStream({ ...headers, streamtype: ['data'] });
    data.write('ping');
    await new Promise((r) => data.once('data', r));
    const call = runtime.calls.filter((c) => c.kind === 'portForward').at(-1)!;
    expect(call.aborted).toBeUndefined();
    session.destroy();
    await until(() => call.aborted === true, "the port-forward's signal");
    echo.server.close();
  });

  it('closing the server ends open sessions and tells their runtimes', async () => {
    const own = await StreamingServer.start({ runtime });
    const before = runtime.calls.length;
    const { url } = own.getExec({ containerId: CONTAINER, cmd: ['wait'], stdout: true });
    const run = streamRemoteCommand(url, { stdout: new PassThrough() }).catch((e) => e);
    await until(() => runtime.calls.length > before, 'the exec to start');
    const call = runtime.calls.at(-1)!;
    await own.close();
    expect(call.aborted).toBe(true);
    await run;
  });
});

describe('timeouts', () => {
  it('closes a SPDY connection whose client does not open its streams in time', async () => {
    const strict = await StreamingServer.start({ runtime, streamCreationTimeoutMs: 200 });
    const calls = runtime.calls.length;
    const { url } = strict.getExec({ containerId: CONTAINER, cmd: ['print'], stdout: true });
    const { session } = await dialSpdy(url, ['v4.channel.k8s.io']);
    await session.openStream({ streamtype: ['error'] }); // stdout never comes
    await session.closed;
    expect(runtime.calls.length).toBe(calls);
    await strict.close();
  });

  it.each(['spdy', 'websocket'] as const)(
    'ends an idle %s session and aborts its runtime call',
    async (transport) => {
      const idle = await StreamingServer.start({ runtime, streamIdleTimeoutMs: 200 });
      const before = runtime.calls.length;
      const { url } = idle.getExec({ containerId: CONTAINER, cmd: ['wait'], stdout: true });
      const run = streamRemoteCommand(url, { transport, stdout: new PassThrough() }).catch((e) => e);
      await until(() => runtime.calls.length > before, 'the exec to start');
      const call = runtime.calls.at(-1)!;
      await until(() => call.aborted === true, 'the idle timeout');
      await run;
      await idle.close();
    },
  );
});

describe('mounted on another HTTP server', () => {
  it('serves its URLs under the given base and leaves other paths alone', async () => {
    const http = createServer((_req, res) => res.end('theirs'));
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
    const port = (http.address() as { port: number }).port;
    const mounted = StreamingServer.mount({ runtime, baseUrl: `http://127.0.0.1:${port}/cri/` });
    http.on('upgrade', (req, socket, head) => {
      if (!mounted.handleUpgrade(req, socket, head)) socket.destroy();
    });
    const { url } = mounted.getExec({ containerId: CONTAINER, cmd: ['print', 'mounted\n'], stdout: true });
    expect(url).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${port}/cri/exec/`));
    const stdout = new PassThrough();
    expect((await streamRemoteCommand(url, { stdout })).exitCode).toBe(0);
    expect(String(stdout.read())).toBe('mounted\n');
    await mounted.close();
    await new Promise((r) => http.close(r));
  });
});
