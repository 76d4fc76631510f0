// /containerLogs on the kubelet server: CRI log files written for containers the runtime manager
// ran on the in-memory runtime, read back over TLS with the query options, authn/authz, follow,
// and `kubectl logs` through the fake apiserver's pods/log proxy.
import { appendFileSync, mkdirSync, mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { FakeClock } from '@kh/apimachinery';
import { CriClient, FakeRuntime } from '@kh/cri-api';
import { KubeGenericRuntimeManager, newCrashLoopBackoff, type PodStatus } from '@kh/runtime-manager';
import {
  CoreV1Api,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1Pod,
  type V1PodStatus,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeletMetrics } from '../src/metrics/metrics.js';
import { alwaysAllow, type RequestAttributes, StaticTokenAuthenticator } from '../src/server/auth.js';
import { generateSelfSignedCert, type ServingCert } from '../src/server/certs.js';
import { ContainerLogs, parseLogLine, parseLogOptions, selectRecords } from '../src/server/container_logs.js';
import { HealthChecker } from '../src/server/healthz.js';
import { KubeletServer } from '../src/server/server.js';
import { startTestApiServer, type TestApiServer } from './helpers/apiserver.js';
import { kubectl } from './helpers/kubectl.js';
import { httpGet } from './helpers/net.js';

const dir = mkdtempSync(join(tmpdir(), 'kh-logs-'));
const NOW = Date.UTC(2026, 10, 23, 12, 0, 0);
const ts = (offsetS: number) => new Date(NOW + offsetS * 1000).toISOString().replace('Z', '000000Z');

let fake: FakeRuntime;
let cri: CriClient;
let runtime: KubeGenericRuntimeManager;
let server: KubeletServer;
let port: number;
let tls: ServingCert;
let allowAnonymous = false;
const fakeClock = new FakeClock(NOW);
const pod: V1Pod = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'web', namespace: 'default', uid: 'uid-web' },
  spec: {
    nodeName: 'node-a',
    restartPolicy: 'Always',
    containers: [
      { name: 'app', image: 'busybox', command: ['sleep', '3600'] },
      { name: 'crash', image: 'busybox', command: ['false'] },
    ],
    // Started by the second sync, in the sandbox the first made.
    ephemeralContainers: [{ name: 'debugger', image: 'busybox', command: ['sh'] }],
  },
};
let status: PodStatus;
let apiStatus: V1PodStatus | undefined;
const logPath = (name: string, nth = 0) =>
  status.containerStatuses.filter((c) => c.name === name)[nth]?.logPath ?? '';
/** Writes a log file as the runtime would (the in-memory runtime writes none). */
function writeLog(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
}

beforeAll(async () => {
  fake = await FakeRuntime.start({ socketPath: join(dir, 'cri.sock'), clock: fakeClock });
  fake.addImage('busybox', 1000);
  fake.script.containerExit('crash', { afterMs: 0, exitCode: 1 });
  cri = await CriClient.connect(fake.endpoint);
  runtime = await KubeGenericRuntimeManager.create({
    cri,
    clock: fakeClock,
    podLogsRootDir: join(dir, 'logs'),
    podsDir: join(dir, 'pods'),
  });
  const backoff = newCrashLoopBackoff(fakeClock);
  const current = () => runtime.getPodStatus('uid-web', 'web', 'default');
  // Two syncs: "crash" exits and is restarted once, so it has a previous instance.
  await runtime.syncPod(pod, await current(), [], backoff);
  fakeClock.step(0);
  await runtime.syncPod(pod, await current(), [], backoff);
  fakeClock.step(0);
  status = await current();

  writeLog(
    logPath('app'),
    [
      `${ts(-120)} stdout F booting`,
      `${ts(-30)} stdout P hello `,
      `${ts(-30)} stdout F world`,
      `${ts(-10)} stderr F warning: disk low`,
      'garbage that is not a CRI line',
      `${ts(-5)} stdout F ready`,
      '',
    ].join('\n'),
  );
  writeLog(logPath('debugger'), `${ts(-2)} stdout F polo\n`);
  writeLog(logPath('crash', 1), `${ts(-60)} stderr F first attempt failed\n`);
  writeLog(logPath('crash', 0), `${ts(-1)} stderr F second attempt failed\n`);

  tls = await generateSelfSignedCert('node-a', ['127.0.0.1']);
  server = new KubeletServer({
    nodeName: 'node-a',
    tls,
    authenticator: new StaticTokenAuthenticator({ 'good-token': { username: 'admin', groups: [] } }),
    get anonymousEnabled() {
      return allowAnonymous;
    },
    authorizer: {
      authorize: async (a: RequestAttributes) =>
        a.user.username === 'reader' ? { allowed: false } : alwaysAllow.authorize(a),
    },
    health: new HealthChecker(),
    metrics: new KubeletMetrics(),
    configz: () => ({}),
    logs: new ContainerLogs({
      getPods: () => [pod],
      getPodStatus: () => apiStatus,
      runtime,
      clock: new FakeClock(NOW),
      followPollMs: 20,
    }),
  });
  port = (await server.start('127.0.0.1', 0)).port;
});
afterAll(async () => {
  await server?.stop();
  cri?.close();
  await fake?.stop();
});

