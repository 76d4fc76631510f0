// Hostile requests on the paths the apiserver proxies to a kubelet (issue 36): pods/exec, attach,
// portforward and log, and nodes/<n>/proxy/<path>, as an admin, a node, an unprivileged user and
// strangers, with hostile paths, query strings, methods and upgrade headers; a granted upgrade
// then gets random bytes, malformed SPDY frames or malformed WebSocket frames. A stand-in kubelet
// that only echoes (it runs nothing) answers behind the proxy. Every answer must be an HTTP status
// below 500, and afterwards the server must still serve, with its heap back near where it was.
import { connect as tlsConnect } from 'node:tls';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiServer, UserInfo } from '../src/index.js';
import { ApiClient, nodeRbacServer, pod, readyNode } from './helpers.js';
import { startTestKubelet, type TestKubelet } from './kubelet.js';

const RUNS = Number(process.env.KH_FUZZ_RUNS ?? 1200);
const SEED = Number(process.env.KH_FUZZ_SEED ?? 20_261_128);

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heapMiB = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed / 2 ** 20;
};

const USERS: Record<string, UserInfo> = {
  admin: { name: 'admin', uid: 'u-admin', groups: ['system:masters'] },
  n1: { name: 'system:node:n1', uid: 'u-n1', groups: ['system:nodes'] },
  dev: { name: 'dev', uid: 'u-dev', groups: [] },
};

let s: ApiServer;
let kubelet: TestKubelet;
beforeAll(async () => {
  s = await nodeRbacServer(USERS);
  kubelet = await startTestKubelet(s.caPem!, { safe: true });
  const admin = new ApiClient(s.url, { token: 'admin', ca: s.caPem });
  const node = readyNode('n1');
  node.status.addresses = [{ type: 'InternalIP', address: '127.0.0.1' }];
  node.status.daemonEndpoints = { kubeletEndpoint: { Port: kubelet.port } };
  expect((await admin.post('/api/v1/nodes', node)).status).toBe(201);
  const web = pod('web', {
    nodeName: 'n1',
    containers: [
      { name: 'c', image: 'busybox' },
      { name: 'd', image: 'busybox' },
    ],
  });
  expect((await admin.post('/api/v1/namespaces/default/pods', web)).status).toBe(201);
});
afterAll(async () => {
  await kubelet?.close();
  await s?.close();
});

/** One hostile request: its head, and what to send once an upgrade is granted. */
interface Case {
  head: string;
  after: Buffer;
}

const spdyFrame = (control: boolean, type: number, flags: number, body: Buffer) => {
  const h = Buffer.alloc(8);
  if (control) {
    h.writeUInt16BE(0x8000 | 3, 0);
    h.writeUInt16BE(type & 0xffff, 2);
  } else h.writeUInt32BE(type & 0x7fffffff, 0);
  h.writeUInt8(flags & 0xff, 4);
  h.writeUIntBE(body.length & 0xffffff, 5, 3);
  return Buffer.concat([h, body]);
};
/** A WebSocket frame as a client sends it (masked), with a length field that may lie. */
const wsFrame = (fin: boolean, opcode: number, payload: Buffer, lie: number | undefined) => {
  const len = lie ?? payload.length;
  const head: number[] = [(fin ? 0x80 : 0) | (opcode & 0x0f)];
  if (len < 126) head.push(0x80 | len);
  else if (len < 65536) head.push(0x80 | 126, len >> 8, len & 0xff);
  else
    head.push(0x80 | 127, 0, 0, 0, 0, (len >>> 24) & 0xff, (len >> 16) & 0xff, (len >> 8) & 0xff, len & 0xff);
  const mask = Buffer.from([1, 2, 3, 4]);
  const body = Buffer.from(payload.map((b, i) => b ^ mask[i % 4]!));
  return Buffer.concat([Buffer.from(head), mask, body]);
};

