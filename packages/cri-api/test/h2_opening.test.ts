/**
 * How serveCri opens a connection: it reads the client's first request and gives nghttp2 the
 * native socket when nghttp2 accepts it, or the header rewriter when not (h2_opening.ts).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { EMPTY_SETTINGS, inspectOpening, MAX_OPENING_BYTES } from '../src/server/h2_opening.js';
import {
  CONTINUATION,
  F,
  frame,
  GET,
  hp,
  type Judge,
  PREFACE,
  RawClient,
  request,
  startJudge,
  T,
} from './h2_helpers.js';
import { tempDir } from './helpers.js';

const SOCKET_PATH = '/run/kubelet-harness/fake-cri.sock';
const CLIENT_SETTINGS = frame(T.SETTINGS, 0, 0);
const ACK = frame(T.SETTINGS, F.ACK, 0);
const PING = frame(T.PING, 0, 0, Buffer.alloc(8));
/** :authority is static entry 1. */
const localhost = (streamId: number) => request(streamId, hp.incremental(1, 'localhost'));
const socketPath = (streamId: number) => request(streamId, hp.incremental(1, SOCKET_PATH, true));

describe('inspectOpening', () => {
  it('sends a request nghttp2 accepts on natively once the ACK of our SETTINGS is in, without that ACK', () => {
    const opening = Buffer.concat([PREFACE, CLIENT_SETTINGS, ACK, localhost(1), PING]);
    expect(inspectOpening(opening)).toEqual({
      kind: 'native',
      bytes: Buffer.concat([PREFACE, CLIENT_SETTINGS, localhost(1), PING]),
    });
    const whole = opening.length - PING.length;
    for (let n = 0; n < whole; n++) expect(inspectOpening(opening.subarray(0, n)).kind).toBe('incomplete');
  });

  it('waits for the ACK of a client that asks before it reads our SETTINGS', () => {
    const asked = Buffer.concat([PREFACE, CLIENT_SETTINGS, localhost(1)]);
    expect(inspectOpening(asked).kind).toBe('incomplete');
    expect(inspectOpening(Buffer.concat([asked, PING, ACK, localhost(3)]))).toEqual({
      kind: 'native',
      bytes: Buffer.concat([asked, PING, localhost(3)]),
    });
  });

  it('gives the rewriter a socket path as :authority or host, Huffman-coded or not', () => {
    for (const req of [
      socketPath(1),
      request(1, hp.withoutIndexing(1, SOCKET_PATH)),
      request(1, hp.incremental('host', SOCKET_PATH, true)),
    ]) {
      expect(inspectOpening(Buffer.concat([PREFACE, CLIENT_SETTINGS, ACK, req]))).toEqual({
        kind: 'rewrite',
      });
    }
  });

  it('reads a first header block continued in CONTINUATION frames', () => {
    const block = Buffer.concat([GET, hp.incremental(1, 'localhost')]);
    const split = Buffer.concat([
      frame(T.HEADERS, F.END_STREAM, 1, block.subarray(0, 2)),
      frame(CONTINUATION, 0, 1, block.subarray(2, 4)),
      frame(CONTINUATION, F.END_HEADERS, 1, block.subarray(4)),
    ]);
    expect(inspectOpening(Buffer.concat([PREFACE, ACK, split])).kind).toBe('native');
    const bad = Buffer.concat([GET, hp.incremental(1, SOCKET_PATH)]);
    const badSplit = Buffer.concat([
      frame(T.HEADERS, F.END_STREAM, 1, bad.subarray(0, 5)),
      frame(CONTINUATION, F.END_HEADERS, 1, bad.subarray(5)),
    ]);
    expect(inspectOpening(Buffer.concat([PREFACE, ACK, badSplit])).kind).toBe('rewrite');
  });

  it('leaves malformed openings and clients that are not HTTP/2 to the rewriter, which answers them', () => {
    const malformed = [
      frame(CONTINUATION, F.END_HEADERS, 1, GET),
      Buffer.concat([frame(T.HEADERS, 0, 1, GET), PING]),
      request(1, hp.indexed(99)),
      frame(T.HEADERS, F.END_HEADERS, 0, GET),
      frame(T.PUSH_PROMISE, F.END_HEADERS, 1, Buffer.alloc(4), GET),
    ];
    for (const bytes of malformed) {
      expect(inspectOpening(Buffer.concat([PREFACE, ACK, bytes]))).toEqual({ kind: 'rewrite' });
    }
    // An ACK with a payload or on a stream is nghttp2's to refuse, so it is not taken out: the
    // rewriter hands it on, before the request or after it.
    for (const badAck of [frame(T.SETTINGS, F.ACK, 0, Buffer.alloc(6)), frame(T.SETTINGS, F.ACK, 1)]) {
      expect(inspectOpening(Buffer.concat([PREFACE, badAck, localhost(1)]))).toEqual({ kind: 'rewrite' });
      expect(inspectOpening(Buffer.concat([PREFACE, localhost(1), badAck]))).toEqual({ kind: 'rewrite' });
    }
    // An ACK inside a header block is a protocol error too, not an ACK to take out.
    const block = Buffer.concat([GET, hp.incremental(1, 'localhost')]);
    const interleaved = Buffer.concat([
      frame(T.HEADERS, F.END_STREAM, 1, block.subarray(0, 2)),
      ACK,
      frame(CONTINUATION, F.END_HEADERS, 1, block.subarray(2)),
    ]);
    expect(inspectOpening(Buffer.concat([PREFACE, interleaved]))).toEqual({ kind: 'rewrite' });
    expect(inspectOpening(Buffer.from('GET / HTTP/1.1\r\n'))).toEqual({ kind: 'rewrite' });
    expect(inspectOpening(PREFACE.subarray(0, 10)).kind).toBe('incomplete');
  });

  it('gives up on an opening that grows past MAX_OPENING_BYTES without a request', () => {
    const pings = Buffer.concat(
      Array.from({ length: Math.ceil(MAX_OPENING_BYTES / PING.length) + 1 }, () => PING),
    );
    expect(inspectOpening(Buffer.concat([PREFACE, ACK, pings]))).toEqual({ kind: 'rewrite' });
  });
});

