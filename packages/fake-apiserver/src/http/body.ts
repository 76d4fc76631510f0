import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseYaml } from 'yaml';
import { checkDepth } from '../meta/depth.js';
import type { KObject } from '../meta/object.js';
import { ApiError, badRequest, tooLarge, unsupportedMediaType } from '../meta/status.js';
import { toJson } from '../storage/json.js';
import { decodeKubernetesProtobuf } from './protobuf.js';

/** kube-apiserver's default limit for a request body (3 MiB). */
export const DEFAULT_MAX_BODY = 3 * 1024 * 1024;

/** How deep a YAML body may nest: the YAML parser recurses per level (see yamlDepthBound). */
export const MAX_YAML_DEPTH = 200;

/**
 * An upper bound of a YAML text's nesting, found without parsing it: the flow brackets open at
 * a point plus the indentation and compact "- " indicators of its line. The parser recurses per
 * level and overflows its stack at a few hundred flow levels, and a stack overflow that lands in
 * V8's regular expression compiler aborts the process, so a deep text must never reach it.
 */
export function yamlDepthBound(text: string): number {
  let flow = 0;
  let max = 0;
  for (const line of text.split('\n')) {
    const indent = /^[ \t-]*/.exec(line)![0].length;
    max = Math.max(max, flow + indent);
    for (const ch of line) {
      if (ch === '[' || ch === '{') max = Math.max(max, ++flow + indent);
      else if ((ch === ']' || ch === '}') && flow > 0) flow--;
    }
  }
  return max;
}

/** JSON.parse of a body (a JSON parser does not recurse), refused with 400 when malformed or too deep. */
export function parseJson(raw: Buffer, what: string): unknown {
  let v: unknown;
  try {
    v = JSON.parse(raw.toString('utf8'));
  } catch (e) {
    throw badRequest(`${what}: ${(e as Error).message}`);
  }
  checkDepth(v);
  return v;
}

export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? '0');
  if (declared > limit) {
    req.resume();
    throw tooLarge(limit);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      req.resume();
      throw tooLarge(limit);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

export const mediaType = (req: IncomingMessage) =>
  (req.headers['content-type'] ?? 'application/json').split(';')[0]!.trim();

/** Decodes a JSON (or YAML) body; protobuf bodies are refused with 415 since only JSON is spoken. */
export function decodeObject(raw: Buffer, contentType: string): unknown {
  if (contentType === 'application/yaml') {
    const text = raw.toString('utf8');
    if (yamlDepthBound(text) > MAX_YAML_DEPTH)
      throw badRequest(`error converting YAML to JSON: nested deeper than ${MAX_YAML_DEPTH} levels`);
    let v: unknown;
    try {
      // Problems are answered as errors, not printed as the server's own warnings.
      v = parseYaml(text, { logLevel: 'error' });
    } catch (e) {
      throw badRequest(`error converting YAML to JSON: ${(e as Error).message}`);
    }
    checkDepth(v);
    return v;
  }
  if (contentType === 'application/vnd.kubernetes.protobuf') return decodeKubernetesProtobuf(raw);
  if (contentType !== 'application/json' && !contentType.endsWith('+json')) {
    throw unsupportedMediaType(contentType, [
      'application/json',
      'application/yaml',
      'application/vnd.kubernetes.protobuf',
    ]);
  }
  if (raw.length === 0) throw badRequest('the request body is empty');
  return parseJson(raw, 'the object provided is unrecognized');
}

export function asObject(v: unknown, what: string): KObject {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    throw badRequest(`the object provided is unrecognized (expected a ${what} object)`);
  }
  return v as KObject;
}

/** Warning headers, as the apiserver sends for fieldValidation=Warn. */
export function addWarnings(res: ServerResponse, warnings: string[]) {
  if (warnings.length === 0) return;
  res.setHeader(
    'Warning',
    warnings.map((w) => `299 - ${JSON.stringify(w)}`),
  );
}

export function sendJson(res: ServerResponse, code: number, body: unknown, contentType = 'application/json') {
  send(res, code, JSON.stringify(body), contentType);
}

/** A stored object (immutable): its JSON is made once, when it was written. */
export function sendStored(res: ServerResponse, code: number, obj: KObject) {
  send(res, code, toJson(obj));
}

