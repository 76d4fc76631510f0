// The SPDY/3.1 and WebSocket framing under hostile clients (issue 36): after a granted upgrade for
// exec, attach or port-forward, a client sends generated frames — control frames of every type
// with lying lengths, flags and stream ids, SYN_STREAMs with garbage header blocks, DATA for
// streams that do not exist, WebSocket frames with every opcode, unmasked, fragmented, with
// declared lengths up to 2^31, channel bytes out of range — or plain random bytes. fast-check,
// fixed seed, KH_FUZZ_RUNS cases (1 000 by default). The server must never throw, must end each
// bad session by itself, must still serve real sessions on both transports afterwards, and its
// heap must come back.
import { connect } from 'node:net';
import { PassThrough } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StreamingServer, streamRemoteCommand } from '../src/index.js';
import { CONTAINER, MemoryRuntime, SANDBOX } from './memory_runtime.js';

const RUNS = Number(process.env.KH_FUZZ_RUNS ?? 1000);
const SEED = Number(process.env.KH_FUZZ_SEED ?? 20_261_128);

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heapMiB = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed / 2 ** 20;
};

let runtime: MemoryRuntime;
let server: StreamingServer;
const errors: Error[] = [];
beforeAll(async () => {
  runtime = new MemoryRuntime();
  server = await StreamingServer.start({
    runtime,
    // Short session limits, so that a client that opens nothing is let go soon.
    streamCreationTimeoutMs: 500,
    onError: (e) => errors.push(e),
  });
});
afterAll(async () => {
  await server?.close();
});

const bytes = (max: number) => fc.uint8Array({ maxLength: max }).map((b) => Buffer.from(b));

/** A SPDY/3 frame: control (version 3, a type) or data (a stream id), with a length that may lie. */
const spdyFrame = fc
  .record({
    control: fc.boolean(),
    version: fc.constantFrom(3, 3, 3, 2, 0, 0x7fff),
    type: fc.oneof(fc.integer({ min: 1, max: 10 }), fc.integer({ min: 0, max: 0xffff })),
    streamId: fc.oneof(fc.constantFrom(0, 1, 2, 3, 5, 0x7fffffff), fc.nat()),
    flags: fc.constantFrom(0, 1, 2, 3, 0xff),
    body: fc.oneof(
      bytes(64),
      // A SYN_STREAM's fixed part (stream id, associated id, priority, slot) and a garbage block.
      fc
        .tuple(fc.nat(), bytes(48))
        .map(([id, block]) => {
          const head = Buffer.alloc(10);
          head.writeUInt32BE(id & 0x7fffffff, 0);
          return Buffer.concat([head, block]);
        }),
      // SETTINGS announcing more entries than it carries.
      fc
        .integer({ min: 0, max: 2 ** 31 })
        .map((n) => {
          const b = Buffer.alloc(4);
          b.writeUInt32BE(n >>> 0, 0);
          return b;
        }),
    ),
    lie: fc.option(fc.constantFrom(0, 1, 7, 0xffffff), { nil: undefined }),
  })
  .map((f) => {
    const h = Buffer.alloc(8);
    if (f.control) {
      h.writeUInt16BE(0x8000 | (f.version & 0x7fff), 0);
      h.writeUInt16BE(f.type & 0xffff, 2);
    } else h.writeUInt32BE(f.streamId & 0x7fffffff, 0);
    h.writeUInt8(f.flags, 4);
    h.writeUIntBE((f.lie ?? f.body.length) & 0xffffff, 5, 3);
    return Buffer.concat([h, f.body]);
  });

/** A WebSocket frame as a client sends it (masked or not), with a length that may lie. */
const wsFrame = fc
  .record({
    fin: fc.boolean(),
    rsv: fc.constantFrom(0, 0, 0, 0x40, 0x70),
    opcode: fc.oneof(fc.constantFrom(0, 1, 2, 8, 9, 10), fc.integer({ min: 0, max: 15 })),
    masked: fc.constantFrom(true, true, true, false),
    // The channel byte of the k8s protocols, then the data (v5's 255 is the close signal).
    payload: fc
      .tuple(fc.oneof(fc.constantFrom(0, 1, 2, 3, 4, 255), fc.integer({ min: 0, max: 255 })), bytes(200))
      .map(([ch, rest]) => Buffer.concat([Buffer.of(ch), rest])),
    lie: fc.option(fc.constantFrom(0, 125, 126, 65_535, 65_536, 2 ** 31), { nil: undefined }),
  })
  .map((f) => {
    const len = f.lie ?? f.payload.length;
    const head: number[] = [(f.fin ? 0x80 : 0) | f.rsv | f.opcode];
    const m = f.masked ? 0x80 : 0;
    if (len < 126) head.push(m | len);
    else if (len < 65_536) head.push(m | 126, len >> 8, len & 0xff);
    else
      head.push(m | 127, 0, 0, 0, 0, (len >>> 24) & 0xff, (len >> 16) & 0xff, (len >> 8) & 0xff, len & 0xff);
    if (!f.masked) return Buffer.concat([Buffer.from(head), f.payload]);
    const mask = Buffer.from([0x11, 0x22, 0x33, 0x44]);
    return Buffer.concat([Buffer.from(head), mask, Buffer.from(f.payload.map((b, i) => b ^ mask[i % 4]!))]);
  });

