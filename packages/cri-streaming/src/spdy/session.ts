// A SPDY/3.1 session over any byte stream (a TCP socket after the HTTP upgrade, or a WebSocket
// tunnel), in either role, with streams as Node Duplexes.
//
// Flow control: moby/spdystream, which every Go client (crictl, critest, kubectl < 1.30, the
// kubelet) uses, never sends WINDOW_UPDATE and ignores the ones it receives. A sender that obeyed
// the 64 KiB initial window would stall forever against it. So this session does what spdystream
// does when sending (no send window; TCP's backpressure is the only limit) and, when receiving,
// sends WINDOW_UPDATE for what it has taken in, so a peer that does obey windows keeps going.
// Receiving is backpressured per stream: a DATA frame for a stream whose reader is full pauses
// reading the connection until that reader drains, as spdystream's blocking frame workers do.
import { Duplex, type Readable } from 'node:stream';
import { IdleTimer } from '../util/idle_timer.js';
import { SpdyCodec } from './codec.js';
import {
  FrameParser,
  GoAwayStatus,
  RstStatus,
  type SpdyFrame,
  type SpdyHeaders,
  SpdyProtocolError,
} from './frames.js';

/**
 * Largest DATA payload this side sends: a socket read's worth (Node reads up to 64 KiB at a time),
 * so a chunk from a pod goes out as one frame. Receivers take any size up to 16 MiB; each frame
 * costs a Go receiver (spdystream) a trip through its frame queue, so fewer is cheaper.
 */
export const MAX_DATA_PAYLOAD = 64 * 1024;
/** Received bytes are acknowledged with WINDOW_UPDATE once this much has accumulated. */
const WINDOW_UPDATE_THRESHOLD = 32 * 1024;
/** A stream's receive buffer before the connection stops being read. */
const STREAM_HIGH_WATER_MARK = 1024 * 1024;
/** After this side ends the session, how long the peer gets to close before the socket is destroyed. */
const CLOSE_GRACE_MS = 5_000;
export const DEFAULT_STREAM_REPLY_TIMEOUT_MS = 30_000;

export interface SpdySessionOptions {
  role: 'client' | 'server';
  /** Close the session after this long without a frame in either direction (0: never). */
  idleTimeoutMs?: number;
  /**
   * Called for each stream the peer opens. The handler must accept it with `stream.reply()` or
   * refuse it with `stream.reset(RstStatus.REFUSED_STREAM)`.
   */
  onStream?: (stream: SpdyStream) => void;
  /** Bytes already read from the socket that belong to the session (the HTTP upgrade's head). */
  head?: Buffer;
  /** Told about protocol errors and why the session ended; never throws into the caller. */
  onError?: (err: Error) => void;
}

/** One SPDY stream. Readable: the peer's DATA until its FIN. Writable: DATA; end() sends FIN. */
export class SpdyStream extends Duplex {
  /** Resolves once the stream is established (SYN_REPLY sent or received). */
  readonly established: Promise<void>;
  /** Set when either side reset the stream; its RST_STREAM status. */
  resetStatus: number | undefined;
  private establish!: { resolve: () => void; reject: (err: Error) => void };
  private replied = false;
  /** SYN_REPLY sent or received and not reset since: DATA can be written at once. */
  private open = false;
  private remoteFinished = false;
  private readWaiter: (() => void) | undefined;
  private creditPending = 0;

  constructor(
    readonly session: SpdySession,
    readonly id: number,
    readonly headers: SpdyHeaders,
  ) {
    super({ allowHalfOpen: true, readableHighWaterMark: STREAM_HIGH_WATER_MARK, decodeStrings: true });
    this.established = new Promise((resolve, reject) => {
      this.establish = { resolve, reject };
    });
    this.established.catch(() => {});
    this.once('finish', () => this.forgetIfDone());
  }

  /** Accepts a stream the peer opened. */
  reply(headers: SpdyHeaders = {}): Promise<void> {
    if (this.replied || this.resetStatus !== undefined) return Promise.resolve();
    this.replied = true;
    // The SYN_REPLY is written before any DATA can be: writes are synchronous (see send()).
    const sent = this.session.send({ type: 'SYN_REPLY', streamId: this.id, fin: false, headers });
    this.open = true;
    this.establish.resolve();
    return sent;
  }

