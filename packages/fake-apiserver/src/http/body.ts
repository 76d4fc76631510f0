import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseYaml } from 'yaml';
import { checkDepth } from '../meta/depth.js';
import type { KObject } from '../meta/object.js';
import { ApiError, badRequest, tooLarge, unsupportedMediaType } from '../meta/status.js';
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
  const text = JSON.stringify(body);
  res.writeHead(code, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
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