function get(path: string, token: string | null = 'good-token'): Promise<{ status: number; body: string }> {
  return httpGet(port, path, { ca: tls.cert, ...(token ? { token } : {}) });
}

/** GET app's log with follow and tailLines=1: what arrived so far, and a wait for a text. */
function followApp() {
  const received: string[] = [];
  const req = request({
    host: '127.0.0.1',
    port,
    path: '/containerLogs/default/web/app?follow=true&tailLines=1',
    ca: tls.cert,
    headers: { Authorization: 'Bearer good-token' },
  });
  const got = (text: string) =>
    new Promise<void>((resolve) => {
      const check = () => (received.join('').includes(text) ? resolve() : setTimeout(check, 10));
      check();
    });
  const ended = new Promise<void>((resolve, reject) => {
    req.on('response', (res) => {
      res.setEncoding('utf8');
      res.on('data', (c: string) => received.push(c));
      res.on('close', () => resolve());
    });
    req.on('error', (e) => ((e as NodeJS.ErrnoException).code === 'ECONNRESET' ? resolve() : reject(e)));
  });
  req.end();
  return { received, got, req, ended };
}

const logs = (container: string, query = '') => get(`/containerLogs/default/web/${container}${query}`);

describe('CRI log parsing', () => {
  it('parses records and rejects other lines', () => {
    expect(parseLogLine('2026-11-23T12:00:00.123456789Z stderr P abc def')).toEqual({
      time: '2026-11-23T12:00:00.123456789Z',
      ms: Date.parse('2026-11-23T12:00:00.123Z'),
      stream: 'stderr',
      partial: true,
      text: 'abc def',
    });
    expect(parseLogLine('2026-11-23T12:00:00Z stdout F')).toMatchObject({ text: '', partial: false });
    expect(parseLogLine('not a log line')).toBeUndefined();
    expect(parseLogLine('yesterday stdout F x')).toBeUndefined();
    const text = `${ts(-3)} stdout F a\n${ts(-2)} stdout F b\n${ts(-1)} stdout F c\n`;
    expect(selectRecords(text, { tailLines: 2 }).map((r) => r.text)).toEqual(['b', 'c']);
    expect(selectRecords(text, { sinceMs: NOW - 2000 }).map((r) => r.text)).toEqual(['b', 'c']);
  });

  it('validates PodLogOptions like the API server', () => {
    const q = (s: string) => parseLogOptions(new URLSearchParams(s), NOW);
    expect(q('tailLines=3&timestamps=true&follow')).toEqual({
      tailLines: 3,
      timestamps: true,
      previous: false,
      follow: true,
    });
    expect(q('sinceSeconds=10').sinceMs).toBe(NOW - 10_000);
    expect(q('sinceTime=2026-11-23T11:00:00Z').sinceMs).toBe(NOW - 3_600_000);
    expect(() => q('tailLines=-1')).toThrow(
      'tailLines: Invalid value: -1: must be greater than or equal to 0',
    );
    expect(() => q('limitBytes=0')).toThrow('limitBytes: Invalid value: 0: must be greater than 0');
    expect(() => q('tailLines=ten')).toThrow('tailLines: Invalid value: "ten": must be an integer');
    expect(() => q('sinceSeconds=5&sinceTime=2026-11-23T11:00:00Z')).toThrow(
      'at most one of sinceTime or sinceSeconds may be specified',
    );
    expect(() => q('previous=maybe')).toThrow('previous: Invalid value: "maybe": must be true or false');
  });
});