  /** Resets the stream: the peer gets RST_STREAM, reading ends, later writes are dropped. */
  reset(status: number = RstStatus.CANCEL): void {
    if (this.resetStatus !== undefined) return;
    this.resetStatus = status;
    void this.session.send({ type: 'RST_STREAM', streamId: this.id, status });
    this.terminate(new Error(`stream ${this.id} reset by this side (status ${status})`));
  }

  /** True once nothing more will arrive from the peer. */
  get remoteClosed(): boolean {
    return this.remoteFinished || this.resetStatus !== undefined;
  }

  override _read(): void {
    const waiter = this.readWaiter;
    this.readWaiter = undefined;
    waiter?.();
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.settle(this.sendData(chunk, false), cb);
  }

  override _final(cb: (err?: Error | null) => void): void {
    this.settle(this.sendData(Buffer.alloc(0), true), cb);
  }

  /** Calls back at once unless the socket is full: no promise per chunk on the hot path. */
  private settle(pending: Promise<void> | undefined, cb: (err?: Error | null) => void): void {
    if (pending) pending.then(() => cb(), cb);
    else cb();
  }

  /**
   * Writes the chunk as DATA frames; a promise only when the socket asked to wait (or the stream
   * is not established yet). Writes after a reset or a dead session are dropped: the runtime
   * learns of it from its signal.
   */
  private sendData(chunk: Buffer, fin: boolean): Promise<void> | undefined {
    if (this.resetStatus !== undefined || this.session.signal.aborted) return undefined;
    if (!this.open) {
      return this.established.then(
        () => (this.open ? this.sendData(chunk, fin) : undefined),
        () => {},
      );
    }
    if (chunk.length === 0 && !fin) return undefined;
    let off = 0;
    do {
      if (this.resetStatus !== undefined) return undefined;
      const data = chunk.subarray(off, off + MAX_DATA_PAYLOAD);
      off += MAX_DATA_PAYLOAD;
      this.session.send({ type: 'DATA', streamId: this.id, fin: fin && off >= chunk.length, data });
    } while (off < chunk.length);
    return this.session.whenWritable();
  }

  /**
   * @internal The session delivers the peer's DATA; a promise, resolved when the reader can take
   * more, only when the reader is full (one per frame would cost more than the copy it guards).
   */
  deliver(data: Buffer, fin: boolean): Promise<void> | undefined {
    if (this.resetStatus !== undefined) return undefined;
    if (this.remoteFinished) {
      this.reset(RstStatus.STREAM_ALREADY_CLOSED);
      return undefined;
    }
    if (data.length > 0 && !this.push(data) && !this.session.draining) {
      return new Promise<void>((resolve) => {
        this.readWaiter = resolve;
      }).then(() => this.delivered(data.length, fin));
    }
    this.delivered(data.length, fin);
    return undefined;
  }

  private delivered(length: number, fin: boolean): void {
    if (fin) {
      this.remoteFinished = true;
      this.push(null);
      this.forgetIfDone();
    } else if (length > 0) {
      this.creditPending += length;
      if (this.creditPending >= WINDOW_UPDATE_THRESHOLD) {
        const delta = this.creditPending;
        this.creditPending = 0;
        void this.session.send({ type: 'WINDOW_UPDATE', streamId: this.id, delta });
      }
    }
  }

  /** @internal The peer replied to a stream this side opened. */
  onReply(): boolean {
    if (this.replied) return false;
    this.replied = true;
    this.open = this.resetStatus === undefined;
    this.establish.resolve();
    return true;
  }

  /** @internal The peer reset the stream, or the session is gone. */
  terminate(reason: Error, status?: number): void {
    if (status !== undefined && this.resetStatus === undefined) this.resetStatus = status;
    this.open = false;
    this.establish.reject(reason);
    this.releaseReader();
    if (!this.remoteFinished) {
      this.remoteFinished = true;
      this.push(null);
    }
    this.session.forget(this.id);
    this.emit('terminated', reason);
  }

  private forgetIfDone(): void {
    if (this.remoteFinished && this.writableFinished) this.session.forget(this.id);
  }

  /** @internal Stop waiting for a reader that will not come (the session is ending). */
  releaseReader(): void {
    const waiter = this.readWaiter;
    this.readWaiter = undefined;
    waiter?.();
  }
}

