import { Client, credentials, Metadata, status } from '@grpc/grpc-js';
import {
  type CriError,
  criErrorFromCode,
  InvalidArgumentError,
  toCriError,
  UnavailableError,
} from '../api/errors.js';
import {
  type CriMethodInfo,
  criMethods,
  type DeepPartial,
  type RequestOf,
  type ResponseOf,
  type StreamKey,
  type UnaryKey,
} from '../api/methods.js';
import type { ExecSyncRequest, StopContainerRequest } from '../gen/runtime/v1/api.js';
import { AsyncQueue } from '../util/async_queue.js';
import { parseEndpoint } from './endpoint.js';

/** The kubelet's default runtimeRequestTimeout (2m). */
export const DEFAULT_CRI_TIMEOUT_MS = 120_000;
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
/** Same receive limit the kubelet uses for CRI responses (16 MiB). */
const MAX_MSG_SIZE = 16 * 1024 * 1024;
/** Streams that stay open for the life of a subscription and so get no default deadline. */
const SUBSCRIPTIONS: ReadonlySet<string> = new Set(['getContainerEvents']);

/** Reported once per finished call (a stream: when it ends), e.g. to record CRI latencies. */
export interface CriCallEvent {
  /** RPC name as in the proto, e.g. "RunPodSandbox". */
  method: string;
  /** e.g. "runtime.v1.RuntimeService". */
  service: string;
  durationMs: number;
  error?: CriError;
}

export interface CriClientOptions {
  /** Default per-call deadline in ms (kubelet runtimeRequestTimeout). Default 120 000. */
  timeoutMs?: number;
  /** How long connect() waits for the channel to become ready. Default 10 000. */
  connectTimeoutMs?: number;
  onCall?: (event: CriCallEvent) => void;
}

export interface CriCallOptions {
  /** Deadline for this call; overrides the client default. */
  timeoutMs?: number;
  /** Aborting cancels the call; it then rejects with CanceledError (streams just end). */
  signal?: AbortSignal;
  metadata?: Record<string, string>;
}

type UnaryCalls = {
  [K in UnaryKey]: (request?: DeepPartial<RequestOf<K>>, options?: CriCallOptions) => Promise<ResponseOf<K>>;
};
type StreamCalls = {
  [K in StreamKey]: (
    request?: DeepPartial<RequestOf<K>>,
    options?: CriCallOptions,
  ) => AsyncIterable<ResponseOf<K>>;
};
/** One method per RPC of RuntimeService and ImageService, named in lowerCamelCase. */
export type CriCalls = UnaryCalls & StreamCalls;

/** Typed CRI client: `await CriClient.connect('unix:///run/containerd/containerd.sock')`. */
export type CriClient = CriCalls & CriConnection;

interface PreparedCall {
  request: unknown;
  metadata: Metadata;
  callOptions: { deadline?: number };
  serialize: (v: unknown) => Buffer;
  deserialize: (b: Buffer) => unknown;
}

class CriConnection {
  readonly #grpc: Client;
  readonly #timeoutMs: number;
  readonly #onCall: ((e: CriCallEvent) => void) | undefined;

  constructor(
    /** Normalised endpoint URI, e.g. "unix:///run/x.sock" or "tcp://127.0.0.1:1234". */
    readonly endpoint: string,
    grpc: Client,
    options: CriClientOptions,
  ) {
    this.#grpc = grpc;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_CRI_TIMEOUT_MS;
    this.#onCall = options.onCall;
    for (const m of criMethods) {
      const call = m.responseStream
        ? (req?: unknown, opts?: CriCallOptions) => this.#stream(m, req, opts)
        : (req?: unknown, opts?: CriCallOptions) => this.#unary(m, req, opts);
      Object.defineProperty(this, m.key, { value: call, enumerable: false });
    }
  }

  /** Closes the channel; calls still in flight fail with CANCELLED/UNAVAILABLE. */
  close(): void {
    this.#grpc.close();
  }

  #report(m: CriMethodInfo, started: number, error?: CriError): void {
    if (!this.#onCall) return;
    const event: CriCallEvent = {
      method: m.name,
      service: m.service,
      durationMs: performance.now() - started,
    };
    if (error) event.error = error;
    try {
      this.#onCall(event);
    } catch {
      // An observer must never change the outcome of the call it observes.
    }
  }

