/**
 * The kubelet server's /exec, /attach, /portForward and /run against real runtimes, each in a
 * kind-style node container of the default release (our dockershim next to the node's dockerd, and
 * containerd's CRI plugin); the host's engine only runs the nodes. Their streaming servers listen on
 * the node's address, where this process, the kubelet server, reaches them. x509 client
 * certificates authenticate, the SubjectAccessReview seam authorizes, CRI hands out the runtime's
 * streaming URL and the agent proxies the client's upgrade to it. The clients are
 * @kh/cri-streaming's SPDY ones and a bare WebSocket, the way kubectl and the API server dial.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { normalizeImageRef } from '@kh/apimachinery';
import {
  type ContainerConfig,
  ContainerState,
  CriClient,
  type DeepPartial,
  PodSandboxState,
} from '@kh/cri-api';
import { startDockershim, withCheckout } from '@kh/cri-conformance';
import { PortForwardClient, type StreamingError, streamRemoteCommand } from '@kh/cri-streaming';
import type { RunningPod } from '@kh/runtime-manager';
import {
  containerdRuntime,
  DOCKERSHIM_CNI_FLAGS,
  ensureImages,
  NodeContainer,
  POD_SUBNET,
  type StartedNodeContainer,
} from '@kh/testkit';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { KubeletMetrics } from '../../src/metrics/metrics.js';
import type { RequestAttributes } from '../../src/server/auth.js';
import { generateSelfSignedCert, type ServingCert } from '../../src/server/certs.js';
import { HealthChecker } from '../../src/server/healthz.js';
import { KubeletServer } from '../../src/server/server.js';
import { ContainerStreaming } from '../../src/server/streaming.js';
import { type ClientIdentity, TestCA } from '../helpers/client_cert.js';

const NAMESPACE = 'kh-streaming';
const RUN = `stream-${randomBytes(3).toString('hex')}`;

interface TestRuntime {
  cri: CriClient;
  /** The remotecommand WebSocket protocol the runtime's streaming server prefers. */
  webSocketProtocol: string;
  images: { busybox: string; httpd: string };
  stop(): Promise<void>;
}

/** The runtime's CRI, over the node's socket; stopping it removes the node and all it ran. */
async function inNode(
  node: StartedNodeContainer,
  images: { busybox: string; httpd: string },
  webSocketProtocol: string,
): Promise<TestRuntime> {
  try {
    const cri = await CriClient.connect(node.criEndpointOnHost);
    return {
      cri,
      images: { busybox: normalizeImageRef(images.busybox), httpd: normalizeImageRef(images.httpd) },
      webSocketProtocol,
      stop: async () => {
        cri.close();
        await node.stop();
      },
    };
  } catch (err) {
    await node.stop();
    throw err;
  }
}

const runtimes: Record<string, () => Promise<TestRuntime>> = {
  dockershim: async () => {
    const images = await ensureImages(['pause', 'busybox', 'httpd', 'node']);
    const node = await withCheckout(new NodeContainer(images.node))
      .withRuntime('docker')
      .withImages(images.pause, images.busybox, images.httpd)
      .start();
    try {
      await startDockershim(node, {
        pauseImage: images.pause,
        shimArgs: [...DOCKERSHIM_CNI_FLAGS, `--streaming-address=${node.ipAddress()}:0`],
      });
      await node.updatePodCidr(POD_SUBNET);
    } catch (err) {
      await node.stop();
      throw err;
    }
    return inNode(node, images, 'v5.channel.k8s.io');
  },
  containerd: async () => {
    const images = await ensureImages(['pause', 'busybox', 'httpd', 'node']);
    const node = await new NodeContainer(images.node)
      .withRuntime(containerdRuntime({ streamServerAddress: '' }))
      .withPauseImage(images.pause)
      .withImages(images.busybox, images.httpd)
      .start();
    // containerd 1.7's streaming server predates v5.
    return inNode(node, images, 'v4.channel.k8s.io');
  },
};

/** Collects what a stream receives. */
class Sink extends Writable {
  chunks: Buffer[] = [];
  override _write(c: Buffer, _e: BufferEncoding, cb: () => void) {
    this.chunks.push(c);
    cb();
  }
  get text() {
    return Buffer.concat(this.chunks).toString();
  }
}