describe('GET /containerLogs/{namespace}/{pod}/{container}', () => {
  it('returns the messages, joining partial records and skipping foreign lines', async () => {
    expect(await logs('app')).toEqual({
      status: 200,
      body: 'booting\nhello world\nwarning: disk low\nready\n',
    });
  });

  it("returns an ephemeral container's log by its name", async () => {
    expect(await logs('debugger')).toEqual({ status: 200, body: 'polo\n' });
  });

  it('honours timestamps, tailLines, limitBytes and sinceSeconds', async () => {
    expect((await logs('app', '?timestamps=true&tailLines=2')).body).toBe(
      `${ts(-10)} warning: disk low\n${ts(-5)} ready\n`,
    );
    expect((await logs('app', '?tailLines=0')).body).toBe('');
    expect((await logs('app', '?limitBytes=10')).body).toBe('booting\nhe');
    expect((await logs('app', '?sinceSeconds=60')).body).toBe('hello world\nwarning: disk low\nready\n');
    expect((await logs('app', '?sinceTime=2026-11-23T11:59:52Z')).body).toBe('ready\n');
  });

  it('reads the previous instance of a restarted container with previous=true', async () => {
    expect((await logs('crash')).body).toBe('second attempt failed\n');
    expect((await logs('crash', '?previous=true')).body).toBe('first attempt failed\n');
    const r = await logs('app', '?previous=true');
    expect(r.status).toBe(400);
    expect(JSON.parse(r.body)).toMatchObject({
      kind: 'Status',
      status: 'Failure',
      reason: 'BadRequest',
      code: 400,
      message: 'previous terminated container "app" in pod "web" not found',
    });
  });

  it('follows the pod status: in back-off, the last run is both the current and the previous log', async () => {
    const [newest] = status.containerStatuses.filter((c) => c.name === 'crash');
    const lastRun = { terminated: { exitCode: 1, containerID: `containerd://${newest!.id.id}` } };
    // CrashLoopBackOff: no instance is running, lastState names the run that just failed.
    apiStatus = {
      containerStatuses: [
        {
          name: 'crash',
          image: 'x',
          imageID: '',
          ready: false,
          restartCount: 1,
          lastState: lastRun,
          state: { waiting: { reason: 'CrashLoopBackOff' } },
        },
      ],
    };
    try {
      expect((await logs('crash', '?previous=true')).body).toBe('second attempt failed\n');
      expect((await logs('crash')).body).toBe('second attempt failed\n');
      // A status without a terminated run has no previous log, whatever the runtime still keeps.
      apiStatus = { containerStatuses: [{ ...apiStatus.containerStatuses![0]!, lastState: {} }] };
      expect((await logs('crash', '?previous=true')).status).toBe(400);
    } finally {
      apiStatus = undefined;
    }
  });

  it('answers 404 Status objects for an unknown pod or container, 400 for bad options', async () => {
    const pod404 = await get('/containerLogs/default/nope/app');
    expect(pod404.status).toBe(404);
    expect(JSON.parse(pod404.body)).toMatchObject({
      kind: 'Status',
      reason: 'NotFound',
      code: 404,
      message: 'pod "nope" in namespace "default" not found',
    });
    const ctr404 = await logs('sidecar');
    expect(ctr404.status).toBe(404);
    expect(JSON.parse(ctr404.body).message).toBe('container "sidecar" not found in pod "web"');
    expect((await get('/containerLogs/other/web/app')).status).toBe(404);
    const bad = await logs('app', '?tailLines=-3');
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body).reason).toBe('BadRequest');
    expect((await get('/containerLogs/default/web')).status).toBe(400);
  });

  it('sits behind the same authentication and authorization (nodes/proxy) as the other endpoints', async () => {
    expect(await get('/containerLogs/default/web/app', null)).toEqual({ status: 401, body: 'Unauthorized' });
    expect((await get('/containerLogs/default/web/app', 'bad-token')).status).toBe(401);
    allowAnonymous = true;
    try {
      expect((await get('/containerLogs/default/web/app', null)).status).toBe(200);
    } finally {
      allowAnonymous = false;
    }
    const denying = new StaticTokenAuthenticator({ 'reader-token': { username: 'reader', groups: [] } });
    const s2 = new KubeletServer({
      nodeName: 'node-a',
      tls,
      authenticator: denying,
      anonymousEnabled: false,
      authorizer: { authorize: async () => ({ allowed: false }) },
      health: new HealthChecker(),
      metrics: new KubeletMetrics(),
      configz: () => ({}),
      logs: { handle: async () => expect.unreachable('the handler must not run') },
    });
    const p2 = (await s2.start('127.0.0.1', 0)).port;
    try {
      const r = await httpGet(p2, '/containerLogs/default/web/app', { ca: tls.cert, token: 'reader-token' });
      expect(r).toEqual({
        status: 403,
        body: 'Forbidden (user=reader, verb=get, resource=nodes, subresource(s)=[proxy])\n',
      });
    } finally {
      await s2.stop();
    }
  });

  it('follows a running container: appended lines stream until the client leaves', async () => {
    const { received, got, req, ended } = followApp();
    await got('ready\n');
    appendFileSync(logPath('app'), `${ts(1)} stdout P half \n`);
    appendFileSync(logPath('app'), `${ts(1)} stdout F line\n${ts(2)} stdout F`);
    await got('half line\n');
    appendFileSync(logPath('app'), ' tail\n');
    // A line written in two pieces is sent once complete.
    await got('tail\n');
    req.destroy();
    await ended;
    expect(received.join('')).toBe('ready\nhalf line\ntail\n');
  });

  it('follows across a rotation: the renamed file to its end, then the reopened one from its start', async () => {
    const { received, got, req, ended } = followApp();
    await got('tail\n');
    const path = logPath('app');
    // Written just before the rename, then the runtime reopens and the new file outgrows the old one.
    appendFileSync(path, `${ts(2)} stdout F before rotation\n`);
    renameSync(path, `${path}.20261123-120002`);
    writeFileSync(path, Array.from({ length: 40 }, (_, i) => `${ts(2)} stdout F after ${i}\n`).join(''));
    await got('after 39\n');
    req.destroy();
    await ended;
    const lines = Array.from({ length: 40 }, (_, i) => `after ${i}`);
    expect(received.join('')).toBe(['tail', 'before rotation', ...lines, ''].join('\n'));
    // Not following: the live file only, as the kubelet reads it.
    expect((await logs('app')).body).toBe(`${lines.join('\n')}\n`);
  });

  it('ends a follow when the container stops, and does not follow an exited one', async () => {
    // The exited container: the request completes at once.
    expect((await logs('crash', '?follow=true')).body).toBe('second attempt failed\n');
    const app = status.containerStatuses.find((c) => c.name === 'app');
    // sinceTime, not tailLines=0: under load the follow may open the file after the line is written.
    const pending = logs('app', `?follow=true&sinceTime=${new Date(NOW + 3000).toISOString()}`);
    appendFileSync(logPath('app'), `${ts(3)} stdout F last words\n`);
    await cri.stopContainer({ containerId: app?.id.id ?? '', timeout: 0n });
    fakeClock.step(0);
    expect(await pending).toEqual({ status: 200, body: 'last words\n' });
  });
});

