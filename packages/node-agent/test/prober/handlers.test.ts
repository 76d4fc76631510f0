import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { type AddressInfo, createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import * as grpc from '@grpc/grpc-js';
import { CriClient, FakeRuntime } from '@kh/cri-api';
import { KubeGenericRuntimeManager } from '@kh/runtime-manager';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  decodeHealthCheckRequest,
  encodeHealthCheckResponse,
  execProbe,
  grpcProbe,
  httpProbe,
  PROBE_USER_AGENT,
  tcpProbe,
} from '../../src/prober/handlers.js';
import { generateSelfSignedCert } from '../../src/server/certs.js';

const LOOPBACK = '127.0.0.1';

async function listen(server: Server | TcpServer): Promise<number> {
  await new Promise<void>((r) => server.listen(0, LOOPBACK, r));
  return (server.address() as AddressInfo).port;
}

/** A port nobody listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const s = createTcpServer();
  const port = await listen(s);
  await new Promise((r) => s.close(r));
  return port;
}

describe('httpProbe', () => {
  let server: Server;
  let port: number;
  let lastHeaders: IncomingHttpHeaders = {};
  beforeAll(async () => {
    server = createHttpServer((req, res) => {
      lastHeaders = req.headers;
      const route: Record<string, () => void> = {
        '/healthz': () => res.writeHead(200).end('ok'),
        '/created': () => res.writeHead(204).end(),
        '/fail': () => res.writeHead(500).end('boom'),
        '/local': () => res.writeHead(302, { location: '/healthz' }).end(),
        '/local-bad': () => res.writeHead(301, { location: `http://${LOOPBACK}:${port}/fail` }).end(),
        '/away': () => res.writeHead(302, { location: 'http://example.invalid/elsewhere' }).end('moved'),
        '/hang': () => {},
        '/notmod': () => res.writeHead(304).end(),
      };
      (route[req.url ?? ''] ?? (() => res.writeHead(404).end()))();
    });
    port = await listen(server);
  });
  afterAll(() => {
    server.closeAllConnections();
    server.close();
  });
  const probe = (path: string, timeoutMs = 1000, headers: { name: string; value: string }[] = []) =>
    httpProbe({ scheme: 'HTTP', host: LOOPBACK, port, path, headers }, timeoutMs);

  it('succeeds on 2xx and 3xx without a location, sending the kubelet headers and custom ones', async () => {
    expect(await probe('/healthz', 1000, [{ name: 'X-Probe', value: 'yes' }])).toEqual({
      result: 'success',
      output: 'ok',
    });
    expect(lastHeaders['user-agent']).toBe(PROBE_USER_AGENT);
    expect(lastHeaders.accept).toBe('*/*');
    expect(lastHeaders['x-probe']).toBe('yes');
    expect(lastHeaders.connection).toBe('close');
    expect((await probe('/created')).result).toBe('success');
    expect((await probe('/notmod')).result).toBe('success');
  });

  it('overrides the Host header when one is given', async () => {
    await probe('/healthz', 1000, [{ name: 'Host', value: 'web.example' }]);
    expect(lastHeaders.host).toBe('web.example');
  });

  it('fails on 4xx/5xx with the status code', async () => {
    expect(await probe('/fail')).toEqual({
      result: 'failure',
      output: 'HTTP probe failed with statuscode: 500',
    });
    expect(await probe('/missing')).toEqual({
      result: 'failure',
      output: 'HTTP probe failed with statuscode: 404',
    });
  });

  it('follows local redirects and judges the final answer', async () => {
    expect(await probe('/local')).toEqual({ result: 'success', output: 'ok' });
    expect((await probe('/local-bad')).output).toBe('HTTP probe failed with statuscode: 500');
  });

  it('treats a redirect to another host as success with a warning', async () => {
    expect(await probe('/away')).toEqual({
      result: 'warning',
      output: 'Probe terminated redirects, Response body: moved',
    });
  });

  it('fails on timeout and on a refused connection', async () => {
    const timedOut = await probe('/hang', 200);
    expect(timedOut.result).toBe('failure');
    expect(timedOut.output).toContain(`Get "http://${LOOPBACK}:${port}/hang": context deadline exceeded`);
    const refused = await httpProbe(
      { scheme: 'HTTP', host: LOOPBACK, port: await closedPort(), path: '/', headers: [] },
      1000,
    );
    expect(refused.result).toBe('failure');
    expect(refused.output).toContain('ECONNREFUSED');
  });

  it('counts a reply that arrived while the agent was blocked past the deadline', async () => {
    // The server runs in a worker, so it answers while this thread is blocked. flag[0]: 1 once
    // the request arrived, 2 once the reply was written, after this thread stopped polling.
    const shared = new Int32Array(new SharedArrayBuffer(8));
    const worker = new Worker(
      `const { workerData, parentPort } = require('node:worker_threads');
       const flag = workerData;
       const server = require('node:http').createServer((req, res) => {
         Atomics.store(flag, 0, 1);
         setTimeout(() => res.end('late', () => { Atomics.store(flag, 0, 2); Atomics.notify(flag, 0); }), 300);
       });
       server.listen(0, '${LOOPBACK}', () => parentPort.postMessage(server.address().port));`,
      { eval: true, workerData: shared },
    );
    try {
      const workerPort = await new Promise<number>((r) => worker.once('message', r));
      const timeoutMs = 150;
      const started = Date.now();
      const result = httpProbe(
        { scheme: 'HTTP', host: LOOPBACK, port: workerPort, path: '/', headers: [] },
        timeoutMs,
      );
      while (Atomics.load(shared, 0) === 0) await new Promise((r) => setImmediate(r));
      // Blocked, as by a CPU-starved or busy agent: the reply lands and the deadline passes.
      Atomics.wait(shared, 0, 1, 5_000);
      while (Date.now() - started < timeoutMs + 100) {}
      expect(await result).toEqual({ result: 'success', output: 'late' });
    } finally {
      await worker.terminate();
    }
  });

  it('probes HTTPS without verifying the certificate, as the kubelet does', async () => {
    const cert = await generateSelfSignedCert('pod.local', [LOOPBACK]);
    const tls = createHttpsServer({ cert: cert.cert, key: cert.key }, (_req, res) =>
      res.writeHead(200).end('secure'),
    );
    const tlsPort = await listen(tls);
    try {
      expect(
        await httpProbe(
          { scheme: 'HTTPS', host: LOOPBACK, port: tlsPort, path: 'healthz', headers: [] },
          2000,
        ),
      ).toEqual({
        result: 'success',
        output: 'secure',
      });
    } finally {
      tls.close();
    }
  });
});

