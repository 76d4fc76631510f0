// The D-Bus wire format: little-endian messages of the basic types, arrays, structs and
// variants, which is all logind's manager interface uses. Node cannot receive file descriptors
// over a socket, so a message carrying one is refused.

export const MessageType = { MethodCall: 1, MethodReturn: 2, Error: 3, Signal: 4 } as const;

export type Value = string | number | bigint | boolean | Value[];

export interface Message {
  type: number;
  serial: number;
  path?: string;
  interface?: string;
  member?: string;
  errorName?: string;
  replySerial?: number;
  destination?: string;
  sender?: string;
  signature?: string;
  body: Value[];
}

type HeaderKey =
  | 'path'
  | 'interface'
  | 'member'
  | 'errorName'
  | 'replySerial'
  | 'destination'
  | 'sender'
  | 'signature';

/** The header fields: their codes, the Message keys they fill, and their types. */
const HEADER_FIELDS: readonly [code: number, key: HeaderKey, type: string][] = [
  [1, 'path', 'o'],
  [2, 'interface', 's'],
  [3, 'member', 's'],
  [4, 'errorName', 's'],
  [5, 'replySerial', 'u'],
  [6, 'destination', 's'],
  [7, 'sender', 's'],
  [8, 'signature', 'g'],
];

const pad = (n: number, align: number) => (align - (n % align)) % align;

class Writer {
  private bytes: number[] = [];

  get length(): number {
    return this.bytes.length;
  }
  align(n: number): void {
    for (let i = pad(this.bytes.length, n); i > 0; i--) this.bytes.push(0);
  }
  byte(v: number): void {
    this.bytes.push(v & 0xff);
  }
  u32(v: number): void {
    this.align(4);
    this.bytes.push(v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, (v >>> 24) & 0xff);
  }
  string(s: string): void {
    const b = Buffer.from(s, 'utf8');
    this.u32(b.length);
    this.bytes.push(...b, 0);
  }
  signature(s: string): void {
    this.byte(s.length);
    this.bytes.push(...Buffer.from(s, 'ascii'), 0);
  }
  u64(v: bigint): void {
    for (let i = 0n; i < 64n; i += 8n) this.bytes.push(Number((v >> i) & 0xffn));
  }
  setU32(at: number, v: number): void {
    this.bytes.splice(at, 4, v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, (v >>> 24) & 0xff);
  }
  toBuffer(): Buffer {
    return Buffer.from(this.bytes);
  }
}

/** A variant on the wire: its signature and its value. */
export interface Variant {
  signature: string;
  value: Value;
}

export type OutgoingMessage = Omit<Message, 'body'> & { body?: (Value | Variant)[] };

/** Encodes a message; `signature` types its body (a variant argument is a {signature, value}). */
export function encodeMessage(msg: OutgoingMessage): Buffer {
  const sig = msg.signature ?? '';
  const body = new Writer();
  writeValues(body, sig, msg.body ?? []);
  const w = new Writer();
  w.byte(0x6c); // 'l': little-endian
  w.byte(msg.type);
  w.byte(0);
  w.byte(1);
  w.u32(body.length);
  w.u32(msg.serial);
  const fieldsAt = w.length;
  w.u32(0);
  const start = w.length;
  const header: Partial<Record<HeaderKey, Value>> = { ...msg, ...(sig ? { signature: sig } : {}) };
  for (const [code, key, type] of HEADER_FIELDS) {
    const value = header[key];
    if (value === undefined || value === '') continue;
    w.align(8);
    w.byte(code);
    w.signature(type);
    writeValue(w, type, value);
  }
  w.setU32(fieldsAt, w.length - start);
  w.align(8);
  return Buffer.concat([w.toBuffer(), body.toBuffer()]);
}

function writeValues(w: Writer, sig: string, values: readonly (Value | Variant)[]): void {
  let i = 0;
  for (const v of values) {
    const end = completeTypeEnd(sig, i);
    writeValue(w, sig.slice(i, end), v);
    i = end;
  }
  if (i !== sig.length) throw new Error(`D-Bus signature ${JSON.stringify(sig)} does not match its values`);
}

function writeValue(w: Writer, type: string, v: Value | Variant): void {
  switch (type[0]) {
    case 'y':
      w.byte(Number(v));
      return;
    case 'b':
      w.u32(v ? 1 : 0);
      return;
    case 'i':
    case 'u':
      w.u32(Number(v) >>> 0);
      return;
    case 'x':
    case 't':
      w.align(8);
      w.u64(BigInt.asUintN(64, BigInt(v as bigint | number)));
      return;
    case 's':
    case 'o':
      w.string(String(v));
      return;
    case 'g':
      w.signature(String(v));
      return;
    case 'v': {
      const { signature, value } = v as Variant;
      w.signature(signature);
      writeValue(w, signature, value);
      return;
    }
    case 'a': {
      w.u32(0);
      const lengthAt = w.length - 4;
      const elem = type.slice(1);
      w.align(alignment(elem));
      const start = w.length;
      for (const item of v as Value[]) writeValue(w, elem, item);
      w.setU32(lengthAt, w.length - start);
      return;
    }
    case '(':
      w.align(8);
      writeValues(w, type.slice(1, -1), v as Value[]);
      return;
    default:
      throw new Error(`unsupported D-Bus type ${JSON.stringify(type)}`);
  }
}