/** A SPDY/3.1 session. See the file comment for flow control. */
export class SpdySession {
  /** Aborts when the session ends, for whatever reason. */
  readonly signal: AbortSignal;
  /** Resolves when the underlying socket has closed. */
  readonly closed: Promise<void>;
  /** True once this side is ending the session: incoming data is no longer waited on. */
  draining = false;

  private readonly codec = new SpdyCodec();
  private readonly parser = new FrameParser();
  private readonly streams = new Map<number, SpdyStream>();
  private readonly abort = new AbortController();
  /** Set while the socket is over its high-water mark: resolves on 'drain' (or close). */
  private full: Promise<void> | undefined;
  private nextStreamId: number;
  private nextPingId: number;
  private readonly pings = new Map<number, () => void>();
  private lastPeerStreamId = 0;
  private goneAway = false;
  private peerGoneAway = false;
  private readonly idle: IdleTimer;
  private resolveClosed!: () => void;

  constructor(
    private readonly socket: Duplex,
    private readonly options: SpdySessionOptions,
  ) {
    const server = options.role === 'server';
    this.nextStreamId = server ? 2 : 1;
    this.nextPingId = server ? 2 : 1;
    this.signal = this.abort.signal;
    this.idle = new IdleTimer(options.idleTimeoutMs, (ms) => {
      this.options.onError?.(new Error(`SPDY session idle for ${ms} ms`));
      this.destroy(new Error('idle timeout'));
    });
    this.closed = new Promise((resolve) => {
      this.resolveClosed = resolve;
    });
    // The read loop ends the session when the socket's data runs out, so frames that arrived
    // before the close are still handled. A close only stops it waiting for slow readers.
    socket.on('error', (err) => this.options.onError?.(err));
    socket.on('close', () => this.stopWaitingForReaders());
    this.idle.touch();
    if (options.head?.length) this.parser.push(options.head);
    this.readLoop(socket).then(
      () => this.finish(),
      (err: unknown) => (this.socket.destroyed ? this.finish(err as Error) : this.fail(err)),
    );
  }

  /** Opens a stream (client side of a stream) and waits for the peer's SYN_REPLY. */
  async openStream(
    headers: SpdyHeaders,
    { fin = false, timeoutMs = DEFAULT_STREAM_REPLY_TIMEOUT_MS }: { fin?: boolean; timeoutMs?: number } = {},
  ): Promise<SpdyStream> {
    if (this.goneAway || this.peerGoneAway || this.signal.aborted) {
      throw new Error('SPDY session is closing; no new streams');
    }
    const id = this.nextStreamId;
    this.nextStreamId += 2;
    const stream = new SpdyStream(this, id, headers);
    this.streams.set(id, stream);
    await this.send({
      type: 'SYN_STREAM',
      streamId: id,
      associatedStreamId: 0,
      priority: 0,
      slot: 0,
      fin: false,
      unidirectional: false,
      headers,
    });
    const timer = setTimeout(() => {
      stream.reset(RstStatus.CANCEL);
    }, timeoutMs);
    try {
      await stream.established;
    } catch (err) {
      throw new Error(`SPDY stream ${id} was not accepted: ${(err as Error).message}`, { cause: err });
    } finally {
      clearTimeout(timer);
    }
    if (fin) stream.end();
    return stream;
  }

  /** Sends a PING and resolves when its echo arrives. */
  ping(): Promise<void> {
    const id = this.nextPingId;
    this.nextPingId += 2;
    return new Promise<void>((resolve, reject) => {
      this.pings.set(id, resolve);
      this.send({ type: 'PING', id }).catch(reject);
      this.signal.addEventListener('abort', () => reject(new Error('SPDY session closed')), { once: true });
    });
  }

  /**
   * Ends the session politely: GOAWAY, then the socket's end. A server ends its socket only once
   * the peer has closed the connection (or after a grace period), as spdystream's Close waits for
   * the peer's streams: a spdystream client that reads EOF closes every stream at once and drops
   * the frames still queued for them, and an exec's status is the last frame (kubectl then reads
   * an empty error stream as exit 0). A client ends at once, as kubectl does.
   */
  async end(status: number = GoAwayStatus.OK): Promise<void> {
    this.stopWaitingForReaders();
    await this.goAway(status);
    if (this.socket.destroyed) return;
    if (this.options.role === 'server') await this.peerClosedWithin(CLOSE_GRACE_MS);
    this.socket.end();
    setTimeout(() => this.socket.destroy(), CLOSE_GRACE_MS).unref();
  }

