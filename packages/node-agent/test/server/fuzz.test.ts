// The agent's kubelet server (10250, TLS) and healthz server (10248) under hostile HTTP (issue 20):
// malformed methods, paths, query strings, upgrade headers, huge headers and bodies, traversal,
// unknown pods, with and without a token. KH_FUZZ_RUNS requests (default 300, seed fixed), sent
// raw over TCP so that nothing a client library would refuse is left out. Each must get an HTTP
// status below 500; afterwards healthz still answers, the agent has not exited and its heap is
// back near its baseline. The agent runs whole, in this process, on the fake runtime and the fake
// apiserver, so a thrown handler would show as an unhandled error here.
import { mkdtempSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { FakeRuntime } from '@kh/cri-api';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentCommand, loopbackFlags, type RunningAgent, startAgent } from '../helpers/agent.js';
import { startTestApiServer, type TestApiServer } from '../helpers/apiserver.js';
import { kubectl, waitForNodeReady } from '../helpers/kubectl.js';
import { freePort, httpGet } from '../helpers/net.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heapMiB = () => {
  gc();
  return process.memoryUsage().heapUsed / 2 ** 20;
};
const RUNS = Number(process.env.KH_FUZZ_RUNS ?? 300);
const SEED = 2020;
const TOKEN = 't'; // the test apiserver's admin token, reviewed through TokenReview

const dir = mkdtempSync(join(tmpdir(), 'kh-agent-fuzz-'));
let fake: FakeRuntime;
let apiserver: TestApiServer;
let agent: RunningAgent;
let kubeletPort: number;
let healthzPort: number;

