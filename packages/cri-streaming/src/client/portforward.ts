// A port-forward client: SPDY (any number of connections, each a data and an error stream), or
// the kubelet's WebSocket channel pairs (one connection per port named at connect time).
import { Duplex } from 'node:stream';
import { PORT_FORWARD_SPDY_PROTOCOLS } from '../protocol/negotiate.js';
import type { SpdySession } from '../spdy/session.js';
import { collect } from '../util/streams.js';
import { ChannelSocket, type ChannelStream } from '../websocket/channels.js';
import { dialSpdy, dialWebSocket } from './dial.js';

export type PortForwardTransport = 'spdy' | 'websocket';

export interface PortForwardClientOptions {
  transport?: PortForwardTransport;
  /** WebSocket channel transport only: the ports, sent as `port` query parameters. */
  ports?: readonly number[];
  /** WebSocket channel transport: the subprotocol to offer (default v4.channel.k8s.io). */
  protocol?: string;
  signal?: AbortSignal;
}

export interface ForwardedConnection {
  /** Bytes to and from the pod's port. Ending it half-closes (SPDY; a WebSocket cannot). */
  stream: Duplex;
  /** What the server reported on the error stream once it closed ('' for nothing). */
  error: Promise<string>;
}

export class PortForwardClient {
  private nextRequestId = 0;
  private readonly opened = new Set<number>();
  private data: Duplex[] = [];
  private errors: Promise<string>[] = [];

  private constructor(
    private readonly session: SpdySession | undefined,
    private readonly channels: ChannelSocket | undefined,
    private readonly ports: readonly number[],
  ) {}

  /** Connects to a URL from CRI PortForward. */
  static async connect(url: string, options: PortForwardClientOptions = {}): Promise<PortForwardClient> {
    const transport = options.transport ?? 'spdy';
    if (transport === 'spdy') {
      const { session } = await dialSpdy(url, PORT_FORWARD_SPDY_PROTOCOLS, options.signal);
      return new PortForwardClient(session, undefined, []);
    }
    const ports = options.ports ?? [];
    const target = new URL(url);
    for (const p of ports) target.searchParams.append('port', String(p));
    const { ws, protocol, early } = await dialWebSocket(
      target.href,
      [options.protocol ?? 'v4.channel.k8s.io'],
      options.signal,
    );
    const channels = new ChannelSocket(ws, {
      base64: protocol.includes('base64'),
      closeSignal: false,
      role: 'client',
    });
    const client = new PortForwardClient(undefined, channels, ports);
    // The server's first message on each channel can come with the handshake: set them all up.
    client.data = ports.map((_, i) => new PortPrefixed(channels.stream(2 * i)));
    client.errors = ports.map((_, i) => collect(new PortPrefixed(channels.stream(2 * i + 1))));
    channels.start(early);
    return client;
  }

  /** Aborts when the connection to the server is gone. */
  get signal(): AbortSignal {
    return (this.session?.signal ?? this.channels?.signal)!;
  }

  /** A connection to `port` in the pod. */
  async open(port: number): Promise<ForwardedConnection> {
    if (this.session) {
      const requestid = [String(this.nextRequestId++)];
      const headers = { port: [String(port)], requestid };
      const error = await this.session.openStream({ ...headers, streamtype: ['error'] });
      error.end();
      const text = collect(error);
      const stream = await this.session.openStream({ ...headers, streamtype: ['data'] });
      return { stream, error: text };
    }
    const i = this.ports.indexOf(port);
    if (i < 0 || this.opened.has(i)) {
      throw new Error(
        `port ${port} was not named at connect time, or is already open (WebSocket: one connection per port)`,
      );
    }
    this.opened.add(i);
    return { stream: this.data[i]!, error: this.errors[i]! };
  }

  async close(): Promise<void> {
    if (this.session) await this.session.end();
    if (this.channels) {
      this.channels.close();
      await this.channels.closed;
    }
  }
}

/** A WebSocket port-forward channel without the two-byte port number the server sends first. */
class PortPrefixed extends Duplex {
  private skip = 2;

  constructor(private readonly inner: ChannelStream) {
    super({ allowHalfOpen: true });
    inner.on('data', (chunk: Buffer) => {
      const n = Math.min(this.skip, chunk.length);
      this.skip -= n;
      if (chunk.length > n && !this.push(chunk.subarray(n))) inner.pause();
    });
    inner.once('end', () => this.push(null));
  }

  override _read(): void {
    this.inner.resume();
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.inner.write(chunk, () => cb());
  }

  override _final(cb: (err?: Error | null) => void): void {
    cb();
  }
}