  #prepare(
    m: CriMethodInfo,
    req: unknown,
    opts: CriCallOptions | undefined,
    deadline: boolean,
  ): PreparedCall {
    let request: unknown;
    try {
      request = m.requestType.fromPartial(req ?? {});
    } catch (err) {
      // e.g. BigInt('abc') for an int64 field: a caller bug, reported like a server would.
      throw new InvalidArgumentError(`bad ${m.name} request: ${(err as Error).message}`, {
        method: m.name,
        cause: err,
      });
    }
    const metadata = new Metadata();
    for (const [k, v] of Object.entries(opts?.metadata ?? {})) metadata.set(k, v);
    // Like the kubelet's remote runtime, ExecSync's deadline adds the command's timeout and
    // StopContainer's the grace period, so the runtime's own answer (a precise "timeout
    // exceeded", a container killed after its grace) arrives before the transport gives up.
    const ownSeconds =
      m.key === 'execSync' || m.key === 'stopContainer'
        ? Number((request as ExecSyncRequest | StopContainerRequest).timeout)
        : 0;
    const timeoutMs = opts?.timeoutMs ?? (deadline ? this.#timeoutMs + ownSeconds * 1000 : undefined);
    const callOptions = timeoutMs === undefined ? {} : { deadline: Date.now() + timeoutMs };
    const serialize = (v: unknown) => Buffer.from(m.requestType.encode(v).finish());
    const deserialize = (b: Buffer) => m.responseType.decode(b);
    return { request, metadata, callOptions, serialize, deserialize };
  }

  #unary(m: CriMethodInfo, req: unknown, opts: CriCallOptions | undefined): Promise<unknown> {
    const started = performance.now();
    const signal = opts?.signal;
    if (signal?.aborted) {
      const err = criErrorFromCode(status.CANCELLED, 'call aborted before it started', { method: m.name });
      this.#report(m, started, err);
      return Promise.reject(err);
    }
    let p: PreparedCall;
    try {
      p = this.#prepare(m, req, opts, true);
    } catch (err) {
      this.#report(m, started, err as CriError);
      return Promise.reject(err);
    }
    return new Promise((resolve, reject) => {
      const call = this.#grpc.makeUnaryRequest(
        m.path,
        p.serialize,
        p.deserialize,
        p.request,
        p.metadata,
        p.callOptions,
        (err, res) => {
          signal?.removeEventListener('abort', onAbort);
          if (err) {
            const criErr = toCriError(err, m.name);
            this.#report(m, started, criErr);
            reject(criErr);
          } else {
            this.#report(m, started);
            resolve(res);
          }
        },
      );
      const onAbort = () => call.cancel();
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  // Starts the call at once (not on first iteration), so the server sees the subscription as
  // soon as the method returns; messages are buffered until the consumer reads them.
  #stream(m: CriMethodInfo, req: unknown, opts: CriCallOptions | undefined): AsyncIterable<unknown> {
    const started = performance.now();
    const signal = opts?.signal;
    let p: PreparedCall;
    try {
      p = this.#prepare(m, req, opts, !SUBSCRIPTIONS.has(m.key));
    } catch (err) {
      this.#report(m, started, err as CriError);
      const failed = new AsyncQueue<unknown>();
      failed.fail(err);
      return failed;
    }
    const call = this.#grpc.makeServerStreamRequest(
      m.path,
      p.serialize,
      p.deserialize,
      p.request,
      p.metadata,
      p.callOptions,
    );
    let finished = false;
    let cancelledByCaller = false;
    const cancel = () => {
      cancelledByCaller = true;
      call.cancel();
    };
    const finish = (err?: CriError) => {
      if (finished) return;
      finished = true;
      signal?.removeEventListener('abort', cancel);
      this.#report(m, started, err);
    };
    // Returning early from the iteration (break) releases the server side too.
    const queue = new AsyncQueue<unknown>(() => {
      if (!finished) cancel();
    });
    call.on('data', (msg: unknown) => queue.push(msg));
    call.on('error', (err: unknown) => {
      const criErr = toCriError(err, m.name);
      // Stopping a subscription on purpose is a normal end, not a failure.
      if (criErr.code === status.CANCELLED && cancelledByCaller) {
        finish();
        queue.end();
        return;
      }
      finish(criErr);
      queue.fail(criErr);
    });
    call.on('end', () => {
      finish();
      queue.end();
    });
    if (signal?.aborted) cancel();
    else signal?.addEventListener('abort', cancel, { once: true });
    return queue;
  }
}

/**
 * Connects to a CRI endpoint and waits (up to connectTimeoutMs) for the channel to be ready, so a
 * missing or dead socket fails here with UnavailableError instead of on the first call.
 */
async function connect(endpoint: string, options: CriClientOptions = {}): Promise<CriClient> {
  const ep = parseEndpoint(endpoint);
  const grpc = new Client(ep.target, credentials.createInsecure(), {
    'grpc.max_receive_message_length': MAX_MSG_SIZE,
    'grpc.max_send_message_length': MAX_MSG_SIZE,
  });
  const connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  try {
    await new Promise<void>((resolve, reject) =>
      grpc.waitForReady(Date.now() + connectTimeoutMs, (err) => (err ? reject(err) : resolve())),
    );
  } catch (err) {
    grpc.close();
    throw new UnavailableError(`CRI endpoint ${ep.uri} not ready after ${connectTimeoutMs} ms`, {
      cause: err,
    });
  }
  return new CriConnection(ep.uri, grpc, options) as CriClient;
}

export const CriClient = { connect };
