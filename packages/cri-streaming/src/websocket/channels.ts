// The Kubernetes channel protocols over one WebSocket (apimachinery's wsstream): every message
// starts with its channel number, one byte (binary variants) or one ASCII digit followed by base64
// (base64 variants). v5.channel.k8s.io adds a close signal: channel 255 with one byte naming the
// channel whose sender is done. Both sides use this class.
import { Duplex } from 'node:stream';
import { WebSocket } from 'ws';
import { IdleTimer } from '../util/idle_timer.js';

export const CLOSE_SIGNAL = 255;

/** Takes the messages buffered since the handshake and stops buffering. */
export type EarlyMessages = () => [Buffer, boolean][];

/**
 * Buffers a WebSocket's messages from the moment it opens: ws emits the messages that came in
 * the same read as the handshake right after 'open', before any awaiting code runs.
 */
export function bufferMessages(ws: WebSocket): EarlyMessages {
  const early: [Buffer, boolean][] = [];
  const keep = (data: Buffer, isBinary: boolean) => early.push([data, isBinary]);
  ws.on('message', keep);
  return () => {
    ws.off('message', keep);
    return early;
  };
}
/** A channel's input buffer before the WebSocket stops being read. */
const CHANNEL_HIGH_WATER_MARK = 1024 * 1024;

export interface ChannelSocketOptions {
  base64: boolean;
  /** v5.channel.k8s.io: the peer may send close signals, and a client sends one when it ends a channel. */
  closeSignal: boolean;
  /** Which end this is: only a client sends close signals (servers end the whole socket). */
  role: 'client' | 'server';
  /** Close the WebSocket after this long without a message in either direction (0: never). */
  idleTimeoutMs?: number;
  onError?: (err: Error) => void;
}

/**
 * One channel as a Duplex: reads what the peer sends on it, writes send on it. Never emits
 * 'error': once the WebSocket is gone reading ends and writes are dropped (see `signal`).
 */
export class ChannelStream extends Duplex {
  /** The peer will send nothing more on this channel. */
  inputEnded = false;

  constructor(
    private readonly owner: ChannelSocket,
    readonly channel: number,
  ) {
    super({ allowHalfOpen: true, readableHighWaterMark: CHANNEL_HIGH_WATER_MARK });
  }

  override _read(): void {
    this.owner.resumeFor(this);
  }

  /** @internal */
  endInput(): void {
    this.inputEnded = true;
    this.push(null);
    this.owner.resumeFor(this);
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.owner.send(this.channel, chunk).then(() => cb());
  }

  override _final(cb: (err?: Error | null) => void): void {
    this.owner.sendCloseSignal(this.channel).then(() => cb());
  }
}

export class ChannelSocket {
  /** Aborts when the WebSocket has closed. */
  readonly signal: AbortSignal;
  readonly closed: Promise<void>;
  private readonly channels = new Map<number, ChannelStream>();
  private readonly full = new Set<ChannelStream>();
  private readonly abort = new AbortController();
  private readonly idle: IdleTimer;

  constructor(
    private readonly ws: WebSocket,
    private readonly options: ChannelSocketOptions,
  ) {
    this.signal = this.abort.signal;
    this.idle = new IdleTimer(options.idleTimeoutMs, (ms) => {
      this.options.onError?.(new Error(`WebSocket idle for ${ms} ms`));
      this.ws.terminate();
    });
    this.closed = new Promise((resolve) => {
      ws.once('close', () => {
        this.idle.stop();
        this.abort.abort(new Error('WebSocket closed'));
        for (const c of this.channels.values()) c.endInput();
        resolve();
      });
    });
    ws.on('error', (err) => options.onError?.(err));
    this.idle.touch();
  }

  /**
   * Starts delivering messages, after the caller has asked for the channels it reads: first
   * `early` (what arrived since the handshake, see bufferMessages), then the live ones.
   */
  start(early: EarlyMessages): void {
    this.ws.on('message', (data: Buffer, isBinary: boolean) => this.onMessage(data, isBinary));
    for (const [data, isBinary] of early()) this.onMessage(data, isBinary);
  }

  /** The stream of `channel`; messages for channels nobody asked for are dropped. */
  stream(channel: number): ChannelStream {
    let s = this.channels.get(channel);
    if (!s) {
      s = new ChannelStream(this, channel);
      this.channels.set(channel, s);
    }
    return s;
  }

  /** Sends `data` on `channel`; resolves once written, or at once if the socket is gone. */
  send(channel: number, data: Buffer): Promise<void> {
    if (this.ws.readyState !== WebSocket.OPEN) return Promise.resolve();
    this.idle.touch();
    const message = this.options.base64
      ? String.fromCharCode(48 + channel) + data.toString('base64')
      : Buffer.concat([Buffer.of(channel), data]);
    return new Promise((resolve) => this.ws.send(message, { binary: !this.options.base64 }, () => resolve()));
  }

  /** v5, client side: tells the server this side will send nothing more on `channel`. A no-op otherwise. */
  sendCloseSignal(channel: number): Promise<void> {
    const { closeSignal, role } = this.options;
    if (!closeSignal || role !== 'client' || this.ws.readyState !== WebSocket.OPEN) return Promise.resolve();
    return new Promise((resolve) =>
      this.ws.send(Buffer.of(CLOSE_SIGNAL, channel), { binary: true }, () => resolve()),
    );
  }

  close(code = 1000, reason = ''): void {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) {
      this.ws.close(code, reason);
      // A peer that never answers the close handshake does not keep the socket.
      setTimeout(() => this.ws.terminate(), 5_000).unref();
    }
  }

  terminate(): void {
    this.ws.terminate();
  }

  /** @internal A channel's reader wants more. */
  resumeFor(stream: ChannelStream): void {
    if (this.full.delete(stream) && this.full.size === 0) this.ws.resume();
  }

  private onMessage(data: Buffer, isBinary: boolean): void {
    this.idle.touch();
    if (data.length === 0) return;
    if (this.options.closeSignal && isBinary && data[0] === CLOSE_SIGNAL) {
      if (data.length !== 2) {
        this.options.onError?.(new Error(`close signal with ${data.length - 1} bytes, expected 1`));
        this.close(1002, 'malformed close signal');
        return;
      }
      this.channels.get(data[1]!)?.endInput();
      return;
    }
    let channel: number;
    let payload: Buffer;
    if (this.options.base64) {
      channel = data[0]! - 48;
      payload = Buffer.from(data.subarray(1).toString('latin1'), 'base64');
    } else {
      channel = data[0]!;
      payload = data.subarray(1);
    }
    const stream = this.channels.get(channel);
    if (!stream || stream.inputEnded || payload.length === 0) return;
    if (!stream.push(payload) && !this.full.has(stream)) {
      this.full.add(stream);
      this.ws.pause();
    }
  }
}