beforeAll(async () => {
  fake = await FakeRuntime.start({ socketPath: join(dir, 'cri.sock') });
  fake.addImage('docker.io/library/busybox:latest', 1_000_000);
  apiserver = await startTestApiServer();
  healthzPort = await freePort();
  const flags = await loopbackFlags('fuzz-node', healthzPort);
  kubeletPort = Number(flags.find((f) => f.startsWith('--port='))?.slice('--port='.length));
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\npodLogsDir: ${join(dir, 'logs')}\n`,
  );
  agent = startAgent([
    `--kubeconfig=${apiserver.kubeconfig}`,
    `--container-runtime-endpoint=${fake.endpoint}`,
    `--root-dir=${join(dir, 'root')}`,
    `--config=${config}`,
    ...flags,
  ]);
  expect(await waitForNodeReady(apiserver.kubeconfig, 'fuzz-node')).toContain('condition met');
  // A pod that runs, so that hostile query strings reach its logs, its containers and the runtime.
  const manifest = join(dir, 'web.json');
  writeFileSync(
    manifest,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web', namespace: 'default' },
      spec: {
        nodeName: 'fuzz-node',
        containers: [{ name: 'main', image: 'busybox', command: ['sleep', '3600'] }],
      },
    }),
  );
  await kubectl(apiserver.kubeconfig, 'create', '-f', manifest);
  await kubectl(apiserver.kubeconfig, 'wait', '--for=condition=Ready', 'pod/web', '--timeout=60s');
}, 120_000);

afterAll(async () => {
  // SIGTERM ends the agent at once, hostile clients or not: refused upgrades used to leave
  // paused sockets that held the server's close until the test timed out.
  const started = performance.now();
  expect(await agent?.stop()).toBe(0);
  expect(performance.now() - started).toBeLessThan(5_000);
  await apiserver?.stop();
  await fake?.stop();
}, 60_000);

interface RawRequest {
  server: 'kubelet' | 'healthz';
  head: string;
  body: Buffer;
}

const PATHS = [
  '/',
  '/pods',
  '/runningpods/',
  '/stats/summary',
  '/metrics',
  '/metrics/probes',
  '/configz',
  '/healthz',
  '/healthz/ping',
  '/healthz/syncloop',
  '/containerLogs',
  '/exec',
  '/attach',
  '/portForward',
  '/run',
  '/logs/',
  '/spec/',
  '/debug/pprof/',
];

function requests(): fc.Arbitrary<RawRequest> {
  const segment = fc.oneof(
    fc.constantFrom('default', 'kube-system', 'no-such-pod', 'main', '..', '%2e%2e', '%2F', '%00', '.', ''),
    fc.constantFrom('../../etc/passwd', '..%2f..%2fetc', 'a'.repeat(300), '\u00e9', '%zz', '~', '*'),
    fc.stringMatching(/^[a-z0-9-]{1,20}$/),
  );
  const path = fc
    .tuple(fc.constantFrom(...PATHS), fc.array(segment, { maxLength: 4 }))
    .map(([p, segs]) => [p.replace(/\/$/, ''), ...segs].join('/') || '/');
  const target = fc.oneof(
    { weight: 8, arbitrary: path },
    fc.constantFrom('*', 'http://[', 'http://x/pods', '//pods', '/pods?', '/%', 'pods', '/\u0000'),
    fc.constant(`/${'a'.repeat(20_000)}`),
  );
  const query = fc.oneof(
    fc.constant(''),
    fc.constantFrom(
      '?command=ls&stdout=1&stderr=1',
      '?tailLines=-1',
      '?tailLines=abc',
      '?sinceSeconds=-5',
      '?sinceTime=yesterday',
      '?limitBytes=99999999999999999999',
      '?follow=maybe&previous=1',
      '?timestamps=%zz',
      '?port=0',
      '?port=99999&port=-1',
      '?verbose',
      '?exclude=ping',
      '?container=',
      '?a=%00',
    ),
    fc.string({ maxLength: 40 }).map((s) => `?${encodeURIComponent(s)}=${encodeURIComponent(s)}`),
  );
  const method = fc.constantFrom(
    'GET',
    'GET',
    'HEAD',
    'POST',
    'PUT',
    'DELETE',
    'PATCH',
    'OPTIONS',
    'TRACE',
    'FOO',
    'get',
  );
  const auth = fc.constantFrom(
    [`Authorization: Bearer ${TOKEN}`],
    [`Authorization: Bearer ${TOKEN}`],
    [],
    ['Authorization: Bearer '],
    ['Authorization: Bearer not-a-token'],
    ['Authorization: Basic dXNlcjpwYXNz'],
    [`Authorization: Bearer ${'x'.repeat(4096)}`],
  );
  const extra = fc.constantFrom(
    [] as string[],
    ['Connection: Upgrade', 'Upgrade: SPDY/3.1', 'X-Stream-Protocol-Version: v4.channel.k8s.io'],
    [
      'Connection: Upgrade',
      'Upgrade: websocket',
      'Sec-WebSocket-Version: 13',
      'Sec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA==',
    ],
    ['Connection: Upgrade', 'Upgrade: h2c'],
    ['Connection: Upgrade', 'Upgrade: \u0001garbage'],
    [`X-Huge: ${'h'.repeat(32 * 1024)}`],
    ['Content-Type: application/json', 'Accept: */*;q=nan'],
    ['Transfer-Encoding: chunked'],
    ['Content-Length: -1'],
    ['Content-Length: 5', 'Content-Length: 6'],
  );
  const body = fc.oneof(
    { weight: 6, arbitrary: fc.constant(Buffer.alloc(0)) },
    { weight: 3, arbitrary: fc.uint8Array({ maxLength: 1024 }).map((b) => Buffer.from(b)) },
    { weight: 1, arbitrary: fc.constant(Buffer.alloc(2 * 2 ** 20, 0x7b)) },
  );
  return fc
    .record({
      server: fc.constantFrom('kubelet' as const, 'kubelet' as const, 'healthz' as const),
      method,
      target,
      query,
      auth,
      extra,
      body,
    })
    .map((r) => {
      const framing = r.extra.some((h) => /^(Content-Length|Transfer-Encoding)/.test(h))
        ? []
        : [`Content-Length: ${r.body.length}`];
      const headers = ['Host: 127.0.0.1', ...r.auth, ...r.extra, ...framing, 'Connection: close'];
      // An upgrade asks to keep the connection: drop "Connection: close" so the Upgrade token counts.
      const lines = r.extra.some((h) => h.startsWith('Upgrade:')) ? headers.slice(0, -1) : headers;
      return {
        server: r.server,
        head: `${r.method} ${r.target}${r.query} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`,
        body: r.body,
      };
    });
}

const QUERY_RUNS = Number(process.env.KH_FUZZ_RUNS ?? 1000);

/** Requests for the running pod `web` (container `main`) whose query strings are hostile. */
function hostileQueries(): fc.Arbitrary<RawRequest> {
  const value = fc.oneof(
    fc.constantFrom(
      '1',
      'true',
      'false',
      '0',
      '',
      '-1',
      '%zz',
      '%00',
      'maybe',
      '99999999999999999999',
      'NaN',
      '1e400',
    ),
    fc.constantFrom('2026-01-01T00:00:00Z', 'yesterday', '-5', '3.5', 'a'.repeat(2000), 'main', 'nope', '..'),
    fc.string({ maxLength: 30 }).map(encodeURIComponent),
  );
  const key = fc.oneof(
    fc.constantFrom(
      'command',
      'cmd',
      'container',
      'input',
      'output',
      'error',
      'tty',
      'stdin',
      'stdout',
      'stderr',
      'follow',
      'previous',
      'timestamps',
      'tailLines',
      'limitBytes',
      'sinceSeconds',
      'sinceTime',
      'port',
      'ports',
      'namespace',
      'only_cpu_and_memory',
      'verbose',
      'exclude',
    ),
    fc.string({ maxLength: 12 }).map(encodeURIComponent),
  );
  const query = fc
    .array(fc.tuple(key, value), { minLength: 1, maxLength: 8 })
    .map((kv) => `?${kv.map(([k, v]) => `${k}=${v}`).join('&')}`);
  const path = fc.constantFrom(
    '/containerLogs/default/web/main',
    '/containerLogs/default/web/main',
    '/exec/default/web/main',
    '/attach/default/web/main',
    '/portForward/default/web',
    '/run/default/web/main',
    '/stats/summary',
    '/pods',
    '/runningpods/',
    '/debug/startup',
    '/healthz',
    '/metrics',
    '/configz',
  );
  const extra = fc.constantFrom(
    [] as string[],
    [] as string[],
    ['Connection: Upgrade', 'Upgrade: SPDY/3.1', 'X-Stream-Protocol-Version: v4.channel.k8s.io'],
    [
      'Connection: Upgrade',
      'Upgrade: websocket',
      'Sec-WebSocket-Version: 13',
      'Sec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA==',
      'Sec-WebSocket-Protocol: v5.channel.k8s.io',
    ],
  );
  return fc.record({ method: fc.constantFrom('GET', 'GET', 'POST', 'HEAD'), path, query, extra }).map((r) => {
    const headers = ['Host: 127.0.0.1', `Authorization: Bearer ${TOKEN}`, ...r.extra, 'Content-Length: 0'];
    if (r.extra.length === 0) headers.push('Connection: close');
    return {
      server: 'kubelet' as const,
      head: `${r.method} ${r.path}${r.query} HTTP/1.1\r\n${headers.join('\r\n')}\r\n\r\n`,
      body: Buffer.alloc(0),
    };
  });
}

/**
 * Sends a request as raw bytes; resolves to the reply's status code (0 for none), its status
 * line and, with `whole`, as much of the reply as comes within a moment.
 */
function send(req: RawRequest, whole = false): Promise<{ status: number; firstLine: string; reply: string }> {
  return new Promise((resolve) => {
    const port = req.server === 'kubelet' ? kubeletPort : healthzPort;
    const socket =
      req.server === 'kubelet'
        ? tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false })
        : net.connect({ host: '127.0.0.1', port });
    let reply = '';
    const done = () => {
      socket.destroy();
      const firstLine = reply.split('\r\n', 1)[0] ?? '';
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3}) /.exec(firstLine)?.[1] ?? 0), firstLine, reply });
    };
    socket.setTimeout(15_000, done);
    socket.on(req.server === 'kubelet' ? 'secureConnect' : 'connect', () => {
      socket.write(req.head);
      // The server may answer and close before it reads a big body: a write error is not a fault.
      socket.write(req.body);
    });
    socket.on('data', (d: Buffer) => {
      reply += d.toString('latin1');
      // The status line is all that is judged (a granted upgrade would stay open); a failure's
      // text comes in the same few packets.
      if (!reply.includes('\r\n')) return;
      if (!whole || reply.startsWith('HTTP/1.1 101')) done();
      else setTimeout(done, 50);
    });
    socket.on('error', () => undefined);
    socket.on('close', done);
  });
}

describe('agent HTTP servers fuzz', () => {
  it(
    `answer ${RUNS} hostile requests on 10250 and 10248 below 500, and keep serving`,
    { timeout: 900_000 },
    async () => {
      const byStatus = new Map<number, number>();
      const faults = new Set<string>();
      const run = (runs: number, seed: number) =>
        fc.assert(
          fc.asyncProperty(requests(), async (req) => {
            const { status, firstLine } = await send(req);
            byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
            if (status === 0 || status >= 500)
              faults.add(
                `${req.server} ${req.head.split('\r\n', 1)[0]?.slice(0, 120)} -> ${firstLine || 'no reply'}`,
              );
          }),
          { seed, numRuns: runs },
        );
      await run(20, 1);
      const baseline = heapMiB();
      byStatus.clear();
      faults.clear();
      await run(RUNS, SEED);
      const summary = [...byStatus]
        .sort(([a], [b]) => a - b)
        .map(([s, n]) => `${s} ${n}`)
        .join(', ');
      console.log(`agent HTTP fuzz: ${RUNS} requests, ${faults.size} faults (${summary})`);
      expect([...faults]).toEqual([]);
      expect(await httpGet(healthzPort, '/healthz')).toEqual({ status: 200, body: 'ok' });
      const exited = await Promise.race([
        agent.exited,
        new Promise((r) => setTimeout(() => r('running'), 100)),
      ]);
      expect(exited).toBe('running');
      expect(heapMiB() - baseline).toBeLessThan(32);
    },
  );

  // Issue 36: hostile query strings on a pod that exists, so that they reach the handlers, the
  // log reader and the runtime rather than stopping at "pod does not exist".
  it(
    `answer ${QUERY_RUNS} hostile query strings on a running pod's endpoints below 500`,
    { timeout: 900_000 },
    async () => {
      const byStatus = new Map<number, number>();
      const faults: string[] = [];
      await fc.assert(
        fc.asyncProperty(hostileQueries(), async (req) => {
          const { status, firstLine, reply } = await send(req, true);
          byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
          // The fake runtime serves no streams: its UNIMPLEMENTED is the runtime's answer, which
          // the kubelet relays as 500 as it relays any runtime failure.
          if (status === 0 || (status >= 500 && !reply.includes('does not implement runtime.v1')))
            faults.push(
              `${req.head.split('\r\n', 1)[0]?.slice(0, 160)} -> ${firstLine || 'no reply'} ${JSON.stringify(reply.slice(-160))}`,
            );
        }),
        { seed: SEED + 1, numRuns: QUERY_RUNS },
      );
      const summary = [...byStatus]
        .sort(([a], [b]) => a - b)
        .map(([code, n]) => `${code} ${n}`)
        .join(', ');
      console.log(`agent query fuzz: ${QUERY_RUNS} requests, ${faults.length} faults (${summary})`);
      expect(faults).toEqual([]);
      expect(byStatus.get(200) ?? 0).toBeGreaterThan(0);
      expect(await httpGet(healthzPort, '/healthz')).toEqual({ status: 200, body: 'ok' });
    },
  );

  it('states its limits in --help', async () => {
    const { io, cmd } = agentCommand();
    expect(await cmd.execute(['--help'])).toBe(0);
    expect(io.out).toMatch(/request headers up to 16 KiB \(431 beyond\), all headers within 60 s/);
    expect(io.out).toMatch(/with the limits of --port/);
    expect(io.out).toMatch(/default false: a request without credentials gets 401/);
  });

  it.each(['/portForward/%zz/%zz', '/containerLogs/default/%zz/main', '/exec/default/web/%E0%A4%A'])(
    'answers 400 to the malformed %%-escape in %s, as Go parses paths, not 500',
    async (path) => {
      const { status } = await send({
        server: 'kubelet',
        head: `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKEN}\r\nConnection: close\r\n\r\n`,
        body: Buffer.alloc(0),
      });
      expect(status).toBe(400);
    },
  );

  it('refuses requests without credentials: anonymous access is off by default', async () => {
    const { status } = await send({
      server: 'kubelet',
      head: 'GET /pods HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n',
      body: Buffer.alloc(0),
    });
    expect(status).toBe(401);
  });
});
