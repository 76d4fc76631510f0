// The four probe actions. Each answers success, warning (success with a note, such as a
// redirect off the pod) or failure with the output the kubelet would show in the Unhealthy
// event; an error thrown means the probe could not run at all and its result is discarded.
import type { IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { isDeadlineExceeded } from '@kh/cri-api';
import { type ContainerID, httpGet, type Runtime } from '@kh/runtime-manager';

export type ProbeOutcome = { result: 'success' | 'warning' | 'failure'; output: string };

export const PROBE_USER_AGENT = 'kube-probe/1.33';
const MAX_REDIRECTS = 10;

export async function execProbe(
  runtime: Pick<Runtime, 'runInContainer'>,
  id: ContainerID,
  command: string[],
  timeoutMs: number,
): Promise<ProbeOutcome> {
  try {
    const r = await runtime.runInContainer(id, command, timeoutMs);
    const output = Buffer.concat([r.stdout, r.stderr]).toString('utf8');
    return r.exitCode === 0 ? { result: 'success', output } : { result: 'failure', output };
  } catch (err) {
    if (isDeadlineExceeded(err))
      return { result: 'failure', output: `command ${JSON.stringify(command.join(' '))} timed out` };
    throw err;
  }
}

/**
 * A probe's timeout as a signal that fires only after the agent has polled its sockets once more.
 * When the agent was starved of CPU past the deadline, a reply already waiting in a socket counts:
 * the timeout measures the container, not this process's event loop (a plain timer runs before
 * the I/O that arrived meanwhile, and a single such miss restarts a pod with failureThreshold 1).
 */
export function probeDeadline(timeoutMs: number): AbortSignal {
  const controller = new AbortController();
  setTimeout(
    () => setImmediate(() => controller.abort(new DOMException('probe timed out', 'TimeoutError'))),
    timeoutMs,
  ).unref();
  return controller.signal;
}

function formatHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

export async function httpProbe(
  target: {
    scheme: 'HTTP' | 'HTTPS';
    host: string;
    port: number;
    path: string;
    headers: { name: string; value: string }[];
  },
  timeoutMs: number,
): Promise<ProbeOutcome> {
  let url = new URL(
    `${target.scheme.toLowerCase()}://${formatHost(target.host)}:${target.port}${target.path.startsWith('/') ? '' : '/'}${target.path}`,
  );
  const originalHost = url.hostname;
  const deadline = probeDeadline(timeoutMs);
  for (let hop = 0; ; hop++) {
    let res: IncomingMessage;
    let body: string;
    try {
      ({ res, body } = await httpGet(url, PROBE_USER_AGENT, target.headers, deadline));
    } catch (err) {
      const why = deadline.aborted
        ? 'context deadline exceeded (Client.Timeout exceeded while awaiting headers)'
        : (err as Error).message;
      return { result: 'failure', output: `Get ${JSON.stringify(url.href)}: ${why}` };
    }
    const code = res.statusCode ?? 0;
    const location = res.headers.location;
    if (code >= 300 && code < 400 && location) {
      const next = new URL(location, url);
      // Only redirects that stay on the probed host are followed; leaving it is not a failure.
      if (next.hostname !== originalHost || hop >= MAX_REDIRECTS) {
        return { result: 'warning', output: `Probe terminated redirects, Response body: ${body}` };
      }
      url = next;
      continue;
    }
    if (code >= 200 && code < 400) return { result: 'success', output: body };
    return { result: 'failure', output: `HTTP probe failed with statuscode: ${code}` };
  }
}

export function tcpProbe(host: string, port: number, timeoutMs: number): Promise<ProbeOutcome> {
  const addr = `${formatHost(host)}:${port}`;
  return new Promise((resolve) => {
    const deadline = probeDeadline(timeoutMs);
    const socket = connect({ host, port, signal: deadline });
    socket.once('connect', () => {
      socket.destroy();
      resolve({ result: 'success', output: '' });
    });
    socket.once('error', (err) => {
      const why = deadline.aborted ? 'i/o timeout' : err.message;
      resolve({ result: 'failure', output: `dial tcp ${addr}: ${why}` });
    });
  });
}

// grpc.health.v1 messages, hand-encoded: HealthCheckRequest{string service = 1} and
// HealthCheckResponse{ServingStatus status = 1}.
const SERVING_STATUS = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'];

function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return out;
}

export function encodeHealthCheckRequest(req: { service: string }): Buffer {
  const s = Buffer.from(req.service, 'utf8');
  return s.length === 0 ? Buffer.alloc(0) : Buffer.concat([Buffer.from([0x0a, ...varint(s.length)]), s]);
}

export function decodeHealthCheckRequest(buf: Buffer): { service: string } {
  if (buf.length === 0 || buf[0] !== 0x0a) return { service: '' };
  let len = 0;
  let shift = 0;
  let i = 1;
  for (; i < buf.length; i++) {
    const b = buf[i] as number;
    len |= (b & 0x7f) << shift;
    shift += 7;
    if (!(b & 0x80)) break;
  }
  return { service: buf.subarray(i + 1, i + 1 + len).toString('utf8') };
}

export function encodeHealthCheckResponse(res: { status: number }): Buffer {
  return res.status === 0 ? Buffer.alloc(0) : Buffer.from([0x08, ...varint(res.status)]);
}

export function decodeHealthCheckResponse(buf: Buffer): { status: number } {
  // Field 1, varint; absent means UNKNOWN (0). Statuses fit in one byte.
  return { status: buf[0] === 0x08 ? (buf[1] ?? 0) & 0x7f : 0 };
}

export const HEALTH_CHECK_METHOD = '/grpc.health.v1.Health/Check';

export function grpcProbe(
  host: string,
  port: number,
  service: string,
  timeoutMs: number,
): Promise<ProbeOutcome> {
  const addr = `${formatHost(host)}:${port}`;
  const secs = `${timeoutMs / 1000}s`;
  const client = new grpc.Client(addr, grpc.credentials.createInsecure());
  return new Promise<ProbeOutcome>((resolve) => {
    client.makeUnaryRequest(
      HEALTH_CHECK_METHOD,
      encodeHealthCheckRequest,
      decodeHealthCheckResponse,
      { service },
      new grpc.Metadata({ waitForReady: false }),
      { deadline: Date.now() + timeoutMs },
      (err, res) => {
        if (err) {
          const code = (err as grpc.ServiceError).code;
          const details = (err as grpc.ServiceError).details;
          if (code === grpc.status.UNIMPLEMENTED)
            resolve({
              result: 'failure',
              output: `this server does not implement the grpc health protocol (grpc.health.v1.Health): ${details}`,
            });
          else if (code === grpc.status.UNAVAILABLE)
            resolve({
              result: 'failure',
              output: `timeout: failed to connect service ${JSON.stringify(addr)} within ${secs}`,
            });
          else if (code === grpc.status.DEADLINE_EXCEEDED)
            resolve({ result: 'failure', output: `timeout: health rpc did not complete within ${secs}` });
          else resolve({ result: 'failure', output: `error: health rpc probe failed: ${err.message}` });
          return;
        }
        const status = SERVING_STATUS[res?.status ?? 0] ?? String(res?.status);
        resolve(
          status === 'SERVING'
            ? { result: 'success', output: '' }
            : { result: 'failure', output: `service unhealthy (responded with ${JSON.stringify(status)})` },
        );
      },
    );
  }).finally(() => client.close());
}