  /** Drops the connection at once. */
  destroy(reason?: Error): void {
    this.finish(reason);
    this.socket.destroy();
  }

  private async goAway(status: number): Promise<void> {
    if (this.goneAway) return;
    this.goneAway = true;
    await this.send({ type: 'GOAWAY', lastGoodStreamId: this.lastPeerStreamId, status });
  }

  /** Resolves once the read loop has ended (the peer's EOF, or the socket gone), or after `ms`. */
  private peerClosedWithin(ms: number): Promise<void> {
    if (this.signal.aborted) return RESOLVED;
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.signal.addEventListener('abort', done, { once: true });
    });
  }

  private stopWaitingForReaders(): void {
    this.draining = true;
    for (const s of this.streams.values()) s.releaseReader();
  }

  /**
   * @internal Writes a frame to the socket now (encoding is synchronous), so frames go out in the
   * order send() was called; resolves once the socket can take more. Never rejects: once the
   * session is gone, frames are dropped (its signal tells everyone).
   */
  send(frame: SpdyFrame): Promise<void> {
    this.write(frame);
    return this.whenWritable() ?? RESOLVED;
  }

  /** @internal Undefined while the socket takes more; else a promise for when it drains. */
  whenWritable(): Promise<void> | undefined {
    return this.full;
  }

  /** @internal A stream is closed in both directions or reset. */
  forget(id: number): void {
    this.streams.delete(id);
  }

  private write(frame: SpdyFrame): void {
    if (this.signal.aborted || this.socket.destroyed || !this.socket.writable) return;
    let parts: Buffer[];
    try {
      parts = this.codec.encodeParts(frame);
    } catch (err) {
      this.fail(err);
      return;
    }
    this.idle.touch();
    let ok = true;
    if (parts.length === 1) {
      ok = this.socket.write(parts[0]);
    } else {
      // Header and payload in one writev: no copy of the payload, one syscall.
      this.socket.cork();
      for (const part of parts) ok = this.socket.write(part);
      this.socket.uncork();
    }
    if (!ok && !this.full) {
      this.full = drained(this.socket).then(() => {
        this.full = undefined;
      });
    }
  }

  private async readLoop(socket: Readable): Promise<void> {
    await this.processFrames();
    // Not `for await (… of socket)`: leaving that loop destroys a socket whose writable side is
    // still open with an AbortError, and the socket's 'error' listeners reported it ("The
    // operation was aborted") for every peer that simply closed. The peer's EOF drops the
    // connection as before, without an error; a throw leaves it to fail() (GOAWAY, then destroy).
    for await (const chunk of socket.iterator({ destroyOnReturn: false })) {
      this.parser.push(chunk as Buffer);
      await this.processFrames();
    }
    socket.destroy();
  }

  private async processFrames(): Promise<void> {
    for (let raw = this.parser.next(); raw; raw = this.parser.next()) {
      this.idle.touch();
      if (!raw.control) {
        // DATA, the bulk of a transfer: handled without a promise unless its reader is full.
        const waiting = this.onData(raw.streamId, raw.payload, (raw.flags & 0x01) !== 0);
        if (waiting) await waiting;
        continue;
      }
      let frame: SpdyFrame | undefined;
      try {
        frame = await this.codec.decode(raw);
      } catch (err) {
        if (err instanceof SpdyProtocolError && err.streamId !== undefined && err.streamId > 0) {
          this.refuse(err.streamId, err.rstStatus, err);
          continue;
        }
        throw err;
      }
      if (frame) await this.handle(frame);
    }
  }

  private async handle(frame: SpdyFrame): Promise<void> {
    switch (frame.type) {
      case 'SYN_STREAM':
        return this.onSynStream(frame);
      case 'SYN_REPLY': {
        const stream = this.streams.get(frame.streamId);
        if (!stream) return;
        if (!stream.onReply()) return this.refuse(frame.streamId, RstStatus.STREAM_IN_USE);
        if (frame.fin) await stream.deliver(Buffer.alloc(0), true);
        return;
      }
      case 'DATA':
        return this.onData(frame.streamId, frame.data, frame.fin);
      case 'HEADERS': {
        const stream = this.streams.get(frame.streamId);
        stream?.emit('headers', frame.headers);
        if (stream && frame.fin) await stream.deliver(Buffer.alloc(0), true);
        return;
      }
      case 'RST_STREAM': {
        const stream = this.streams.get(frame.streamId);
        if (!stream) return;
        stream.terminate(
          new Error(`stream ${frame.streamId} reset by the peer (status ${frame.status})`),
          frame.status,
        );
        stream.emit('reset', frame.status);
        return;
      }
      case 'PING':
        if (frame.id % 2 === this.nextPingId % 2) {
          this.pings.get(frame.id)?.();
          this.pings.delete(frame.id);
        } else {
          await this.send(frame);
        }
        return;
      case 'GOAWAY':
        this.peerGoneAway = true;
        for (const [id, stream] of this.streams) {
          // Streams this side opened that the peer never saw are dead (SPDY/3.1 section 2.6.6).
          if (this.isLocalId(id) && id > frame.lastGoodStreamId) {
            stream.terminate(new Error('the peer went away before accepting the stream'));
          }
        }
        return;
      case 'SETTINGS':
      case 'WINDOW_UPDATE':
        // No send window is kept (see the file comment); nothing in SETTINGS changes what we do.
        return;
    }
  }

  private onData(streamId: number, data: Buffer, fin: boolean): Promise<void> | undefined {
    if (streamId === 0) throw new SpdyProtocolError('DATA frame on stream 0');
    const stream = this.streams.get(streamId);
    if (stream) return stream.deliver(data, fin);
    if (!this.isClosedStreamId(streamId)) this.refuse(streamId, RstStatus.INVALID_STREAM);
    return undefined;
  }

  private onSynStream(frame: SpdyFrame & { type: 'SYN_STREAM' }): void {
    const id = frame.streamId;
    if (id === 0 || this.isLocalId(id) || id <= this.lastPeerStreamId) {
      throw new SpdyProtocolError(`SYN_STREAM with stream id ${id} after ${this.lastPeerStreamId}`);
    }
    this.lastPeerStreamId = id;
    if (this.goneAway || !this.options.onStream) {
      this.refuse(id, RstStatus.REFUSED_STREAM);
      return;
    }
    const stream = new SpdyStream(this, id, frame.headers);
    this.streams.set(id, stream);
    if (frame.fin) stream.deliver(Buffer.alloc(0), true)?.catch(() => {});
    this.options.onStream(stream);
  }

  private refuse(streamId: number, status: number, why?: Error): void {
    if (why) this.options.onError?.(why);
    const stream = this.streams.get(streamId);
    if (stream) {
      stream.reset(status);
    } else {
      void this.send({ type: 'RST_STREAM', streamId, status });
    }
  }

  private isLocalId(id: number): boolean {
    return id % 2 === (this.options.role === 'server' ? 0 : 1);
  }

  private isClosedStreamId(id: number): boolean {
    return this.isLocalId(id) ? id < this.nextStreamId : id <= this.lastPeerStreamId;
  }

  /** A session-level protocol error: GOAWAY PROTOCOL_ERROR naming nothing more, then close. */
  private fail(err: unknown): void {
    const error = err instanceof Error ? err : new Error(String(err));
    if (this.signal.aborted) return;
    this.options.onError?.(error);
    const status =
      error instanceof SpdyProtocolError ? GoAwayStatus.PROTOCOL_ERROR : GoAwayStatus.INTERNAL_ERROR;
    this.goAway(status).finally(() => this.destroy(error));
  }

  private finish(reason?: Error): void {
    if (this.signal.aborted) return;
    this.idle.stop();
    this.draining = true;
    this.abort.abort(reason ?? new Error('SPDY session closed'));
    const why = reason ?? new Error('SPDY session closed');
    for (const stream of [...this.streams.values()]) stream.terminate(why);
    this.codec.close();
    if (this.socket.destroyed) this.resolveClosed();
    else this.socket.once('close', () => this.resolveClosed());
  }
}

const RESOLVED = Promise.resolve();

/** Resolves on 'drain', or when the stream can no longer drain. */
export function drained(stream: Duplex): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      stream.off('drain', done);
      stream.off('close', done);
      stream.off('error', done);
      resolve();
    };
    stream.on('drain', done);
    stream.on('close', done);
    stream.on('error', done);
  });
}
