// POST /checkpoint/{namespace}/{pod}/{container} through the kubelet server: the kubelet's 404s
// for what it does not know, its 500 with the runtime's error (UNIMPLEMENTED included), the
// archive path on success, and POST only.
import { mkdtempSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type CheckpointContainerRequest, type DeepPartial, UnimplementedError } from '@kh/cri-api';
import type { RunningPod } from '@kh/runtime-manager';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { KubeletMetrics } from '../../src/metrics/metrics.js';
import { alwaysAllow, type RequestAttributes, StaticTokenAuthenticator } from '../../src/server/auth.js';
import { generateSelfSignedCert, type ServingCert } from '../../src/server/certs.js';
import { ContainerCheckpoint } from '../../src/server/checkpoint.js';
import { HealthChecker } from '../../src/server/healthz.js';
import { KubeletServer } from '../../src/server/server.js';

const dir = mkdtempSync(join(tmpdir(), 'kh-checkpoint-'));
let tls: ServingCert;
let port = 0;
let server: KubeletServer;
const seen: RequestAttributes[] = [];
const calls: { req: DeepPartial<CheckpointContainerRequest>; timeoutMs: number | undefined }[] = [];
let answer: Error | undefined;

const running: RunningPod = {
  uid: 'u1',
  name: 'web',
  namespace: 'default',
  sandboxes: [{ id: 's1', state: 'ready' }],
  containers: [
    {
      id: { type: 'containerd', id: 'c-main' },
      name: 'main',
      state: 'running',
      hash: 'h',
      image: 'busybox',
      imageRef: 'sha256:b',
      createdAt: new Date(0),
    },
  ],
};

function send(method: string, path: string): Promise<{ status: number; body: string; type: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method, headers: { Authorization: 'Bearer t' }, ca: tls.cert },
      (res) => {
        let body = '';
        res.on('data', (c) => {
          body += c;
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body, type: String(res.headers['content-type']) }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

beforeAll(async () => {
  tls = await generateSelfSignedCert('node-a', ['127.0.0.1']);
  server = new KubeletServer({
    nodeName: 'node-a',
    tls,
    authenticator: new StaticTokenAuthenticator({ t: { username: 'admin', groups: ['system:masters'] } }),
    anonymousEnabled: false,
    authorizer: {
      authorize: async (a) => {
        seen.push(a);
        return alwaysAllow.authorize(a);
      },
    },
    health: new HealthChecker(),
    metrics: new KubeletMetrics(),
    configz: () => ({}),
    checkpoint: new ContainerCheckpoint({
      getPods: () => [
        {
          metadata: { name: 'web', namespace: 'default', uid: 'u1' },
          spec: { containers: [{ name: 'main' }, { name: 'sidecar' }], initContainers: [{ name: 'init' }] },
        },
      ],
      runtime: { getPods: async () => [running] },
      cri: {
        checkpointContainer: async (req, opts) => {
          calls.push({ req: req ?? {}, timeoutMs: opts?.timeoutMs });
          if (answer) throw answer;
          return {};
        },
      },
      checkpointsDir: join(dir, 'checkpoints'),
      now: () => new Date('2026-11-28T20:00:00.123Z'),
    }),
  });
  port = (await server.start('127.0.0.1', 0)).port;
});
afterAll(() => server.stop());
beforeEach(() => {
  calls.length = 0;
  seen.length = 0;
  answer = undefined;
});

describe('POST /checkpoint/{namespace}/{pod}/{container}', () => {
  it('asks the runtime to checkpoint the running container and answers with the archive path', async () => {
    const r = await send('POST', '/checkpoint/default/web/main');
    const location = join(dir, 'checkpoints', 'checkpoint-web_default-main-2026-11-28T20:00:00Z.tar');
    expect(r).toMatchObject({ status: 200, type: 'application/json' });
    expect(JSON.parse(r.body)).toEqual({ items: [location] });
    expect(calls).toEqual([{ req: { containerId: 'c-main', location }, timeoutMs: undefined }]);
    expect(seen.map((a) => [a.verb, a.subresource])).toEqual([['create', 'checkpoint']]);
  });

  it('passes the last timeout given, in seconds, and as the call deadline', async () => {
    expect((await send('POST', '/checkpoint/default/web/main?timeout=5&timeout=30')).status).toBe(200);
    expect(calls[0]).toMatchObject({ req: { timeout: 30n }, timeoutMs: 30_000 });
    expect(await send('POST', '/checkpoint/default/web/main?timeout=soon')).toMatchObject({
      status: 404,
      body: 'cannot parse value of timeout parameter',
    });
  });

  it("turns the runtime's UNIMPLEMENTED into the kubelet's 500", async () => {
    answer = new UnimplementedError('method CheckpointContainer not implemented');
    expect(await send('POST', '/checkpoint/default/web/main')).toMatchObject({
      status: 500,
      body: 'checkpointing of default/web/main failed (rpc error: code = Unimplemented desc = method CheckpointContainer not implemented)',
    });
  });

  it('answers 404 for an unknown pod or container, 500 for a known container that is not running', async () => {
    expect(await send('POST', '/checkpoint/default/nope/main')).toMatchObject({
      status: 404,
      body: 'pod does not exist',
    });
    expect(await send('POST', '/checkpoint/default/web/nope')).toMatchObject({
      status: 404,
      body: 'container nope does not exist',
    });
    expect(await send('POST', '/checkpoint/default/web/sidecar')).toMatchObject({
      status: 500,
      body: 'checkpointing of default/web/sidecar failed (container sidecar not found)',
    });
    expect(calls).toEqual([]);
  });

  it('takes POST only', async () => {
    expect((await send('GET', '/checkpoint/default/web/main')).status).toBe(405);
    expect(calls).toEqual([]);
  });
});

describe('without the ContainerCheckpoint gate', () => {
  it('has no /checkpoint route', async () => {
    const plain = new KubeletServer({
      nodeName: 'node-a',
      tls,
      authenticator: new StaticTokenAuthenticator({ t: { username: 'admin', groups: [] } }),
      anonymousEnabled: false,
      authorizer: alwaysAllow,
      health: new HealthChecker(),
      metrics: new KubeletMetrics(),
      configz: () => ({}),
    });
    const saved = port;
    port = (await plain.start('127.0.0.1', 0)).port;
    try {
      expect((await send('POST', '/checkpoint/default/web/main')).status).toBe(404);
    } finally {
      port = saved;
      await plain.stop();
    }
  });
});