describe.each(Object.keys(runtimes))('kubelet streaming endpoints on %s', (runtimeName) => {
  let dir: string;
  let rt: TestRuntime;
  let server: KubeletServer;
  let base: string;
  let tls: ServingCert;
  let ca: TestCA;
  let admin: ClientIdentity;
  const apiPods: V1Pod[] = [];
  const seen: RequestAttributes[] = [];

  /** The client certificate the streaming clients present (undefined: none). */
  function as(identity: ClientIdentity | undefined) {
    // The clients dial with the default agent; a fresh one keeps no sockets or TLS sessions of
    // another identity or server.
    https.globalAgent.destroy();
    https.globalAgent = new https.Agent({ ca: tls.cert, cert: identity?.cert, key: identity?.key });
  }

  /** The runtime's pods as the runtime manager reports them: running containers only. */
  async function runningPods(): Promise<RunningPod[]> {
    const { items } = await rt.cri.listPodSandbox({ filter: { labelSelector: { 'kh.run': RUN } } });
    const { containers } = await rt.cri.listContainers({ filter: { labelSelector: { 'kh.run': RUN } } });
    return items.map((s) => ({
      uid: s.metadata?.uid ?? '',
      name: s.metadata?.name ?? '',
      namespace: s.metadata?.namespace ?? '',
      sandboxes: [{ id: s.id, state: s.state === PodSandboxState.SANDBOX_READY ? 'ready' : 'notready' }],
      containers: containers
        .filter((c) => c.podSandboxId === s.id && c.state === ContainerState.CONTAINER_RUNNING)
        .map((c) => ({
          id: { type: runtimeName, id: c.id },
          name: c.metadata?.name ?? '',
          state: 'running' as const,
          hash: '',
          image: c.image?.image ?? '',
          imageRef: c.imageRef,
          createdAt: new Date(Number(c.createdAt / 1_000_000n)),
        })),
    }));
  }

  async function runPod(
    name: string,
    containers: Record<string, DeepPartial<ContainerConfig> & { start?: boolean }>,
  ) {
    const uid = `${RUN}-${name}`;
    const config = {
      metadata: { name, namespace: NAMESPACE, uid, attempt: 0 },
      logDirectory: join(dir, 'pods', name),
      labels: { 'kh.run': RUN },
    };
    const { podSandboxId } = await rt.cri.runPodSandbox({ config });
    for (const [cname, { start = true, ...extra }] of Object.entries(containers)) {
      const { containerId } = await rt.cri.createContainer({
        podSandboxId,
        sandboxConfig: config,
        config: {
          metadata: { name: cname, attempt: 0 },
          image: { image: rt.images.busybox },
          command: ['sleep', '3600'],
          logPath: `${cname}.log`,
          // The runtime manager's labels, which the agent finds a container by.
          labels: { 'kh.run': RUN, 'io.kubernetes.pod.uid': uid, 'io.kubernetes.container.name': cname },
          ...extra,
        },
      });
      if (start) await rt.cri.startContainer({ containerId });
    }
    apiPods.push({ metadata: { name, namespace: NAMESPACE, uid } });
  }

  const url = (path: string) => `${base}${path}`;
  const exec = (pod: string, container: string, cmd: string[], streams: string) =>
    url(
      `/exec/${NAMESPACE}/${pod}/${container}?${cmd.map((c) => `command=${encodeURIComponent(c)}`).join('&')}&${streams}`,
    );

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kh-agent-streaming-'));
    rt = await runtimes[runtimeName]!();
    ca = await TestCA.create();
    admin = await ca.issue('kube-apiserver-kubelet-client', ['system:masters']);
    tls = await generateSelfSignedCert('node-a', ['127.0.0.1']);
    await runPod('shell', {
      main: {},
      stopped: { start: false },
      cat: { stdin: true, command: ['cat'] },
    });
    await runPod('web', { httpd: { image: { image: rt.images.httpd }, command: [] } });
    server = new KubeletServer({
      nodeName: 'node-a',
      tls,
      clientCA: ca.pem,
      anonymousEnabled: false,
      authorizer: {
        authorize: async (a) => {
          seen.push(a);
          return { allowed: a.user.groups.includes('system:masters') };
        },
      },
      health: new HealthChecker(),
      metrics: new KubeletMetrics(),
      configz: () => ({}),
      streaming: new ContainerStreaming({
        getPods: () => apiPods,
        runtime: { getPods: runningPods },
        cri: rt.cri,
      }),
    });
    base = `https://127.0.0.1:${(await server.start('127.0.0.1', 0)).port}`;
    as(admin);
  }, 240_000);

  afterAll(async () => {
    as(undefined);
    await server?.stop();
    if (rt) {
      try {
        const { items } = await rt.cri.listPodSandbox({ filter: { labelSelector: { 'kh.run': RUN } } });
        for (const s of items) {
          await rt.cri.stopPodSandbox({ podSandboxId: s.id });
          await rt.cri.removePodSandbox({ podSandboxId: s.id });
        }
      } finally {
        await rt.stop();
      }
    }
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 120_000);

  describe('exec', () => {
    it('separates stdout and stderr, reports the exit code, authorized as create nodes/proxy', async () => {
      seen.length = 0;
      const stdout = new Sink();
      const stderr = new Sink();
      const r = await streamRemoteCommand(
        exec('shell', 'main', ['sh', '-c', 'echo out; echo err >&2; exit 3'], 'output=1&error=1'),
        { stdout, stderr },
      );
      expect(r.exitCode).toBe(3);
      expect(r.protocol).toBe('v4.channel.k8s.io');
      expect(stdout.text).toBe('out\n');
      expect(stderr.text).toBe('err\n');
      expect(seen[0]).toMatchObject({
        user: {
          username: 'kube-apiserver-kubelet-client',
          groups: ['system:masters', 'system:authenticated'],
        },
        verb: 'create',
        resource: 'nodes',
        subresource: 'proxy',
        name: 'node-a',
      });
    });

    it('passes stdin through and ends it when the client does', async () => {
      const stdin = new PassThrough();
      const stdout = new Sink();
      const done = streamRemoteCommand(exec('shell', 'main', ['wc', '-c'], 'input=1&output=1'), {
        stdin,
        stdout,
      });
      stdin.end(Buffer.alloc(200_000, 'x'));
      expect((await done).exitCode).toBe(0);
      expect(stdout.text.trim()).toBe('200000');
    });

    it('runs a command on a terminal (tty: stderr merged into stdout)', async () => {
      const stdout = new Sink();
      const r = await streamRemoteCommand(
        exec(
          'shell',
          'main',
          ['sh', '-c', 'tty >/dev/null && echo on-a-tty; echo err >&2'],
          'output=1&error=1&tty=1',
        ),
        { stdout, tty: true },
      );
      expect(r.exitCode).toBe(0);
      expect(stdout.text.replaceAll('\r', '')).toBe('on-a-tty\nerr\n');
    });

    it('speaks the older SPDY protocol versions the runtime offers', async () => {
      const stdout = new Sink();
      const r = await streamRemoteCommand(exec('shell', 'main', ['echo', 'v2'], 'output=1'), {
        stdout,
        protocols: ['v2.channel.k8s.io'],
      });
      expect(r.protocol).toBe('v2.channel.k8s.io');
      expect(stdout.text).toBe('v2\n');
    });

    it('proxies WebSocket remotecommand, the runtime picking from the offer (kubectl offers v5 first)', async () => {
      const frames: Buffer[] = [];
      const ws = new WebSocket(
        exec('shell', 'main', ['echo', 'over-ws'], 'output=1').replace(/^https/, 'wss'),
        ['v5.channel.k8s.io', 'v4.channel.k8s.io'],
        { ca: tls.cert, cert: admin.cert, key: admin.key },
      );
      ws.on('message', (m: Buffer) => frames.push(m));
      await new Promise((resolve, reject) => {
        ws.on('close', resolve);
        ws.on('error', reject);
      });
      expect(ws.protocol).toBe(rt.webSocketProtocol);
      const channel = (n: number) =>
        Buffer.concat(frames.filter((f) => f[0] === n).map((f) => f.subarray(1))).toString();
      expect(channel(1)).toBe('over-ws\n');
      expect(JSON.parse(channel(3))).toMatchObject({ status: 'Success' });
    });

    it('ends the command when the client goes away mid-stream, and keeps serving', async () => {
      const abort = new AbortController();
      const stdout = new Writable({
        write(_c, _e, cb) {
          abort.abort();
          cb();
        },
      });
      const err = await streamRemoteCommand(
        exec('shell', 'main', ['sh', '-c', 'while true; do echo tick; sleep 0.05; done'], 'output=1'),
        { stdout, signal: abort.signal },
      ).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Error);
      const out = new Sink();
      expect(
        (await streamRemoteCommand(exec('shell', 'main', ['echo', 'still'], 'output=1'), { stdout: out }))
          .exitCode,
      ).toBe(0);
      expect(out.text).toBe('still\n');
    });
  });

  it('attaches to the main process of a container', async () => {
    const stdin = new PassThrough();
    const stdout = new Sink();
    const abort = new AbortController();
    const done = streamRemoteCommand(url(`/attach/${NAMESPACE}/shell/cat?input=1&output=1&error=1`), {
      stdin,
      stdout,
      stderr: new Sink(),
      signal: abort.signal,
    });
    stdin.write('attached\n');
    await expect.poll(() => stdout.text, { timeout: 10_000 }).toBe('attached\n');
    // Detaching (the client leaving) leaves the container running.
    abort.abort();
    await done.catch(() => undefined);
    expect((await runningPods()).find((p) => p.name === 'shell')?.containers.map((c) => c.name)).toContain(
      'cat',
    );
  });

  it('port-forwards into the pod sandbox (the uid variant of the path)', async () => {
    const pf = await PortForwardClient.connect(url(`/portForward/${NAMESPACE}/web/${RUN}-web`));
    try {
      const conn = await pf.open(80);
      const body = new Sink();
      conn.stream.pipe(body);
      conn.stream.write('GET / HTTP/1.0\r\n\r\n');
      await expect.poll(() => body.text, { timeout: 10_000 }).toContain('kubelet-harness');
    } finally {
      await pf.close();
    }
  });

  it('POST /run answers the output of the command', async () => {
    const res = await fetchAs(admin, 'POST', url(`/run/${NAMESPACE}/shell/main?cmd=echo+ran+here`));
    expect(res).toEqual({ status: 200, body: 'ran here\n' });
    const failed = await fetchAs(admin, 'POST', url(`/run/${NAMESPACE}/shell/main?cmd=ls+/nonexistent`));
    expect(failed.status).toBe(500);
    expect(failed.body).toMatch(
      /^command 'ls \/nonexistent' exited with 1: ls: \/nonexistent: No such file or directory/,
    );
    expect((await fetchAs(admin, 'GET', url(`/run/${NAMESPACE}/shell/main?cmd=true`))).status).toBe(405);
  });

  describe('refusals', () => {
    const refusal = (u: string) =>
      streamRemoteCommand(u, { stdout: new Sink() }).then(
        () => undefined,
        (e: StreamingError) => ({ status: e.httpStatus, message: e.message }),
      );

    it('an unknown pod is 404 "pod does not exist"', async () => {
      expect(await refusal(exec('nope', 'main', ['true'], 'output=1'))).toMatchObject({ status: 404 });
      expect((await fetchAs(admin, 'POST', url(`/run/${NAMESPACE}/nope/main?cmd=true`))).body).toBe(
        'pod does not exist',
      );
    });

    it('an unknown or not running container is the kubelet\'s "container not found"', async () => {
      for (const c of ['missing', 'stopped']) {
        const r = await refusal(exec('shell', c, ['true'], 'output=1'));
        expect(r?.status).toBe(500);
        expect(r?.message).toContain(`container not found ("${c}")`);
      }
    });

    it('a plain request without an upgrade is 400, without streams 400', async () => {
      expect(await fetchAs(admin, 'GET', exec('shell', 'main', ['true'], 'output=1'))).toEqual({
        status: 400,
        body: 'Upgrade request required',
      });
      expect((await refusal(exec('shell', 'main', ['true'], 'tty=1')))?.status).toBe(400);
    });

    it('no credentials: 401; a certificate of another CA: 401', async () => {
      as(undefined);
      try {
        expect((await refusal(exec('shell', 'main', ['true'], 'output=1')))?.status).toBe(401);
        as(await (await TestCA.create()).issue('kube-apiserver-kubelet-client', ['system:masters']));
        expect((await refusal(exec('shell', 'main', ['true'], 'output=1')))?.status).toBe(401);
      } finally {
        as(admin);
      }
    });

    it("a user the authorizer denies: 403 in the kubelet's words", async () => {
      const intruder = await ca.issue('intruder', ['developers']);
      as(intruder);
      try {
        const r = await refusal(exec('shell', 'main', ['true'], 'output=1'));
        expect(r?.status).toBe(403);
        expect(r?.message).toContain(
          'Forbidden (user=intruder, verb=create, resource=nodes, subresource(s)=[proxy])',
        );
      } finally {
        as(admin);
      }
    });
  });

  /** A one-shot HTTPS request with a client certificate. */
  function fetchAs(
    who: ClientIdentity,
    method: string,
    target: string,
  ): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const req = https.request(
        target,
        { method, ca: tls.cert, cert: who.cert, key: who.key, agent: false },
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
});
