/**
 * The streaming endpoints' proxy against a stand-in runtime streaming server that answers any
 * upgrade with 101 and echoes bytes: what is forwarded (headers, query, bytes both ways), a bare
 * path from CRI resolved against --runtime-streaming-address, a refusal relayed, and the flags.
 */
import http, { type IncomingMessage } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { connect } from 'node:tls';
import { ListContainersResponse } from '@kh/cri-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseFlags } from '../../src/config/flags.js';
import { KubeletMetrics } from '../../src/metrics/metrics.js';
import { alwaysAllow, StaticTokenAuthenticator } from '../../src/server/auth.js';
import { generateSelfSignedCert } from '../../src/server/certs.js';
import { HealthChecker } from '../../src/server/healthz.js';
import { KubeletServer } from '../../src/server/server.js';
import { ContainerStreaming, parseStreamingPath, streamOptions } from '../../src/server/streaming.js';

let runtime: http.Server;
let runtimeAddress: string;
let kubelet: KubeletServer;
let kubeletPort: number;
const upgrades: IncomingMessage[] = [];
const execCalls: unknown[] = [];

beforeAll(async () => {
  runtime = http.createServer((_req, res) => res.writeHead(404).end('no such token'));
  runtime.on('upgrade', (req: IncomingMessage, socket: Socket) => {
    upgrades.push(req);
    if (req.url?.startsWith('/exec/expired')) {
      socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 13\r\n\r\nno such token');
      return;
    }
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: ${String(req.headers['x-stream-protocol-version']).split(',')[0]}\r\n\r\n`,
    );
    socket.pipe(socket);
  });
  await new Promise<void>((r) => runtime.listen(0, '127.0.0.1', r));
  runtimeAddress = `127.0.0.1:${(runtime.address() as AddressInfo).port}`;
  const streaming = new ContainerStreaming({
    getPods: () => [{ metadata: { name: 'p', namespace: 'ns', uid: 'u1' } }],
    runtime: {
      getPods: async () => [
        {
          uid: 'u1',
          name: 'p',
          namespace: 'ns',
          sandboxes: [{ id: 'sb1', state: 'ready' }],
          containers: [
            {
              id: { type: 'fake', id: 'c1' },
              name: 'c',
              state: 'running',
              hash: '',
              image: '',
              imageRef: '',
              createdAt: new Date(0),
            },
          ],
        },
      ],
    },
    cri: {
      listContainers: async (req) =>
        ListContainersResponse.fromPartial({
          containers:
            req?.filter?.labelSelector?.['io.kubernetes.pod.uid'] === 'u1' &&
            req.filter.labelSelector['io.kubernetes.container.name'] === 'c'
              ? [{ id: 'c1' }]
              : [],
        }),
      exec: async (req) => {
        execCalls.push(req);
        return { url: req?.cmd?.[0] === 'expired' ? '/exec/expired' : '/exec/token1?x=1' };
      },
      attach: async () => ({ url: 'http://127.0.0.1:1/attach/refused' }),
      portForward: async () => ({ url: '' }),
      execSync: async () => ({ stdout: Buffer.from(''), stderr: Buffer.from(''), exitCode: 0 }),
    },
    runtimeStreamingAddress: runtimeAddress,
  });
  kubelet = new KubeletServer({
    nodeName: 'n',
    tls: await generateSelfSignedCert('n', ['127.0.0.1']),
    anonymousEnabled: false,
    authenticator: new StaticTokenAuthenticator({ secret: { username: 'apiserver', groups: [] } }),
    authorizer: alwaysAllow,
    health: new HealthChecker(),
    metrics: new KubeletMetrics(),
    configz: () => ({}),
    streaming,
  });
  kubeletPort = (await kubelet.start('127.0.0.1', 0)).port;
});

afterAll(async () => {
  await kubelet.stop();
  await new Promise((r) => runtime.close(r));
});

/** Sends a raw upgrade request; resolves with the socket and everything read until `until`. */
function rawUpgrade(path: string, until: RegExp, extra = ''): Promise<{ socket: Socket; text: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: kubeletPort, rejectUnauthorized: false }, () => {
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: kubelet\r\nAuthorization: Bearer secret\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n` +
          `X-Stream-Protocol-Version: v4.channel.k8s.io\r\nX-Stream-Protocol-Version: v3.channel.k8s.io\r\nContent-Length: 0\r\n\r\n${extra}`,
      );
    });
    let text = '';
    socket.on('data', (c: Buffer) => {
      text += c.toString('latin1');
      if (until.test(text)) resolve({ socket: socket as unknown as Socket, text });
    });
    socket.on('error', reject);
    socket.on('close', () => resolve({ socket: socket as unknown as Socket, text }));
  });
}