class Reader {
  constructor(
    private readonly buf: Buffer,
    public pos = 0,
  ) {}
  align(n: number): void {
    this.pos += pad(this.pos, n);
  }
  byte(): number {
    return this.buf.readUInt8(this.pos++);
  }
  u32(): number {
    this.align(4);
    const v = this.buf.readUInt32LE(this.pos);
    this.pos += 4;
    return v;
  }
  string(): string {
    const len = this.u32();
    const s = this.buf.toString('utf8', this.pos, this.pos + len);
    this.pos += len + 1;
    return s;
  }
  signature(): string {
    const len = this.byte();
    const s = this.buf.toString('ascii', this.pos, this.pos + len);
    this.pos += len + 1;
    return s;
  }

  /** The values of a signature of complete types. */
  values(sig: string): Value[] {
    const out: Value[] = [];
    let i = 0;
    while (i < sig.length) {
      const end = completeTypeEnd(sig, i);
      out.push(this.value(sig.slice(i, end)));
      i = end;
    }
    return out;
  }

  private value(type: string): Value {
    switch (type[0]) {
      case 'y':
        return this.byte();
      case 'b':
        return this.u32() !== 0;
      case 'n':
      case 'q': {
        this.align(2);
        const v = type === 'n' ? this.buf.readInt16LE(this.pos) : this.buf.readUInt16LE(this.pos);
        this.pos += 2;
        return v;
      }
      case 'i':
        this.align(4);
        this.pos += 4;
        return this.buf.readInt32LE(this.pos - 4);
      case 'u':
        return this.u32();
      case 'x':
      case 't': {
        this.align(8);
        const v = type === 'x' ? this.buf.readBigInt64LE(this.pos) : this.buf.readBigUInt64LE(this.pos);
        this.pos += 8;
        return v;
      }
      case 'd':
        this.align(8);
        this.pos += 8;
        return this.buf.readDoubleLE(this.pos - 8);
      case 's':
      case 'o':
        return this.string();
      case 'g':
        return this.signature();
      case 'v':
        return this.value(this.signature());
      case 'h':
        throw new Error('unix file descriptors cannot be received');
      case 'a': {
        const len = this.u32();
        const elem = type.slice(1);
        this.align(alignment(elem));
        const end = this.pos + len;
        const items: Value[] = [];
        while (this.pos < end) items.push(this.value(elem));
        return items;
      }
      case '(':
        this.align(8);
        return this.values(type.slice(1, -1));
      default:
        throw new Error(`unsupported D-Bus type ${JSON.stringify(type)}`);
    }
  }
}

function alignment(type: string): number {
  switch (type[0]) {
    case 'n':
    case 'q':
      return 2;
    case 'x':
    case 't':
    case 'd':
    case '(':
    case '{':
      return 8;
    case 'y':
    case 'g':
    case 'v':
      return 1;
    default:
      return 4;
  }
}

/** Where the complete type starting at `i` ends. */
function completeTypeEnd(sig: string, i: number): number {
  const c = sig[i];
  if (c === 'a') return completeTypeEnd(sig, i + 1);
  if (c === '(' || c === '{') {
    const close = c === '(' ? ')' : '}';
    let j = i + 1;
    while (sig[j] !== close) {
      if (j >= sig.length) throw new Error(`unbalanced D-Bus signature ${JSON.stringify(sig)}`);
      j = completeTypeEnd(sig, j);
    }
    return j + 1;
  }
  return i + 1;
}

/** The length of the message at the start of `buf`, or undefined while its header is incomplete. */
export function messageLength(buf: Buffer): number | undefined {
  if (buf.length < 16) return undefined;
  if (buf[0] !== 0x6c) throw new Error('big-endian D-Bus messages are not supported');
  const bodyLength = buf.readUInt32LE(4);
  const fieldsLength = buf.readUInt32LE(12);
  return 16 + fieldsLength + pad(16 + fieldsLength, 8) + bodyLength;
}

/** Decodes one complete message (messageLength bytes). */
export function decodeMessage(buf: Buffer): Message {
  const r = new Reader(buf, 1);
  const type = r.byte();
  r.byte();
  r.byte();
  const bodyLength = r.u32();
  const serial = r.u32();
  const fieldsLength = r.u32();
  const fieldsEnd = r.pos + fieldsLength;
  const msg: Message = { type, serial, body: [] };
  while (r.pos < fieldsEnd) {
    r.align(8);
    const code = r.byte();
    const [value] = r.values('v');
    const key = HEADER_FIELDS.find(([c]) => c === code)?.[1];
    if (key) Object.assign(msg, { [key]: value });
  }
  r.align(8);
  if (bodyLength > 0 && msg.signature) msg.body = r.values(msg.signature);
  return msg;
}
