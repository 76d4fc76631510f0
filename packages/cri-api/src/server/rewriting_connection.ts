import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { ClientHeaderRewriter, goawayFrame, Http2ConnectionError } from './h2_rewriter.js';

/** How long a client that broke the protocol gets to read our GOAWAY before its socket is dropped. */
const GOAWAY_LINGER_MS = 2_000;

/**
 * One accepted client connection as the HTTP/2 server sees it: the client's bytes pass through a
 * ClientHeaderRewriter, the server's go back unchanged. A client that breaks HTTP/2 in a way the
 * rewriter cannot pass on gets a GOAWAY with the reason, and the server sees the connection close.
 */
export class RewritingConnection extends Duplex {
  readonly #socket: Socket;
  readonly #rewriter: ClientHeaderRewriter;
  readonly #onError: ((err: Error) => void) | undefined;
  #failed = false;

  /**
   * `opened`: the connection's opening was read first (readOpening): `read` is what the client sent
   * so far, and the server's EMPTY_SETTINGS went out, so the client's first SETTINGS ACK is not passed on.
   */
  constructor(socket: Socket, onError?: (err: Error) => void, opened?: { read: Buffer }) {
    super({ allowHalfOpen: false });
    this.#socket = socket;
    this.#onError = onError;
    this.#rewriter = new ClientHeaderRewriter({ settingsAcksToDrop: opened ? 1 : 0 });
    // After the server has attached: a failure here already answers it with a GOAWAY.
    if (opened?.read.length) process.nextTick(() => this.#fromClient(opened.read));
    socket.on('data', (chunk: Buffer) => this.#fromClient(chunk));
    socket.on('end', () => {
      if (!this.#failed) this.push(null);
    });
    // Resets and broken pipes of a client connection are routine; 'close' follows and ends us.
    socket.on('error', () => {});
    socket.on('close', () => this.destroy());
  }

  #fromClient(chunk: Buffer): void {
    if (this.#failed) return; // after a GOAWAY the rest is read and dropped
    let out: Buffer[];
    try {
      out = this.#rewriter.fromClient(chunk);
    } catch (err) {
      this.#fail(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    let more = true;
    for (const buf of out) more = this.push(buf);
    if (!more) this.#socket.pause();
  }

  #fail(err: Error): void {
    this.#failed = true;
    const socket = this.#socket;
    if (err instanceof Http2ConnectionError && this.#rewriter.serverAtFrameBoundary) {
      socket.end(goawayFrame(this.#rewriter.lastStreamId, err.code, err.message));
    } else {
      socket.end();
    }
    socket.resume();
    setTimeout(() => socket.destroy(), GOAWAY_LINGER_MS).unref();
    // The HTTP/2 session sees its connection end; its calls are cancelled.
    this.destroy();
    try {
      this.#onError?.(err);
    } catch {
      // An observer never changes what happens to the connection.
    }
  }

  override _read(): void {
    if (!this.#failed) this.#socket.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.#rewriter.fromServer(chunk);
    this.#socket.write(chunk, cb);
  }

  override _writev(chunks: { chunk: Buffer }[], cb: (err?: Error | null) => void): void {
    this.#socket.cork();
    for (let i = 0; i < chunks.length; i++) {
      const { chunk } = chunks[i]!;
      this.#rewriter.fromServer(chunk);
      this.#socket.write(chunk, i === chunks.length - 1 ? cb : undefined);
    }
    this.#socket.uncork();
  }

  override _final(cb: (err?: Error | null) => void): void {
    this.#socket.end();
    cb();
  }

  override _destroy(err: Error | null, cb: (err: Error | null) => void): void {
    // After a protocol error the socket stays up until the client has read the GOAWAY.
    if (!this.#failed) this.#socket.destroy();
    cb(err);
  }
}
