import { mkdtempSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeletMetrics, runtimeOperationType } from '../src/metrics/metrics.js';
import {
  alwaysAllow,
  type RequestAttributes,
  StaticTokenAuthenticator,
  subresourceFor,
} from '../src/server/auth.js';
import { generateSelfSignedCert, loadOrCreateServingCert, type ServingCert } from '../src/server/certs.js';
import { HealthChecker, HealthzServer, syncLoopCheck } from '../src/server/healthz.js';
import { runningPodsProvider } from '../src/server/running_pods.js';
import { KubeletServer } from '../src/server/server.js';

interface Reply {
  status: number;
  body: string;
}

function get(
  port: number,
  path: string,
  opts: { token?: string; ca?: string; tls?: boolean } = {},
): Promise<Reply> {
  const tls = opts.tls ?? true;
  return new Promise((resolve, reject) => {
    const req = (tls ? request : httpRequest)(
      {
        host: '127.0.0.1',
        port,
        path,
        headers: opts.token ? { Authorization: `Bearer ${opts.token}` } : {},
        ...(tls ? { ca: opts.ca } : {}),
      },
      (res) => {
        let body = '';
        res.on('data', (c) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('metrics', () => {
  it('use the kubelet metric names', async () => {
    const m = new KubeletMetrics();
    m.nodeName.set({ node: 'node-a' }, 1);
    m.recordCriCall({ method: 'runPodSandbox', durationMs: 96 });
    m.recordCriCall({ method: 'runPodSandbox', durationMs: 10, error: new Error('boom') });
    m.proberProbeTotal.inc({
      probe_type: 'Liveness',
      result: 'successful',
      container: 'c',
      pod: 'p',
      namespace: 'n',
      pod_uid: 'u',
    });
    const text = await m.registry.metrics();
    for (const name of [
      'kubelet_node_name{node="node-a"} 1',
      'kubelet_runtime_operations_total{operation_type="run_podsandbox"} 2',
      'kubelet_runtime_operations_errors_total{operation_type="run_podsandbox"} 1',
      'kubelet_runtime_operations_duration_seconds_count{operation_type="run_podsandbox"} 2',
      '# TYPE kubelet_pod_start_duration_seconds histogram',
      '# TYPE kubelet_pod_start_sli_duration_seconds histogram',
      '# TYPE kubelet_pleg_relist_duration_seconds histogram',
      '# TYPE kubelet_running_pods gauge',
    ]) {
      expect(text).toContain(name);
    }
    expect(await m.probesRegistry.metrics()).toContain(
      'prober_probe_total{probe_type="Liveness",result="successful"',
    );
  });

  it("records the PLEG's relists as the kubelet's relist duration, interval and last-seen metrics", async () => {
    const m = new KubeletMetrics();
    m.observeRelist({ durationMs: 40, intervalMs: undefined, lastSeenMs: 1_000_000 });
    m.observeRelist({ durationMs: 60, intervalMs: 1_050, lastSeenMs: 1_001_050 });
    const text = await m.registry.metrics();
    for (const line of [
      'kubelet_pleg_relist_duration_seconds_sum 0.1',
      'kubelet_pleg_relist_duration_seconds_count 2',
      'kubelet_pleg_relist_interval_seconds_sum 1.05',
      'kubelet_pleg_relist_interval_seconds_count 1',
      'kubelet_pleg_last_seen_seconds 1001.05',
    ])
      expect(text).toContain(line);
  });

  it('name runtime operations like the kubelet', () => {
    expect(runtimeOperationType('runPodSandbox')).toBe('run_podsandbox');
    expect(runtimeOperationType('listPodSandbox')).toBe('list_podsandbox');
    expect(runtimeOperationType('podSandboxStatus')).toBe('podsandbox_status');
    expect(runtimeOperationType('/runtime.v1.RuntimeService/CreateContainer')).toBe('create_container');
    expect(runtimeOperationType('imageFsInfo')).toBe('image_fs_info');
    expect(runtimeOperationType('version')).toBe('version');
  });
});

describe('healthz server', () => {
  let now = 0;
  let lastIteration: number | undefined;
  const checker = new HealthChecker();
  checker.add(
    'syncloop',
    syncLoopCheck(
      () => lastIteration,
      () => now,
      60_000,
    ),
  );
  const server = new HealthzServer(checker);
  let port = 0;
  beforeAll(async () => {
    port = (await server.start('127.0.0.1', 0)).port;
  });
  afterAll(() => server.stop());

  it('answers ok while the sync loop iterates', async () => {
    lastIteration = 0;
    now = 5 * 60_000;
    expect(await get(port, '/healthz', { tls: false })).toEqual({ status: 200, body: 'ok' });
    expect((await get(port, '/healthz?verbose', { tls: false })).body).toBe(
      '[+]ping ok\n[+]syncloop ok\nhealthz check passed\n',
    );
    expect((await get(port, '/healthz/ping', { tls: false })).status).toBe(200);
  });

  it('fails when the sync loop stalled past max(2 x syncFrequency, 5m)', async () => {
    lastIteration = 0;
    now = 5 * 60_000 + 1;
    expect(await get(port, '/healthz', { tls: false })).toEqual({
      status: 500,
      body: '[+]ping ok\n[-]syncloop failed: reason withheld\nhealthz check failed\n',
    });
    expect(checker.failures()).toEqual([{ name: 'syncloop', error: 'sync Loop took longer than expected' }]);
    expect((await get(port, '/nope', { tls: false })).status).toBe(404);
  });
});

describe('serving certificate', () => {
  it('is created once under the cert dir and reused', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'kh-pki-')), 'pki');
    const a = await loadOrCreateServingCert(dir, 'node-a', ['127.0.0.1']);
    const b = await loadOrCreateServingCert(dir, 'node-a', ['127.0.0.1']);
    expect(a.cert).toMatch(/^-----BEGIN CERTIFICATE-----/);
    expect(a.key).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    expect(b).toEqual(a);
  });
});

describe('kubelet server (TLS, authn, authz)', () => {
  let tls: ServingCert;
  let port = 0;
  let anonymousEnabled = false;
  const seen: RequestAttributes[] = [];
  let server: KubeletServer;
  const metrics = new KubeletMetrics();
  metrics.nodeName.set({ node: 'node-a' }, 1);

  beforeAll(async () => {
    tls = await generateSelfSignedCert('node-a', ['127.0.0.1']);
    const health = new HealthChecker();
    const opts = {
      nodeName: 'node-a',
      tls,
      authenticator: new StaticTokenAuthenticator({
        'good-token': { username: 'admin', groups: ['system:masters'] },
      }),
      get anonymousEnabled() {
        return anonymousEnabled;
      },
      authorizer: {
        authorize: async (a: RequestAttributes) => {
          seen.push(a);
          // Anonymous users may read /healthz only.
          return a.user.username === 'system:anonymous'
            ? { allowed: a.path === '/healthz' }
            : alwaysAllow.authorize(a);
        },
      },
      health,
      metrics,
      configz: () => ({ maxPods: 110 }),
      pods: { getPods: () => [{ metadata: { name: 'web', namespace: 'default' } }] },
      startup: {
        list: (namespace?: string) =>
          [
            { uid: 'u1', namespace: 'a', name: 'p', seenAt: 1, createMs: 0, startMs: 0 },
            { uid: 'u2', namespace: 'b', name: 'q', seenAt: 2, createMs: 0, startMs: 0 },
          ].filter((r) => namespace === undefined || r.namespace === namespace),
      },
      runningPods: runningPodsProvider({
        getPods: async () => [
          {
            uid: 'u1',
            name: 'orphan',
            namespace: 'ns',
            sandboxes: [{ id: 's1', state: 'ready' as const }],
            containers: [
              {
                id: { type: 'containerd', id: 'c1' },
                name: 'main',
                state: 'running' as const,
                hash: 'h',
                image: 'busybox',
                imageRef: 'sha256:b',
                createdAt: new Date(0),
              },
            ],
          },
        ],
      }),
    };
    server = new KubeletServer(opts);
    port = (await server.start('127.0.0.1', 0)).port;
  });
  afterAll(() => server.stop());

  it('serves TLS with the self-signed certificate (verified against it)', async () => {
    const r = await get(port, '/healthz', { token: 'good-token', ca: tls.cert });
    expect(r).toEqual({ status: 200, body: 'ok' });
  });

  it('refuses anonymous requests unless enabled, and bad tokens always', async () => {
    expect(await get(port, '/healthz', { ca: tls.cert })).toEqual({ status: 401, body: 'Unauthorized' });
    expect((await get(port, '/healthz', { token: 'bad', ca: tls.cert })).status).toBe(401);
    anonymousEnabled = true;
    try {
      expect((await get(port, '/healthz', { ca: tls.cert })).status).toBe(200);
      expect((await get(port, '/healthz', { token: 'bad', ca: tls.cert })).status).toBe(401);
      expect(await get(port, '/metrics', { ca: tls.cert })).toEqual({
        status: 403,
        body: 'Forbidden (user=system:anonymous, verb=get, resource=nodes, subresource(s)=[metrics])\n',
      });
    } finally {
      anonymousEnabled = false;
    }
  });

  it('serves /configz, /metrics and /pods to an authorized user as nodes/<subresource>', async () => {
    seen.length = 0;
    const configz = await get(port, '/configz', { token: 'good-token', ca: tls.cert });
    expect(JSON.parse(configz.body)).toEqual({ kubeletconfig: { maxPods: 110 } });
    const m = await get(port, '/metrics', { token: 'good-token', ca: tls.cert });
    expect(m.body).toContain('kubelet_node_name{node="node-a"} 1');
    const pods = JSON.parse((await get(port, '/pods', { token: 'good-token', ca: tls.cert })).body);
    expect(pods).toMatchObject({ kind: 'PodList', apiVersion: 'v1', items: [{ metadata: { name: 'web' } }] });
    expect(seen.map((a) => `${a.user.username} ${a.verb} nodes/${a.subresource} ${a.name}`)).toEqual([
      'admin get nodes/configz node-a',
      'admin get nodes/metrics node-a',
      'admin get nodes/pods node-a',
    ]);
    const after = await metrics.registry.metrics();
    expect(after).toMatch(
      /kubelet_http_requests_total\{method="GET",path="configz",server_type="readwrite",long_running="false"\} 1/,
    );
  });

  it('serves /runningpods/ from the runtime, and 404 for endpoints whose provider is not plugged in', async () => {
    const running = JSON.parse(
      (await get(port, '/runningpods/', { token: 'good-token', ca: tls.cert })).body,
    );
    expect(running).toEqual({
      kind: 'PodList',
      apiVersion: 'v1',
      metadata: {},
      items: [
        {
          metadata: { name: 'orphan', namespace: 'ns', uid: 'u1' },
          spec: { containers: [{ name: 'main', image: 'busybox' }] },
        },
      ],
    });
    expect((await get(port, '/stats/summary', { token: 'good-token', ca: tls.cert })).status).toBe(404);
  });

  it('serves /debug/startup (the harness start-up breakdown) as nodes/proxy, by namespace', async () => {
    seen.length = 0;
    const all = JSON.parse((await get(port, '/debug/startup', { token: 'good-token', ca: tls.cert })).body);
    expect(all.items.map((r: { uid: string }) => r.uid)).toEqual(['u1', 'u2']);
    const b = JSON.parse(
      (await get(port, '/debug/startup?namespace=b', { token: 'good-token', ca: tls.cert })).body,
    );
    expect(b).toEqual({
      kind: 'PodStartupList',
      items: [{ uid: 'u2', namespace: 'b', name: 'q', seenAt: 2, createMs: 0, startMs: 0 }],
    });
    expect(seen.map((a) => a.subresource)).toEqual(['proxy', 'proxy']);
  });

  it('maps paths to the kubelet subresources', () => {
    expect(subresourceFor('/stats/summary')).toBe('stats');
    expect(subresourceFor('/metrics/probes')).toBe('metrics');
    expect(subresourceFor('/containerLogs/ns/pod/c')).toBe('proxy');
    expect(subresourceFor('/logs/')).toBe('log');
    expect(subresourceFor('/runningpods/')).toBe('proxy');
    expect(subresourceFor('/checkpoint/ns/pod/c')).toBe('checkpoint');
  });
});