function cases(): fc.Arbitrary<Case> {
  const bytes = (max: number) => fc.uint8Array({ maxLength: max }).map((b) => Buffer.from(b));
  const name = fc.oneof(
    fc.constantFrom(
      'web',
      'web',
      'missing',
      '%2e%2e',
      '.',
      '..',
      '%2F',
      'a'.repeat(300),
      '%zz',
      '\u00e9',
      '',
    ),
    fc.stringMatching(/^[a-z0-9-]{1,12}$/),
  );
  const podTarget = fc
    .tuple(
      fc.constantFrom('default', 'default', 'default', 'default', 'kube-system', 'nowhere', '%00'),
      name,
      fc.constantFrom('exec', 'exec', 'attach', 'portforward', 'log', 'exec/extra'),
    )
    .map(([ns, p, sub]) => `/api/v1/namespaces/${ns}/pods/${p}/${sub}`);
  const proxyPath = fc.array(
    fc.oneof(
      fc.constantFrom(
        'healthz',
        'stats',
        'summary',
        'pods',
        'exec',
        'containerLogs',
        '..',
        '%2e%2e',
        '%2F',
        '%00',
        '',
        '~',
      ),
      fc.stringMatching(/^[a-zA-Z0-9._-]{1,16}$/),
    ),
    { maxLength: 5 },
  );
  const nodeTarget = fc
    .tuple(fc.constantFrom('n1', 'n1', 'missing', '%2e%2e'), proxyPath)
    .map(([n, rest]) => `/api/v1/nodes/${n}/proxy/${rest.join('/')}`);
  const param = fc.oneof(
    fc.constantFrom(
      'command=echo',
      'command=',
      'command=%00',
      `command=${'x'.repeat(5000)}`,
      'container=c',
      'container=d',
      'container=nope',
      'container=',
      'stdin=true',
      'stdin=1',
      'stdout=1',
      'stderr=maybe',
      'tty=true',
      'tty=%zz',
      'ports=80',
      'ports=0',
      'ports=99999',
      'ports=-1',
      'ports=a,b',
      'follow=true',
      'tailLines=-1',
      'tailLines=abc',
      'limitBytes=99999999999999999999',
      'sinceSeconds=-5',
      'sinceTime=yesterday',
      'previous=1',
      'timestamps=%zz',
      'input=1',
      'output=1',
      '%zz=%zz',
    ),
    fc
      .tuple(fc.string({ maxLength: 20 }), fc.string({ maxLength: 40 }))
      .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`),
  );
  // Most requests start from what a real client sends, so that they reach the kubelet and its
  // framing; the rest is hostile from the first byte.
  const base = fc.constantFrom(
    ['command=echo', 'command=hi', 'container=c', 'stdin=1', 'stdout=1', 'stderr=1'],
    ['command=echo', 'container=d', 'stdout=1', 'tty=1'],
    ['container=c', 'stdin=1', 'stdout=1'],
    ['ports=80', 'ports=443'],
    ['container=c', 'follow=true', 'tailLines=10'],
    [] as string[],
  );
  const query = fc
    .tuple(base, fc.array(param, { maxLength: 4 }), fc.boolean())
    .map(([b, extra, hostile]) => [...b, ...(hostile ? extra : [])])
    .map((ps) => (ps.length ? `?${ps.join('&')}` : ''));
  const upgrade = fc.constantFrom(
    [] as string[],
    ['Connection: Upgrade', 'Upgrade: SPDY/3.1', 'X-Stream-Protocol-Version: v4.channel.k8s.io'],
    [
      'Connection: Upgrade',
      'Upgrade: websocket',
      'Sec-WebSocket-Version: 13',
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
      'Sec-WebSocket-Protocol: v5.channel.k8s.io',
    ],
    ['Connection: Upgrade', 'Upgrade: SPDY/3.1', 'X-Stream-Protocol-Version: v4.channel.k8s.io'],
    ['Connection: Upgrade', 'Upgrade: SPDY/3.1', 'X-Stream-Protocol-Version: portforward.k8s.io'],
    ['Connection: Upgrade', 'Upgrade: SPDY/3.1', 'X-Stream-Protocol-Version: v99.bogus'],
    ['Connection: Upgrade', 'Upgrade: SPDY/3.1'],
    [
      'Connection: Upgrade',
      'Upgrade: websocket',
      'Sec-WebSocket-Version: 13',
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
      'Sec-WebSocket-Protocol: v5.channel.k8s.io',
    ],
    [
      'Connection: Upgrade',
      'Upgrade: websocket',
      'Sec-WebSocket-Version: 13',
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
      'Sec-WebSocket-Protocol: base64.channel.k8s.io, v4.channel.k8s.io',
    ],
    [
      'Connection: Upgrade',
      'Upgrade: websocket',
      'Sec-WebSocket-Version: 13',
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
      'Sec-WebSocket-Protocol: SPDY/3.1+portforward.k8s.io',
    ],
    ['Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 7', 'Sec-WebSocket-Key: x'],
    ['Connection: Upgrade', 'Upgrade: h2c'],
    ['Connection: Upgrade', 'Upgrade: \u0001garbage'],
  );
  const auth = fc.constantFrom(
    ['Authorization: Bearer admin'],
    ['Authorization: Bearer admin'],
    ['Authorization: Bearer admin'],
    ['Authorization: Bearer admin'],
    ['Authorization: Bearer n1'],
    ['Authorization: Bearer dev'],
    ['Authorization: Bearer wrong'],
    [] as string[],
  );
  const after = fc.oneof(
    fc.constant(Buffer.alloc(0)),
    bytes(2048),
    fc
      .array(
        fc
          .tuple(fc.boolean(), fc.integer({ min: 0, max: 12 }), fc.integer({ min: 0, max: 255 }), bytes(64))
          .map(([c, t, f, b]) => spdyFrame(c, t, f, b)),
        { maxLength: 8 },
      )
      .map((fs) => Buffer.concat(fs)),
    fc
      .array(
        fc
          .tuple(
            fc.boolean(),
            fc.integer({ min: 0, max: 15 }),
            bytes(300),
            fc.option(fc.constantFrom(0, 1, 125, 126, 65_535, 2 ** 31), { nil: undefined }),
          )
          .map(([fin, op, p, lie]) => wsFrame(fin, op, p, lie)),
        { maxLength: 8 },
      )
      .map((fs) => Buffer.concat(fs)),
  );
  // What kubectl sends for a pod that exists, so that upgrades are granted and the framing gets
  // the hostile bytes: exec and attach over SPDY or WebSocket (translated), port-forward, logs.
  const SPDY = ['Connection: Upgrade', 'Upgrade: SPDY/3.1'];
  const WS = [
    'Connection: Upgrade',
    'Upgrade: websocket',
    'Sec-WebSocket-Version: 13',
    'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
  ];
  const realistic = fc
    .tuple(
      fc.constantFrom(
        [
          'POST',
          'exec?command=echo&container=c&stdin=1&stdout=1&stderr=1',
          [...SPDY, 'X-Stream-Protocol-Version: v4.channel.k8s.io'],
        ],
        [
          'POST',
          'attach?container=c&stdin=1&stdout=1',
          [...SPDY, 'X-Stream-Protocol-Version: v4.channel.k8s.io'],
        ],
        [
          'GET',
          'exec?command=echo&container=d&stdout=1&tty=1',
          [...WS, 'Sec-WebSocket-Protocol: v5.channel.k8s.io'],
        ],
        [
          'GET',
          'exec?command=echo&container=c&stdin=1&stdout=1',
          [...WS, 'Sec-WebSocket-Protocol: v4.channel.k8s.io'],
        ],
        [
          'GET',
          'attach?container=c&stdin=1&stdout=1',
          [...WS, 'Sec-WebSocket-Protocol: base64.channel.k8s.io'],
        ],
        ['POST', 'portforward', [...SPDY, 'X-Stream-Protocol-Version: portforward.k8s.io']],
        ['GET', 'portforward?ports=80', [...WS, 'Sec-WebSocket-Protocol: v4.channel.k8s.io']],
        ['GET', 'log?container=c&tailLines=5', [] as string[]],
      ),
      after,
    )
    .map(([[method, sub, upgrade], bytes]) => {
      const headers = [
        'Host: 127.0.0.1',
        'Authorization: Bearer admin',
        ...(upgrade as string[]),
        'Content-Length: 0',
      ];
      if ((upgrade as string[]).length === 0) headers.push('Connection: close');
      return {
        head: `${method} /api/v1/namespaces/default/pods/web/${sub} HTTP/1.1\r\n${headers.join('\r\n')}\r\n\r\n`,
        after: bytes,
      };
    });
  const hostile = fc
    .record({
      method: fc.constantFrom('GET', 'GET', 'POST', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'),
      target: fc.oneof({ weight: 3, arbitrary: podTarget }, { weight: 2, arbitrary: nodeTarget }),
      query,
      upgrade,
      auth,
      after,
    })
    .map((r) => {
      const upgrading = r.upgrade.length > 0;
      const headers = ['Host: 127.0.0.1', ...r.auth, ...r.upgrade, 'Content-Length: 0'];
      if (!upgrading) headers.push('Connection: close');
      return {
        head: `${r.method} ${r.target}${r.query} HTTP/1.1\r\n${headers.join('\r\n')}\r\n\r\n`,
        after: r.after,
      };
    });
  return fc.oneof(hostile, realistic);
}

/** Sends one case over TLS; its status (0: no answer), after feeding a granted upgrade its bytes. */
function send(c: Case): Promise<{ status: number; line: string }> {
  return new Promise((resolve) => {
    const url = new URL(s.url);
    const socket = tlsConnect({ host: url.hostname, port: Number(url.port), ca: s.caPem });
    let reply = '';
    let settled = false;
    const done = () => {
      if (settled) return;
      settled = true;
      socket.destroy();
      const line = reply.split('\r\n', 1)[0] ?? '';
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(line)?.[1] ?? 0), line });
    };
    socket.setTimeout(10_000, done);
    socket.on('secureConnect', () => socket.write(c.head));
    socket.on('data', (d: Buffer) => {
      const first = !reply.includes('\r\n');
      reply += d.toString('latin1');
      if (!first || !reply.includes('\r\n')) return;
      if (reply.startsWith('HTTP/1.1 101')) {
        // The upgrade was granted: its framing gets the hostile bytes, then the client leaves.
        socket.write(c.after);
        setTimeout(done, 20);
      } else done();
    });
    socket.on('error', () => undefined);
    socket.on('close', done);
  });
}

describe('fuzzing the streaming and proxy paths', () => {
  it(
    `answers ${RUNS} hostile exec, attach, port-forward, log and nodes/proxy requests below 500`,
    { timeout: 900_000 },
    async () => {
      const byStatus = new Map<number, number>();
      const faults: string[] = [];
      const run = (runs: number, seed: number) =>
        fc.assert(
          fc.asyncProperty(cases(), async (c) => {
            const { status, line } = await send(c);
            byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
            if (status === 0 || status >= 500)
              faults.push(`${c.head.split('\r\n', 1)[0]?.slice(0, 160)} -> ${line || 'no reply'}`);
          }),
          { seed, numRuns: runs },
        );
      await run(30, 1);
      const baseline = heapMiB();
      byStatus.clear();
      faults.length = 0;
      await run(RUNS, SEED);
      const summary = [...byStatus]
        .sort(([a], [b]) => a - b)
        .map(([code, n]) => `${code} ${n}`)
        .join(', ');
      console.log(`streaming/proxy fuzz: ${RUNS} requests, ${faults.length} faults (${summary})`);
      expect(faults).toEqual([]);
      // Still serving, streams included: a real exec through the proxy works.
      const admin = new ApiClient(s.url, { token: 'admin', ca: s.caPem });
      expect((await admin.get('/healthz')).text).toBe('ok');
      expect((await admin.get('/api/v1/nodes/n1/proxy/stats/summary')).status).toBe(200);
      expect(byStatus.get(101) ?? 0).toBeGreaterThan(0);
      expect(heapMiB() - baseline).toBeLessThan(32);
    },
  );
});