describe('tcpProbe', () => {
  it('succeeds when something accepts and fails when refused', async () => {
    const s = createTcpServer((sock) => sock.destroy());
    const port = await listen(s);
    try {
      expect(await tcpProbe(LOOPBACK, port, 1000)).toEqual({ result: 'success', output: '' });
    } finally {
      s.close();
    }
    const refused = await tcpProbe(LOOPBACK, await closedPort(), 1000);
    expect(refused.result).toBe('failure');
    expect(refused.output).toMatch(new RegExp(`^dial tcp ${LOOPBACK}:\\d+: connect ECONNREFUSED`));
  });

  it('counts a connection the kernel made while the agent was blocked past the deadline', async () => {
    const s = createTcpServer((sock) => sock.destroy());
    const port = await listen(s);
    try {
      const started = Date.now();
      const result = tcpProbe(LOOPBACK, port, 50);
      // net.connect dials on the next tick; block right after it, before any I/O is polled.
      await new Promise((r) => process.nextTick(r));
      while (Date.now() - started < 250) {}
      expect(await result).toEqual({ result: 'success', output: '' });
    } finally {
      s.close();
    }
  });
});

describe('grpcProbe', () => {
  let server: grpc.Server;
  let port: number;
  const statuses: Record<string, number> = { '': 1, db: 2 };
  beforeAll(async () => {
    server = new grpc.Server();
    server.addService(
      {
        Check: {
          path: '/grpc.health.v1.Health/Check',
          requestStream: false,
          responseStream: false,
          requestSerialize: (x: Buffer) => x,
          requestDeserialize: decodeHealthCheckRequest,
          responseSerialize: encodeHealthCheckResponse,
          responseDeserialize: (x: Buffer) => x,
        },
      },
      {
        Check: (
          call: grpc.ServerUnaryCall<{ service: string }, { status: number }>,
          cb: grpc.sendUnaryData<{ status: number }>,
        ) => {
          const s = statuses[call.request.service];
          if (s === undefined) cb({ code: grpc.status.NOT_FOUND, details: 'unknown service' });
          else cb(null, { status: s });
        },
      },
    );
    port = await new Promise<number>((res, rej) =>
      server.bindAsync(`${LOOPBACK}:0`, grpc.ServerCredentials.createInsecure(), (e, p) =>
        e ? rej(e) : res(p),
      ),
    );
  });
  afterAll(() => server.forceShutdown());

  it('is healthy when the service is SERVING', async () => {
    expect(await grpcProbe(LOOPBACK, port, '', 2000)).toEqual({ result: 'success', output: '' });
  });

  it('fails with the status the service answered', async () => {
    expect(await grpcProbe(LOOPBACK, port, 'db', 2000)).toEqual({
      result: 'failure',
      output: 'service unhealthy (responded with "NOT_SERVING")',
    });
    expect((await grpcProbe(LOOPBACK, port, 'nope', 2000)).output).toMatch(
      /^error: health rpc probe failed: 5 NOT_FOUND/,
    );
  });

  it('fails when nobody listens, or the server lacks the health service', async () => {
    const down = await grpcProbe(LOOPBACK, await closedPort(), '', 1000);
    expect(down.result).toBe('failure');
    expect(down.output).toMatch(/^timeout: failed to connect service "127\.0\.0\.1:\d+" within 1s$/);
    const bare = new grpc.Server();
    const barePort = await new Promise<number>((res, rej) =>
      bare.bindAsync(`${LOOPBACK}:0`, grpc.ServerCredentials.createInsecure(), (e, p) =>
        e ? rej(e) : res(p),
      ),
    );
    try {
      const r = await grpcProbe(LOOPBACK, barePort, '', 2000);
      expect(r.result).toBe('failure');
      expect(r.output).toMatch(
        /^this server does not implement the grpc health protocol \(grpc\.health\.v1\.Health\)/,
      );
    } finally {
      bare.forceShutdown();
    }
  });
});