interface Case {
  endpoint: 'exec' | 'attach' | 'portforward';
  transport: 'spdy' | 'websocket';
  protocol: string;
  frames: Buffer;
}

const cases: fc.Arbitrary<Case> = fc
  .record({
    endpoint: fc.constantFrom('exec' as const, 'attach' as const, 'portforward' as const),
    transport: fc.constantFrom('spdy' as const, 'websocket' as const),
    protocolPick: fc.nat(),
    kind: fc.constantFrom('spdy', 'ws', 'bytes', 'mixed'),
    spdy: fc.array(spdyFrame, { maxLength: 10 }),
    ws: fc.array(wsFrame, { maxLength: 10 }),
    random: bytes(4096),
  })
  .map((r) => {
    const protocols =
      r.endpoint === 'portforward'
        ? r.transport === 'spdy'
          ? ['portforward.k8s.io']
          : ['v4.channel.k8s.io', 'SPDY/3.1+portforward.k8s.io']
        : r.transport === 'spdy'
          ? ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io']
          : ['v5.channel.k8s.io', 'v4.channel.k8s.io', 'base64.channel.k8s.io', 'channel.k8s.io'];
    const framing = r.transport === 'spdy' ? Buffer.concat(r.spdy) : Buffer.concat(r.ws);
    const frames =
      r.kind === 'bytes'
        ? r.random
        : r.kind === 'mixed'
          ? Buffer.concat([framing, r.random.subarray(0, 256)])
          : r.kind === 'spdy'
            ? Buffer.concat(r.spdy)
            : Buffer.concat(r.ws);
    return {
      endpoint: r.endpoint,
      transport: r.transport,
      protocol: protocols[r.protocolPick % protocols.length]!,
      frames,
    };
  });

function urlFor(c: Case): URL {
  if (c.endpoint === 'portforward')
    return new URL(server.getPortForward({ podSandboxId: SANDBOX, port: [80] }).url);
  const streams = { stdin: true, stdout: true, stderr: true };
  return new URL(
    c.endpoint === 'exec'
      ? server.getExec({ containerId: CONTAINER, cmd: ['echo'], ...streams }).url
      : server.getAttach({ containerId: CONTAINER, ...streams }).url,
  );
}

/** Upgrades, sends the frames, and resolves with the status line once the server closes (or 150 ms pass). */
function attack(c: Case): Promise<{ line: string; closedByServer: boolean }> {
  const url = urlFor(c);
  const upgrade =
    c.transport === 'spdy'
      ? `POST ${url.pathname}${url.search} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: ${c.protocol}\r\nContent-Length: 0\r\n\r\n`
      : `GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: ${c.protocol}\r\n\r\n`;
  return new Promise((resolve) => {
    const socket = connect(Number(url.port), url.hostname);
    let reply = '';
    let sent = false;
    let settled = false;
    const done = (closedByServer: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ line: reply.split('\r\n', 1)[0] ?? '', closedByServer });
    };
    // The upgrade is answered within 10 s; the frames then get 150 ms before the client leaves.
    let timer = setTimeout(() => done(false), 10_000);
    socket.on('connect', () => socket.write(upgrade));
    socket.on('data', (d: Buffer) => {
      reply += d.toString('latin1');
      if (!sent && reply.includes('\r\n\r\n')) {
        sent = true;
        if (reply.startsWith('HTTP/1.1 101')) {
          socket.write(c.frames);
          clearTimeout(timer);
          timer = setTimeout(() => done(false), 150);
        }
      }
    });
    socket.on('error', () => undefined);
    socket.on('close', () => done(true));
  });
}

describe('SPDY and WebSocket framing under hostile clients', () => {
  it(
    `survives ${RUNS} sessions of malformed frames and serves real sessions afterwards`,
    { timeout: 900_000 },
    async () => {
      const lines = new Map<string, number>();
      let lingering = 0;
      const run = (runs: number, seed: number) =>
        fc.assert(
          fc.asyncProperty(cases, async (c) => {
            const { line, closedByServer } = await attack(c);
            const status = line.slice(9, 12) || 'none';
            lines.set(status, (lines.get(status) ?? 0) + 1);
            // Refusals are 4xx; an upgrade is granted; nothing is a 5xx or no answer at all.
            expect(status === '101' || /^4\d\d$/.test(status), `${c.transport} ${c.endpoint} ${line}`).toBe(
              true,
            );
            if (!closedByServer) lingering++;
          }),
          { seed, numRuns: runs },
        );
      await run(20, 1);
      const baseline = heapMiB();
      lines.clear();
      lingering = 0;
      await run(RUNS, SEED);
      console.log(
        `framing fuzz: ${RUNS} sessions (${[...lines].map(([s, n]) => `${s} ${n}`).join(', ')}), ${lingering} still open after 150 ms, ${errors.length} protocol errors reported`,
      );
      // Real sessions still work on both transports.
      for (const transport of ['spdy', 'websocket'] as const) {
        const stdout = new PassThrough();
        const { url } = server.getExec({
          containerId: CONTAINER,
          cmd: ['print', 'still here\n'],
          stdout: true,
        });
        expect((await streamRemoteCommand(url, { transport, stdout })).exitCode).toBe(0);
        expect(String(stdout.read())).toBe('still here\n');
      }
      expect(heapMiB() - baseline).toBeLessThan(32);
    },
  );
});