describe('kubectl logs through the fake apiserver', () => {
  let apiserver: TestApiServer;
  let kubeconfig: string;

  beforeAll(async () => {
    apiserver = await startTestApiServer();
    kubeconfig = apiserver.kubeconfig;
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNode({ body: { metadata: { name: 'node-a' } } });
    await core.patchNodeStatus(
      {
        name: 'node-a',
        body: {
          status: {
            addresses: [{ type: 'InternalIP', address: '127.0.0.1' }],
            daemonEndpoints: { kubeletEndpoint: { Port: port } },
          },
        },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    // Ephemeral containers are added after creation, as kubectl debug adds them.
    const { ephemeralContainers, ...spec } = pod.spec!;
    await core.createNamespacedPod({
      namespace: 'default',
      body: { metadata: pod.metadata, spec } as V1Pod,
    });
    await core.patchNamespacedPodEphemeralcontainers(
      { name: 'web', namespace: 'default', body: { spec: { ephemeralContainers } } },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
  });
  afterAll(() => apiserver?.stop());

  it('shows the container log, its tail and the previous instance', async () => {
    // The apiserver's kubelet client presents no token.
    allowAnonymous = true;
    try {
      expect(await kubectl(kubeconfig, 'logs', 'web', '-c', 'app', '--tail=1')).toBe('last words\n');
      expect(await kubectl(kubeconfig, 'logs', 'web', '-c', 'crash', '--previous')).toBe(
        'first attempt failed\n',
      );
      const err = await kubectl(kubeconfig, 'logs', 'web', '-c', 'app', '--previous').catch(
        (e: { stderr: string }) => e.stderr,
      );
      expect(err).toContain('previous terminated container "app" in pod "web" not found');
      expect(await kubectl(kubeconfig, 'logs', 'web', '-c', 'debugger')).toBe('polo\n');
    } finally {
      allowAnonymous = false;
    }
  });
});