function send(res: ServerResponse, code: number, body: string | Buffer, contentType = 'application/json') {
  res.writeHead(code, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

/**
 * Writes `chunks` to a response now, in one writev. Node's http corks a response's socket on its
 * first write of a tick and uncorks it on the next tick, so a loop writing many responses in turns
 * of a few milliseconds did its syscalls after each turn, all at once: at 5 000 nodes (a profiled
 * run) a watch flush round's 500 writevs took 36 % of the server's time outside the turns' budget,
 * and every request waited behind them. Uncorked here, each write costs its turn.
 */
export function writeNow(
  res: ServerResponse,
  chunks: Buffer | readonly (string | Buffer)[],
  written?: () => void,
): void {
  const list = Buffer.isBuffer(chunks) ? [chunks] : chunks;
  for (let i = 0; i < list.length; i++) res.write(list[i]!, i === list.length - 1 ? written : undefined);
  // Undoes http's cork; nothing to undo once the socket is gone.
  if (res.socket?.writableCorked) res.socket.uncork();
}

/**
 * Items per slice of a streamed list. A LIST of 150 000 pods in one piece is hundreds of MB
 * copied while nothing else runs; in slices, requests and watch events go on between them and
 * memory stays bounded by the client's reading.
 */
export const LIST_SLICE = 500;
/**
 * How long a list is copied out before other work gets a turn: a write that arrives meanwhile
 * waits up to this long, for every turn of a LIST of all pods that takes seconds.
 */
export const LIST_TURN_MS = 2;
/** What a list may have queued for a slow client before it waits for the socket to drain. */
const LIST_BUFFERED = 8 * 1024 * 1024;

/**
 * Buffers that a list's JSON is encoded into, reused once the socket has taken them. Joining a
 * slice's texts into one string, measuring it and encoding it again was most of a LIST's CPU,
 * and a new buffer per slice made a LIST of every pod 170 MiB of memory outside V8's heap, which
 * V8 answers by marking on the main thread (every request then waits). The stored texts stay
 * strings in the heap for the same reason: kept as buffers, they were 470-570 MiB outside it, and
 * Mark-Compacts forced by that memory held the loop 0.3-0.8 s at 5 000 nodes.
 */
const spare: Buffer[] = [];
const SPARE_BUFFERS = 16;
const SPARE_BYTES = 1024 * 1024;

/** Encodes texts into spare buffers and writes each buffer out as one chunk. */
class ListWriter {
  private buf: Buffer | undefined;
  private at = 0;

  constructor(private readonly res: ServerResponse) {}

  add(text: string): void {
    // UTF-8 takes at most 3 bytes per UTF-16 unit: write out first what might not leave room.
    const most = text.length * 3;
    if (this.buf !== undefined && this.at + most > this.buf.length) this.flush(false);
    if (this.buf === undefined) {
      this.buf =
        most <= SPARE_BYTES
          ? (spare.pop() ?? Buffer.allocUnsafeSlow(SPARE_BYTES))
          : Buffer.allocUnsafeSlow(most);
      this.at = 0;
    }
    this.at += this.buf.write(text, this.at);
  }

  /** Writes out what was added (and ends the response when `end`). */
  flush(end: boolean): void {
    const buf = this.buf;
    this.buf = undefined;
    if (buf === undefined) {
      if (end) this.res.end();
      return;
    }
    const taken = () => {
      if (buf.length === SPARE_BYTES && spare.length < SPARE_BUFFERS) spare.push(buf);
    };
    if (end) this.res.end(buf.subarray(0, this.at), taken);
    else writeNow(this.res, buf.subarray(0, this.at), taken);
  }

  /** Items `from` to `to` of a JSON array: their stored JSON, commas between. */
  items(items: KObject[], from: number, to: number): void {
    for (let i = from; i < to; i++) {
      if (i > 0) this.add(',');
      this.add(toJson(items[i]!));
    }
  }
}

/**
 * Sends `{...head, items}` byte for byte as `sendJson` would, from the items' stored JSON (no
 * item is serialised again). A list longer than LIST_SLICE is chunked, a slice at a time, yielding
 * every LIST_TURN_MS and waiting while the client is LIST_BUFFERED behind. The items are immutable
 * stored objects, so what is sent is the state at the list's resourceVersion.
 */
export async function sendJsonList(res: ServerResponse, head: KObject, items: KObject[]): Promise<void> {
  // '{..."items":[]}' without its closing ']}'.
  const open = JSON.stringify({ ...head, items: [] }).slice(0, -2);
  const out = new ListWriter(res);
  if (items.length <= LIST_SLICE) {
    let size = Buffer.byteLength(open) + Math.max(items.length - 1, 0) + 2;
    for (const o of items) size += Buffer.byteLength(toJson(o));
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': size });
    out.add(open);
    out.items(items, 0, items.length);
    out.add(']}');
    out.flush(true);
    return;
  }
  res.writeHead(200, { 'Content-Type': 'application/json' });
  out.add(open);
  let turn = performance.now();
  for (let i = 0; i < items.length; i += LIST_SLICE) {
    const behind = res.writableLength > LIST_BUFFERED;
    if (behind || performance.now() - turn > LIST_TURN_MS) {
      await (behind ? drained(res) : new Promise(setImmediate));
      if (res.destroyed) return;
      turn = performance.now();
    }
    out.items(items, i, Math.min(i + LIST_SLICE, items.length));
    out.flush(false);
  }
  out.add(']}');
  out.flush(true);
}

function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

export function sendError(res: ServerResponse, err: unknown) {
  const api =
    err instanceof ApiError
      ? err
      : new ApiError(
          500,
          'InternalError',
          `Internal error occurred: ${(err as Error)?.message ?? String(err)}`,
        );
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendJson(res, api.code, api.toStatus());
}