describe('execProbe through the runtime manager and the fake CRI runtime', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kh-exec-probe-'));
  let fake: FakeRuntime;
  let cri: CriClient;
  let runtime: KubeGenericRuntimeManager;
  let containerId: string;
  beforeAll(async () => {
    fake = await FakeRuntime.start({ socketPath: join(dir, 'cri.sock') });
    cri = await CriClient.connect(fake.endpoint);
    runtime = await KubeGenericRuntimeManager.create({
      cri,
      podLogsRootDir: join(dir, 'logs'),
      podsDir: join(dir, 'pods'),
    });
    fake.addImage('busybox:1', 1000);
    const { podSandboxId } = await cri.runPodSandbox({
      config: { metadata: { name: 'p', namespace: 'd', uid: 'u' } },
    });
    ({ containerId } = await cri.createContainer({
      podSandboxId,
      config: { metadata: { name: 'app' }, image: { image: 'busybox:1' } },
    }));
    await cri.startContainer({ containerId });
    fake.script
      .execResult('cat /tmp/healthy', { stdout: 'yes\n' })
      .execResult('cat /tmp/missing', {
        exitCode: 1,
        stderr: 'cat: /tmp/missing: No such file or directory\n',
      })
      .execResult(/sleep/, { hang: true });
  });
  afterAll(async () => {
    cri?.close();
    await fake?.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const id = () => ({ type: 'containerd', id: containerId });

  it('succeeds on exit 0 and fails with the output otherwise', async () => {
    expect(await execProbe(runtime, id(), ['cat', '/tmp/healthy'], 1000)).toEqual({
      result: 'success',
      output: 'yes\n',
    });
    expect(await execProbe(runtime, id(), ['cat', '/tmp/missing'], 1000)).toEqual({
      result: 'failure',
      output: 'cat: /tmp/missing: No such file or directory\n',
    });
    expect(fake.callLog.filter((c) => c.method === 'ExecSync').at(-1)?.request).toMatchObject({
      timeout: 1n,
    });
  });

  it('fails when the command outlives timeoutSeconds', async () => {
    expect(await execProbe(runtime, id(), ['sleep', '10'], 1000)).toEqual({
      result: 'failure',
      output: 'command "sleep 10" timed out',
    });
  });

  it('throws (result discarded) when the container cannot exec at all', async () => {
    await expect(
      execProbe(runtime, { type: 'containerd', id: 'f'.repeat(64) }, ['true'], 1000),
    ).rejects.toThrow();
  });
});
