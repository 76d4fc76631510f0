// A stand-in kubelet for the proxy tests: HTTPS that requires a client certificate from the
// apiserver's CA, serving /exec, /attach, /portForward with @kh/cri-streaming's protocol handlers
// over local processes and loopback ports, plus /containerLogs and /stats/summary.
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import {
  type RemoteCommandHandler,
  servePortForward,
  serveRemoteCommand,
  upgradeKind,
} from '@kh/cri-streaming';
import { generateTls } from '../src/index.js';

export interface TestKubelet {
  port: number;
  /** Every request: its URL, the client certificate's subject CN, and the upgrade it asked for. */
  requests: {
    url: string;
    cn: string | undefined;
    upgrade?: 'spdy' | 'websocket';
    /** The client resumed an earlier TLS session instead of a full handshake. */
    resumed?: boolean;
  }[];
  /** Upgraded connections still open. */
  openStreams(): number;
  /** Drops every upgraded connection, as a kubelet that dies mid-stream would. */
  dropStreams(): void;
  close(): Promise<void>;
}

const SESSION = { idleTimeoutMs: 60_000, creationTimeoutMs: 10_000 };

/** Runs the exec'd command as a local process; a real kubelet would run it in the container. */
const execHandler =
  (command: string[]): RemoteCommandHandler =>
  (io, signal) =>
    new Promise((resolve, reject) => {
      const child = spawn(command[0]!, command.slice(1), { stdio: 'pipe', signal });
      // A command may exit without reading its input: EPIPE on its stdin is not the session's failure.
      child.stdin.on('error', () => {});
      if (io.stdin) io.stdin.pipe(child.stdin);
      else child.stdin.end();
      if (io.stdout) child.stdout.pipe(io.stdout, { end: false });
      child.stderr.pipe(io.stderr ?? io.stdout!, { end: false });
      child.on('error', reject);
      child.on('close', (code) => resolve({ exitCode: code ?? 137 }));
    });

/** The container's main process for attach: echoes stdin upper-cased until it closes. */
const attachHandler: RemoteCommandHandler = async (io) => {
  io.stdout?.write('attached\n');
  for await (const chunk of io.stdin ?? []) io.stdout?.write(String(chunk).toUpperCase());
  return undefined;
};

/** Forwards to the loopback port of the same number (the "pod" shares the host's network). */
async function forward(port: number, stream: Duplex): Promise<void> {
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  stream.pipe(socket);
  socket.pipe(stream);
  await new Promise<void>((resolve) => socket.once('close', () => resolve()));
}

/** For fuzzing: exec and attach only echo what they were asked, port-forward dials nothing. */
const echoExec =
  (command: string[]): RemoteCommandHandler =>
  async (io) => {
    io.stdout?.end(`${JSON.stringify(command).slice(0, 200)}\n`);
    return { exitCode: 0 };
  };
const echoForward = async (_port: number, stream: Duplex) => {
  stream.pipe(stream);
  await new Promise<void>((resolve) => stream.once('close', () => resolve()));
};

export async function startTestKubelet(
  clientCaPem: string,
  opts: { safe?: boolean } = {},
): Promise<TestKubelet> {
  const run = opts.safe ? echoExec : execHandler;
  const serving = await generateTls();
  const requests: TestKubelet['requests'] = [];
  const cn = (s: TLSSocket) => s.getPeerCertificate().subject?.CN as string | undefined;
  const server: Server = createServer(
    {
      cert: serving.certPem,
      key: serving.keyPem,
      ca: clientCaPem,
      requestCert: true,
      rejectUnauthorized: true,
    },
    (req, res) => {
      requests.push({ url: req.url ?? '', cn: cn(req.socket as TLSSocket) });
      const path = new URL(req.url ?? '/', 'https://x').pathname;
      if (path.startsWith('/containerLogs/')) {
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        res.end(`logs of ${path.slice('/containerLogs/'.length)}\n`);
      } else if (path === '/stats/summary') {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ node: { nodeName: 'kubelet-node', cpu: { usageNanoCores: 1 } }, pods: [] }));
      } else {
        res.writeHead(404, { 'Content-Type': 'text/plain' });
        res.end('404 page not found\n');
      }
    },
  );
  const upgraded = new Set<Duplex>();
  server.on('upgrade', (req, socket: Duplex, head: Buffer) => {
    upgraded.add(socket);
    socket.once('close', () => upgraded.delete(socket));
    const kind = upgradeKind(req);
    requests.push({
      url: req.url ?? '',
      cn: cn(req.socket as TLSSocket),
      resumed: (req.socket as TLSSocket).isSessionReused(),
      ...(kind === 'spdy' || kind === 'websocket' ? { upgrade: kind } : {}),
    });
    const url = new URL(req.url ?? '/', 'https://x');
    const [endpoint] = url.pathname.split('/').filter((s) => s !== '');
    // containerd's streaming server refuses a v5 WebSocket exec with 403, so kubelets in front of
    // it serve exec and attach over SPDY only; this one does the same.
    if (kind === 'websocket' && (endpoint === 'exec' || endpoint === 'attach')) {
      socket.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
      return;
    }
    const q = url.searchParams;
    const streams = {
      stdin: q.get('input') === '1',
      stdout: q.get('output') === '1',
      stderr: q.get('error') === '1',
      tty: q.get('tty') === '1',
    };
    const upgrade = { req, socket, head };
    if (endpoint === 'exec') {
      void serveRemoteCommand(upgrade, streams, run(q.getAll('command')), {
        ...SESSION,
        failurePrefix: 'error executing command in container',
      });
    } else if (endpoint === 'attach') {
      void serveRemoteCommand(upgrade, streams, attachHandler, {
        ...SESSION,
        failurePrefix: 'error attaching',
      });
    } else if (endpoint === 'portForward') {
      void servePortForward(upgrade, opts.safe ? echoForward : forward, { ...SESSION, target: url.pathname });
    } else {
      // What the agent answers an upgrade of a path it does not serve.
      socket.end(
        'HTTP/1.1 404 Not Found\r\nContent-Length: 19\r\nConnection: close\r\n\r\n404 page not found\n',
      );
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    port: (server.address() as AddressInfo).port,
    requests,
    openStreams: () => upgraded.size,
    dropStreams() {
      for (const s of upgraded) s.destroy();
    },
    async close() {
      server.closeAllConnections();
      for (const s of upgraded) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
