// A D-Bus connection over a unix socket: EXTERNAL authentication, Hello, method calls matched to
// their replies, and signals to whoever listens. It is the godbus subset the kubelet's
// nodeshutdown/systemd package uses.
import { connect, type Socket } from 'node:net';
import {
  decodeMessage,
  encodeMessage,
  type Message,
  MessageType,
  messageLength,
  type OutgoingMessage,
  type Value,
} from './wire.js';

export const SYSTEM_BUS_DEFAULT_ADDRESS = 'unix:path=/var/run/dbus/system_bus_socket';

/** The system bus's address, as libdbus finds it: DBUS_SYSTEM_BUS_ADDRESS, else the default socket. */
export function systemBusAddress(env: NodeJS.ProcessEnv = process.env): string {
  return env.DBUS_SYSTEM_BUS_ADDRESS || SYSTEM_BUS_DEFAULT_ADDRESS;
}

/** The socket path of the first unix:path= (or abstract=) entry of a bus address. */
export function socketPath(address: string): string {
  for (const entry of address.split(';')) {
    const [transport, params = ''] = entry.split(/:(.*)/s);
    if (transport !== 'unix') continue;
    const kv = new Map(params.split(',').map((p) => p.split('=') as [string, string]));
    const path = kv.get('path');
    if (path) return decodeURIComponent(path);
    const abstract = kv.get('abstract');
    if (abstract) return `\0${decodeURIComponent(abstract)}`;
  }
  throw new Error(`no unix socket in D-Bus address ${JSON.stringify(address)}`);
}

export class DBusError extends Error {
  constructor(
    readonly errorName: string,
    message: string,
  ) {
    super(`${errorName}: ${message}`);
  }
}

/** A method call: `signature` types `body`. */
export type Call = Omit<OutgoingMessage, 'type' | 'serial'> & {
  destination: string;
  path: string;
  interface: string;
  member: string;
};

export class DBusConnection {
  private serial = 0;
  private buffer = Buffer.alloc(0);
  private readonly pending = new Map<number, { resolve: (m: Message) => void; reject: (e: Error) => void }>();
  private readonly signalListeners = new Set<(m: Message) => void>();
  private readonly callListeners = new Set<(m: Message) => void>();
  private readonly closeListeners = new Set<() => void>();
  private closed = false;

  private constructor(private readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', () => socket.destroy());
    socket.on('close', () => this.handleClose());
  }

  /** Connects, authenticates as this process's uid, and says Hello. */
  static async open(address: string): Promise<DBusConnection> {
    const socket = connect(socketPath(address));
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    try {
      await authenticate(socket);
    } catch (err) {
      socket.destroy();
      throw err;
    }
    const conn = new DBusConnection(socket);
    await conn.call({
      destination: 'org.freedesktop.DBus',
      path: '/org/freedesktop/DBus',
      interface: 'org.freedesktop.DBus',
      member: 'Hello',
    });
    return conn;
  }

  /** The reply's values; a D-Bus error reply rejects with DBusError. */
  call(call: Call): Promise<Value[]> {
    if (this.closed) return Promise.reject(new Error('D-Bus connection closed'));
    const serial = ++this.serial;
    return new Promise<Message>((resolve, reject) => {
      this.pending.set(serial, { resolve, reject });
      this.socket.write(encodeMessage({ ...call, type: MessageType.MethodCall, serial }));
    }).then((reply) => {
      if (reply.type === MessageType.Error)
        throw new DBusError(
          reply.errorName ?? 'org.freedesktop.DBus.Error.Failed',
          String(reply.body[0] ?? ''),
        );
      return reply.body;
    });
  }

  /** Signals, and method calls made to this connection (a service answers them with send()). */
  onSignal(listener: (m: Message) => void): void {
    this.signalListeners.add(listener);
  }

  onMethodCall(listener: (m: Message) => void): void {
    this.callListeners.add(listener);
  }

  /** Sends a reply or a signal; the serial is this connection's next. */
  send(msg: Omit<OutgoingMessage, 'serial'>): void {
    this.socket.write(encodeMessage({ ...msg, serial: ++this.serial }));
  }

  /** Called once when the connection is gone (the bus went away, or close()). */
  onClose(listener: () => void): void {
    if (this.closed) listener();
    else this.closeListeners.add(listener);
  }

  close(): void {
    this.socket.destroy();
  }

  private handleClose(): void {
    if (this.closed) return;
    this.closed = true;
    for (const p of this.pending.values()) p.reject(new Error('D-Bus connection closed'));
    this.pending.clear();
    for (const l of this.closeListeners) l();
  }

  private onData(chunk: Buffer): void {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    for (;;) {
      let length: number | undefined;
      let msg: Message;
      try {
        length = messageLength(this.buffer);
        if (length === undefined || this.buffer.length < length) return;
        msg = decodeMessage(this.buffer.subarray(0, length));
      } catch (err) {
        // A message this client cannot read leaves the stream unreadable from here on.
        this.socket.destroy(err as Error);
        return;
      }
      this.buffer = this.buffer.subarray(length);
      if (msg.type === MessageType.Signal) for (const l of this.signalListeners) l(msg);
      else if (msg.type === MessageType.MethodCall) for (const l of this.callListeners) l(msg);
      else if (msg.replySerial !== undefined) {
        const p = this.pending.get(msg.replySerial);
        this.pending.delete(msg.replySerial);
        p?.resolve(msg);
      }
    }
  }
}

/** SASL EXTERNAL with this process's uid, then BEGIN. */
async function authenticate(socket: Socket): Promise<void> {
  const uid = Buffer.from(String(process.getuid?.() ?? 0), 'ascii').toString('hex');
  const line = new Promise<string>((resolve, reject) => {
    let got = '';
    const onData = (chunk: Buffer) => {
      got += chunk.toString('ascii');
      const end = got.indexOf('\r\n');
      if (end < 0) return;
      socket.off('data', onData);
      socket.off('close', onClose);
      resolve(got.slice(0, end));
    };
    const onClose = () => reject(new Error('D-Bus connection closed during authentication'));
    socket.on('data', onData);
    socket.once('close', onClose);
  });
  socket.write(`\0AUTH EXTERNAL ${uid}\r\n`);
  const answer = await line;
  if (!answer.startsWith('OK ')) throw new Error(`D-Bus authentication failed: ${answer}`);
  socket.write('BEGIN\r\n');
}