describe('acceptConnection in front of nghttp2', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  let judge: Judge | undefined;
  const clients: RawClient[] = [];
  beforeEach(async () => {
    tmp = await tempDir();
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) c.socket.destroy();
    await judge?.close();
    judge = undefined;
    await tmp.remove();
  });

  /** A client that opens as grpc-go does: preface and SETTINGS, then its request once the server's SETTINGS came. */
  async function goLikeClient(openingTimeoutMs?: number): Promise<{ j: Judge; c: RawClient }> {
    judge = await startJudge(tmp.sock(), 'opening', openingTimeoutMs);
    const c = new RawClient(judge.path);
    clients.push(c);
    c.socket.write(Buffer.concat([PREFACE, CLIENT_SETTINGS]));
    await c.next((f) => f.type === T.SETTINGS);
    return { j: judge, c };
  }
  const authorityOf = (headers: [string, Buffer][]) =>
    headers.filter(([n]) => n === ':authority').map(([, v]) => v.toString());

  it('sends an empty SETTINGS first, then gives nghttp2 the native socket, which serves on', async () => {
    const { j, c } = await goLikeClient();
    expect(c.frames[0]).toEqual({
      type: T.SETTINGS,
      flags: 0,
      streamId: 0,
      payload: EMPTY_SETTINGS.subarray(9),
    });
    c.socket.write(localhost(1));
    expect(authorityOf(await c.headersOf(1))).toEqual(['localhost']);
    // nghttp2's own SETTINGS got exactly one ACK: a second request and a PING are answered.
    c.socket.write(Buffer.concat([localhost(3), PING]));
    expect(authorityOf(await c.headersOf(3))).toEqual(['localhost']);
    await c.next((f) => f.type === T.PING && (f.flags & F.ACK) !== 0);
    expect(j.paths).toEqual(['native']);
    expect(c.frames.filter((f) => f.type === T.GOAWAY || f.type === T.RST_STREAM)).toEqual([]);
  });

  it('gives a client that names a socket path to the rewriter, without our ACK', async () => {
    const { j, c } = await goLikeClient();
    c.socket.write(socketPath(1));
    expect(authorityOf(await c.headersOf(1))).toEqual(['localhost']);
    c.socket.write(Buffer.concat([socketPath(3), PING]));
    expect(authorityOf(await c.headersOf(3))).toEqual(['localhost']);
    await c.next((f) => f.type === T.PING && (f.flags & F.ACK) !== 0);
    expect(j.paths).toEqual(['rewritten']);
    expect(j.errors).toEqual([]);
    expect(c.frames.filter((f) => f.type === T.GOAWAY || f.type === T.RST_STREAM)).toEqual([]);
  });

  it('gives a client that stays silent after its opening to the rewriter, which serves it later', async () => {
    const { j, c } = await goLikeClient(20);
    await vi.waitFor(() => expect(j.paths).toEqual(['rewritten']));
    c.socket.write(localhost(1));
    expect(authorityOf(await c.headersOf(1))).toEqual(['localhost']);
  });

  it('hands on nothing for a client that leaves during its opening', async () => {
    const { j, c } = await goLikeClient(20);
    c.socket.destroy();
    await c.closed;
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(j.paths).toEqual([]);
    expect(j.errors).toEqual([]);
  });
});