describe('the upgrade proxy', () => {
  it("resolves a bare path against the runtime's streaming address and forwards the handshake", async () => {
    const { socket, text } = await rawUpgrade(
      '/exec/ns/p/c?command=echo&command=hi&output=1',
      /\r\n\r\nbytes-after/,
      'bytes-after',
    );
    socket.destroy();
    expect(text).toMatch(/^HTTP\/1\.1 101 Switching Protocols\r\n/);
    expect(text).toContain('X-Stream-Protocol-Version: v4.channel.k8s.io');
    expect(execCalls.at(-1)).toEqual({
      containerId: 'c1',
      cmd: ['echo', 'hi'],
      stdin: false,
      stdout: true,
      stderr: false,
      tty: false,
    });
    const seen = upgrades.at(-1)!;
    // The runtime's own query first, then the client's; the client's credentials stay here.
    expect(seen.url).toBe('/exec/token1?x=1&command=echo&command=hi&output=1');
    expect(seen.headers.host).toBe(runtimeAddress);
    expect(seen.headers.authorization).toBeUndefined();
    expect(seen.headers['x-stream-protocol-version']).toBe('v4.channel.k8s.io, v3.channel.k8s.io');
  });

  it("relays the runtime's refusal and closes the connection", async () => {
    const { text } = await rawUpgrade('/exec/ns/p/c?command=expired&output=1', /no such token$/);
    expect(text).toMatch(/^HTTP\/1\.1 404 Not Found\r\n/);
    expect(text).toMatch(/\r\n\r\nno such token$/);
  });

  it('answers 500 when the runtime streaming server cannot be reached', async () => {
    const { text } = await rawUpgrade('/attach/ns/p/c?output=1', /ECONNREFUSED/);
    expect(text).toMatch(/^HTTP\/1\.1 500 /);
    expect(text).toContain("error dialing the container runtime's streaming server");
  });
});

describe('paths and flags', () => {
  it('parses the four endpoints with and without the pod UID', () => {
    expect(parseStreamingPath('/exec/ns/p/c')).toEqual({
      endpoint: 'exec',
      namespace: 'ns',
      pod: 'p',
      container: 'c',
    });
    expect(parseStreamingPath('/attach/ns/p/uid/c')).toEqual({
      endpoint: 'attach',
      namespace: 'ns',
      pod: 'p',
      uid: 'uid',
      container: 'c',
    });
    expect(parseStreamingPath('/portForward/ns/p')).toEqual({
      endpoint: 'portForward',
      namespace: 'ns',
      pod: 'p',
    });
    expect(parseStreamingPath('/run/ns/p/uid/c')?.uid).toBe('uid');
    expect(parseStreamingPath('/exec/ns/p')).toBeUndefined();
    expect(parseStreamingPath('/portForward/ns/p/u/extra')).toBeUndefined();
  });

  it("reads the kubelet API's stream names, input/output/error, not kubectl's", () => {
    // What kube-apiserver (and ours) sends when it proxies `kubectl exec -i`.
    expect(streamOptions(new URLSearchParams('command=sh&input=1&output=1&error=1'))).toEqual({
      stdin: true,
      stdout: true,
      stderr: true,
      tty: false,
    });
    expect(streamOptions(new URLSearchParams('output=true&error=1&tty=1'))).toEqual({
      stdin: false,
      stdout: true,
      stderr: false,
      tty: true,
    });
    expect(() => streamOptions(new URLSearchParams('stdin=1&stdout=1&stderr=1'))).toThrow(
      /at least 1 of stdin, stdout, stderr/,
    );
  });

  it('--client-ca-file sets authentication.x509.clientCAFile next to --anonymous-auth', () => {
    const { options, configOverrides, errors } = parseFlags([
      '--anonymous-auth=false',
      '--client-ca-file=/etc/kubernetes/pki/ca.crt',
      '--runtime-streaming-address=127.0.0.1:10010',
    ]);
    expect(errors).toEqual([]);
    expect(configOverrides.authentication).toEqual({
      anonymous: { enabled: false },
      x509: { clientCAFile: '/etc/kubernetes/pki/ca.crt' },
    });
    expect(options.runtimeStreamingAddress).toBe('127.0.0.1:10010');
  });
});
