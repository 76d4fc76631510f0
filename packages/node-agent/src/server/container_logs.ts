// GET /containerLogs/{namespace}/{pod}/{container}: the kubelet's log endpoint, which `kubectl
// logs` reaches through the API server's pods/log proxy. It reads the CRI log file the runtime
// writes for the container ("<RFC3339Nano> <stream> <P|F> <text>" per line) and applies the
// PodLogOptions the API server passes on: tailLines, limitBytes, timestamps, previous,
// sinceSeconds / sinceTime and follow.
import { type FileHandle, open, stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type Clock, realClock } from '@kh/apimachinery';
import type { ContainerStatus, Runtime } from '@kh/runtime-manager';
import type { V1ContainerStatus, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { bareContainerId } from '../types/container_id.js';

export interface LogOptions {
  tailLines?: number;
  limitBytes?: number;
  timestamps: boolean;
  previous: boolean;
  /** Only records at or after this time (epoch ms), from sinceSeconds or sinceTime. */
  sinceMs?: number;
  follow: boolean;
}

/** A request the endpoint refuses, answered as a Kubernetes Status with this code. */
export class LogRequestError extends Error {
  constructor(
    readonly code: 400 | 404,
    message: string,
  ) {
    super(message);
  }
}

function nonNegativeInt(q: URLSearchParams, name: string, min: number): number | undefined {
  const raw = q.get(name);
  if (raw === null) return undefined;
  const n = Number(raw);
  if (!/^-?\d+$/.test(raw) || !Number.isSafeInteger(n))
    throw new LogRequestError(400, `${name}: Invalid value: "${raw}": must be an integer`);
  if (n < min)
    throw new LogRequestError(
      400,
      `${name}: Invalid value: ${n}: must be ${min === 0 ? 'greater than or equal to 0' : 'greater than 0'}`,
    );
  return n;
}

/** A boolean parameter; a bare `?follow` counts as true. */
function bool(q: URLSearchParams, name: string): boolean {
  const raw = q.get(name);
  if (raw === null || raw === 'false' || raw === '0') return false;
  if (raw === '' || raw === 'true' || raw === '1') return true;
  throw new LogRequestError(400, `${name}: Invalid value: "${raw}": must be true or false`);
}

/** PodLogOptions from the query string, validated as the API server validates them. */
export function parseLogOptions(q: URLSearchParams, nowMs: number): LogOptions {
  const tailLines = nonNegativeInt(q, 'tailLines', 0);
  const limitBytes = nonNegativeInt(q, 'limitBytes', 1);
  const sinceSeconds = nonNegativeInt(q, 'sinceSeconds', 1);
  const sinceTime = q.get('sinceTime');
  if (sinceSeconds !== undefined && sinceTime !== null)
    throw new LogRequestError(400, 'at most one of sinceTime or sinceSeconds may be specified');
  let sinceMs: number | undefined;
  if (sinceSeconds !== undefined) sinceMs = nowMs - sinceSeconds * 1000;
  if (sinceTime !== null) {
    sinceMs = Date.parse(sinceTime);
    if (Number.isNaN(sinceMs))
      throw new LogRequestError(400, `sinceTime: Invalid value: "${sinceTime}": must be an RFC3339 time`);
  }
  return {
    ...(tailLines !== undefined ? { tailLines } : {}),
    ...(limitBytes !== undefined ? { limitBytes } : {}),
    ...(sinceMs !== undefined ? { sinceMs } : {}),
    timestamps: bool(q, 'timestamps'),
    previous: bool(q, 'previous'),
    follow: bool(q, 'follow'),
  };
}

export interface LogRecord {
  /** The timestamp as the runtime wrote it (RFC3339Nano). */
  time: string;
  ms: number;
  stream: 'stdout' | 'stderr';
  /** A partial record (P) continues in the next one; a full one (F) ends a line. */
  partial: boolean;
  text: string;
}

/** One CRI log line; undefined for a line in another format (skipped, like the kubelet does). */
export function parseLogLine(line: string): LogRecord | undefined {
  const m = /^(\S+) (stdout|stderr) ([PF])(?: (.*))?$/s.exec(line);
  if (!m) return undefined;
  const ms = Date.parse(m[1] ?? '');
  if (Number.isNaN(ms)) return undefined;
  return {
    time: m[1] ?? '',
    ms,
    stream: m[2] as 'stdout' | 'stderr',
    partial: m[3] === 'P',
    text: m[4] ?? '',
  };
}

/** What the client sees of a record: the text, a newline after a full line, the timestamp if asked. */
export function formatRecord(r: LogRecord, timestamps: boolean): string {
  return `${timestamps ? `${r.time} ` : ''}${r.text}${r.partial ? '' : '\n'}`;
}

/** Records of a log file's text, after sinceMs and within the last tailLines. */
export function selectRecords(text: string, opts: Pick<LogOptions, 'sinceMs' | 'tailLines'>): LogRecord[] {
  let records = text
    .split('\n')
    .map(parseLogLine)
    .filter((r): r is LogRecord => r !== undefined);
  if (opts.sinceMs !== undefined) {
    const since = opts.sinceMs;
    records = records.filter((r) => r.ms >= since);
  }
  if (opts.tailLines !== undefined) records = opts.tailLines === 0 ? [] : records.slice(-opts.tailLines);
  return records;
}

export interface ContainerLogsDeps {
  /** The pods this kubelet runs (the pod manager's view), to find namespace/name. */
  getPods(): V1Pod[];
  runtime: Pick<Runtime, 'getPodStatus'>;
  /** The status manager's latest pod status; the pod's own status is used without it. */
  getPodStatus?(uid: string): V1PodStatus | undefined;
  clock?: Clock;
  /** How often a follow checks the file for new lines. Default 250 ms. */
  followPollMs?: number;
}

export class ContainerLogs {
  constructor(private readonly deps: ContainerLogsDeps) {}

  /** Serves GET /containerLogs/{namespace}/{pod}/{container}. */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const url = new URL(req.url ?? '/', 'http://x');
      const parts = url.pathname.split('/').filter((p) => p !== '');
      if (parts.length !== 4)
        throw new LogRequestError(400, 'path must be /containerLogs/{namespace}/{pod}/{container}');
      const [namespace, podName, container] = parts.slice(1).map(decodeURIComponent) as [
        string,
        string,
        string,
      ];
      const clock = this.deps.clock ?? realClock;
      const opts = parseLogOptions(url.searchParams, clock.now());
      const { path, isRunning } = await this.locate(namespace, podName, container, opts.previous);
      await this.stream(req, res, path, opts, isRunning);
    } catch (e) {
      if (!(e instanceof LogRequestError)) throw e;
      writeStatus(res, e.code, e.message);
    }
  }

  /** The log file of the container instance asked for, as the runtime reports it. */
  private async locate(
    namespace: string,
    podName: string,
    container: string,
    previous: boolean,
  ): Promise<{ path: string; isRunning: () => Promise<boolean> }> {
    const pod = this.deps
      .getPods()
      .find((p) => p.metadata?.namespace === namespace && p.metadata?.name === podName);
    if (!pod) throw new LogRequestError(404, `pod "${podName}" in namespace "${namespace}" not found`);
    const spec = pod.spec;
    const known = [
      ...(spec?.containers ?? []),
      ...(spec?.initContainers ?? []),
      ...(spec?.ephemeralContainers ?? []),
    ].some((c) => c.name === container);
    if (!known) throw new LogRequestError(404, `container "${container}" not found in pod "${podName}"`);
    const uid = pod.metadata?.uid ?? '';
    const instances = async (): Promise<ContainerStatus[]> =>
      (await this.deps.runtime.getPodStatus(uid, podName, namespace)).containerStatuses.filter(
        (c) => c.name === container,
      );
    const podStatus = this.deps.getPodStatus?.(uid) ?? pod.status;
    const status = [
      ...(podStatus?.containerStatuses ?? []),
      ...(podStatus?.initContainerStatuses ?? []),
      ...(podStatus?.ephemeralContainerStatuses ?? []),
    ].find((c) => c.name === container);
    const wanted = status && statusContainerId(status, previous);
    // As the kubelet does, the instance is the one the pod status names: --previous is
    // lastState.terminated, and a container waiting in back-off shows its last run. Without a
    // status yet, the runtime manager's order (newest first) decides.
    const all = await instances();
    const found =
      wanted !== undefined
        ? all.find((c) => c.id.id === bareContainerId(wanted))
        : status === undefined
          ? all[previous ? 1 : 0]
          : undefined;
    if (!found?.logPath) {
      throw new LogRequestError(
        400,
        previous
          ? `previous terminated container "${container}" in pod "${podName}" not found`
          : `container "${container}" in pod "${podName}" is waiting to start: ContainerCreating`,
      );
    }
    return {
      path: found.logPath,
      isRunning: async () =>
        !previous && (await instances()).some((c) => c.id.id === found.id.id && c.state === 'running'),
    };
  }

  private async stream(
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    opts: LogOptions,
    isRunning: () => Promise<boolean>,
  ): Promise<void> {
    // One descriptor for the read and the follow: a rotation in between cannot swap the file.
    const fh = await open(path, 'r').catch((e) => {
      // Created but not yet written: an empty log.
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      return undefined;
    });
    try {
      await this.send(req, res, path, fh, opts, isRunning);
    } finally {
      await fh?.close();
    }
  }

  private async send(
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    fh: FileHandle | undefined,
    opts: LogOptions,
    isRunning: () => Promise<boolean>,
  ): Promise<void> {
    const data = fh ? await fh.readFile() : Buffer.alloc(0);
    const text = data.toString('utf8');
    let budget = opts.limitBytes ?? Number.POSITIVE_INFINITY;
    res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' });
    // A HEAD has no body to follow; a follow says 200 at once, before any new line comes.
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    if (opts.follow) res.flushHeaders();
    /** Writes within limitBytes; false once the limit is reached. */
    const write = (records: LogRecord[]): boolean => {
      for (const r of records) {
        const chunk = Buffer.from(formatRecord(r, opts.timestamps), 'utf8');
        if (chunk.length >= budget) {
          res.write(chunk.subarray(0, budget));
          budget = 0;
          return false;
        }
        res.write(chunk);
        budget -= chunk.length;
      }
      return true;
    };
    const more = write(selectRecords(text, opts));
    if (more && opts.follow && (await isRunning()))
      await this.follow(req, path, fh, data.length, opts, write, isRunning);
    res.end();
  }

  /**
   * Streams lines appended after `offset` until the client goes, the limit is hit or the
   * container stops. A rotation (the file renamed away and reopened at the same path) is followed
   * as the kubelet follows it: the renamed file is read to its end, then the new one from its start.
   */
  private async follow(
    req: IncomingMessage,
    path: string,
    first: FileHandle | undefined,
    offset: number,
    opts: LogOptions,
    write: (records: LogRecord[]) => boolean,
    isRunning: () => Promise<boolean>,
  ): Promise<void> {
    let closed = false;
    req.once('close', () => {
      closed = true;
    });
    let fh = first;
    let pos = offset;
    let rest = '';
    const pollMs = this.deps.followPollMs ?? 250;
    /** Writes what the open file has past `pos`; false once the limit is reached. */
    const drain = async (): Promise<boolean> => {
      if (!fh) return true;
      const { size } = await fh.stat();
      if (size < pos) pos = 0; // truncated in place: start at its beginning
      if (size === pos) return true;
      const buf = Buffer.alloc(size - pos);
      const { bytesRead } = await fh.read(buf, 0, buf.length, pos);
      pos += bytesRead;
      const lines = (rest + buf.subarray(0, bytesRead).toString('utf8')).split('\n');
      rest = lines.pop() ?? '';
      const records = lines.map(parseLogLine).filter((r): r is LogRecord => r !== undefined);
      const since = opts.sinceMs;
      return write(since === undefined ? records : records.filter((r) => r.ms >= since));
    };
    /** The open file, or a newer one at `path` once the old one is read to its end. */
    const readNew = async (): Promise<boolean> => {
      if (!(await drain())) return false;
      const now = await stat(path).catch(() => undefined);
      if (!now) return true; // renamed away and not reopened yet
      if (fh && (await fh.stat()).ino === now.ino) return true;
      if (fh !== first) await fh?.close();
      fh = await open(path, 'r').catch(() => undefined);
      pos = 0;
      rest = '';
      return drain();
    };
    try {
      let lastRunningCheck = Date.now();
      while (!closed) {
        await new Promise((r) => setTimeout(r, pollMs));
        if (closed || !(await readNew())) return;
        if (Date.now() - lastRunningCheck >= 1_000) {
          lastRunningCheck = Date.now();
          if (!(await isRunning())) {
            // The container is gone: whatever it wrote last, then the end.
            await readNew();
            return;
          }
        }
      }
    } finally {
      // The first descriptor is the caller's to close.
      if (fh !== first) await fh?.close();
    }
  }
}

/** A Kubernetes Status, as the kubelet answers refused log requests. */
function writeStatus(res: ServerResponse, code: 400 | 404, message: string): void {
  res.writeHead(code, { 'Content-Type': 'application/json' }).end(
    JSON.stringify({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message,
      reason: code === 404 ? 'NotFound' : 'BadRequest',
      code,
    }),
  );
}

/** The container ID whose log a request means, from the container's status. */
function statusContainerId(status: V1ContainerStatus, previous: boolean): string | undefined {
  const last = status.lastState?.terminated?.containerID || undefined;
  if (previous) return last;
  return (!status.state?.waiting && status.containerID) || last;
}
