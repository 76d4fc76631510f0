import net from 'node:net';
import {
  type ConnectionInjector,
  Metadata,
  Server,
  ServerCredentials,
  type ServerUnaryCall,
  type ServerWritableStream,
  type ServiceDefinition,
  type sendUnaryData,
  status,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import { CriError, toCriError } from '../api/errors.js';
import {
  type CriMethodInfo,
  type DeepPartial,
  type ImageMethodKey,
  imageMethods,
  type RequestOf,
  type ResponseOf,
  type RuntimeMethodKey,
  runtimeMethods,
  type StreamKey,
} from '../api/methods.js';
import type { CriCallEvent } from '../client/client.js';
import { parseEndpoint } from '../client/endpoint.js';
import { acceptConnection, type ConnectionPath } from './h2_opening.js';
import { prepareSocketPath, removeSocket, restrictSocket } from './socket.js';

export interface CriCallContext {
  /** Aborted when the client cancels, its deadline passes, or the server closes. */
  signal: AbortSignal;
  metadata: Metadata;
  /** RPC name as in the proto, e.g. "CreateContainer". */
  method: string;
}

type Handler<K extends RuntimeMethodKey | ImageMethodKey> = K extends StreamKey
  ? (request: RequestOf<K>, ctx: CriCallContext) => AsyncIterable<DeepPartial<ResponseOf<K>>>
  : (
      request: RequestOf<K>,
      ctx: CriCallContext,
    ) => Promise<DeepPartial<ResponseOf<K>>> | DeepPartial<ResponseOf<K>>;

/** A backend's RuntimeService; responses may be partial (they are normalised with fromPartial). */
export type CriRuntimeHandlers = { [K in RuntimeMethodKey]: Handler<K> };
export type CriImageHandlers = { [K in ImageMethodKey]: Handler<K> };

export interface CriBackend {
  /** Shown in UNIMPLEMENTED messages, e.g. "dockershim". */
  name: string;
  runtime?: Partial<CriRuntimeHandlers>;
  image?: Partial<CriImageHandlers>;
}

export interface ServeCriOptions {
  /** Unix socket to listen on (mode 0660; a stale file is replaced, a live one is an error). */
  socketPath?: string;
  /** Alternative to socketPath: "unix:///path", "/path" or "tcp://host:port" (port 0 picks one). */
  address?: string;
  onCall?: (event: CriCallEvent) => void;
  /**
   * A client connection failed: it broke HTTP/2 in a way the server answered with a GOAWAY
   * (naming the reason) and closed, or accepting a connection failed.
   */
  onConnectionError?: (err: Error) => void;
  /** A client connection went to the HTTP/2 server, as it is or through the header rewriter. */
  onConnection?: (path: ConnectionPath) => void;
}

export interface CriServer {
  /** Client-ready endpoint, e.g. "unix:///run/x.sock" or "tcp://127.0.0.1:40123". */
  readonly endpoint: string;
  /** Ends open streams, waits up to graceMs for calls in flight, then removes the socket. */
  close(options?: { graceMs?: number }): Promise<void>;
}

type AnyHandler = (req: unknown, ctx: CriCallContext) => unknown;

/**
 * A request that is not the method's protobuf message. grpc-js answers a throwing deserializer
 * with INTERNAL and no reason; the caller's bytes are at fault, so the call gets INVALID_ARGUMENT
 * naming the method and the decoder's complaint instead.
 */
class UndecodableRequest {
  constructor(readonly failure: { code: status; details: string }) {}
}

function decodeRequest(m: CriMethodInfo, bytes: Buffer): unknown {
  try {
    return m.requestType.decode(bytes);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    return new UndecodableRequest({
      code: status.INVALID_ARGUMENT,
      details: `cannot decode the ${m.name} request: ${reason}`,
    });
  }
}

function statusOf(err: unknown): { code: status; details: string } {
  if (err instanceof CriError) return { code: err.code, details: err.details };
  return { code: status.INTERNAL, details: err instanceof Error ? err.message : String(err) };
}

function toServiceError(err: { code: status; details: string }) {
  return Object.assign(new Error(err.details), {
    code: err.code,
    details: err.details,
    metadata: new Metadata(),
  });
}

/**
 * The largest request a CRI server accepts (gRPC's customary 4 MiB); a bigger one is refused with
 * RESOURCE_EXHAUSTED before it is decoded. Responses are not capped: ListContainers of a busy node
 * may be larger, and the kubelet raises its own receive limit to 16 MiB for them.
 */
export const CRI_MAX_REQUEST_BYTES = 4 * 1024 * 1024;

class CriServerImpl implements CriServer {
  readonly #grpc = new Server({ 'grpc.max_receive_message_length': CRI_MAX_REQUEST_BYTES });
  readonly #active = new Set<AbortController>();
  readonly #connections = new Set<net.Socket>();
  #listener: net.Server | undefined;
  #socketPath: string | undefined;
  endpoint = '';

  constructor(
    private readonly backend: CriBackend,
    private readonly onCall: ((e: CriCallEvent) => void) | undefined,
    private readonly onConnectionError: ((err: Error) => void) | undefined,
    private readonly onConnection: ((path: ConnectionPath) => void) | undefined,
  ) {
    this.#grpc.addService(
      this.#definition(runtimeMethods),
      this.#implement(runtimeMethods, backend.runtime as Record<string, unknown> | undefined),
    );
    this.#grpc.addService(
      this.#definition(imageMethods),
      this.#implement(imageMethods, backend.image as Record<string, unknown> | undefined),
    );
  }

  #definition(methods: readonly CriMethodInfo[]): ServiceDefinition {
    return Object.fromEntries(
      methods.map((m) => [
        m.key,
        {
          path: m.path,
          requestStream: false,
          responseStream: m.responseStream,
          requestSerialize: (v: unknown) => Buffer.from(m.requestType.encode(v).finish()),
          requestDeserialize: (b: Buffer) => decodeRequest(m, b),
          responseSerialize: (v: unknown) => Buffer.from(m.responseType.encode(v).finish()),
          responseDeserialize: (b: Buffer) => m.responseType.decode(b),
        },
      ]),
    );
  }

  #implement(methods: readonly CriMethodInfo[], handlers: Record<string, unknown> | undefined) {
    const impl: UntypedServiceImplementation = {};
    for (const m of methods) {
      const fn = handlers?.[m.key];
      // Bound to the handler object so class instances can be passed as handlers.
      const handler = typeof fn === 'function' ? (fn.bind(handlers) as AnyHandler) : undefined;
      impl[m.key] = m.responseStream ? this.#streamCall(m, handler) : this.#unaryCall(m, handler);
    }
    return impl;
  }

  #unimplemented(m: CriMethodInfo) {
    return {
      code: status.UNIMPLEMENTED,
      details: `${this.backend.name} does not implement ${m.service}/${m.name}`,
    };
  }

  #report(m: CriMethodInfo, started: number, failure?: { code: status; details: string }) {
    if (!this.onCall) return;
    const event: CriCallEvent = {
      method: m.name,
      service: m.service,
      durationMs: performance.now() - started,
    };
    if (failure) event.error = toCriError(failure, m.name);
    try {
      this.onCall(event);
    } catch {
      // Observers never change a call's outcome.
    }
  }

  #context(m: CriMethodInfo, call: { metadata: Metadata; on(ev: 'cancelled', cb: () => void): unknown }) {
    const ac = new AbortController();
    this.#active.add(ac);
    call.on('cancelled', () => ac.abort(new Error('call cancelled by the client')));
    return { ac, ctx: { signal: ac.signal, metadata: call.metadata, method: m.name } };
  }

  #unaryCall(m: CriMethodInfo, handler: AnyHandler | undefined) {
    return async (call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => {
      const started = performance.now();
      if (!handler || call.request instanceof UndecodableRequest) {
        const failure = handler ? (call.request as UndecodableRequest).failure : this.#unimplemented(m);
        this.#report(m, started, failure);
        callback(toServiceError(failure));
        return;
      }
      const { ac, ctx } = this.#context(m, call);
      try {
        const res = await handler(call.request, ctx);
        this.#report(m, started);
        callback(null, m.responseType.fromPartial(res ?? {}));
      } catch (err) {
        const failure = statusOf(err);
        this.#report(m, started, failure);
        callback(toServiceError(failure));
      } finally {
        this.#active.delete(ac);
      }
    };
  }

  #streamCall(m: CriMethodInfo, handler: AnyHandler | undefined) {
    return async (call: ServerWritableStream<unknown, unknown>) => {
      const started = performance.now();
      if (!handler || call.request instanceof UndecodableRequest) {
        const failure = handler ? (call.request as UndecodableRequest).failure : this.#unimplemented(m);
        this.#report(m, started, failure);
        call.emit('error', toServiceError(failure));
        return;
      }
      const { ac, ctx } = this.#context(m, call);
      try {
        for await (const msg of handler(call.request, ctx) as AsyncIterable<unknown>) {
          if (ac.signal.aborted) break;
          if (!call.write(m.responseType.fromPartial(msg ?? {}))) {
            await new Promise((resolve) => call.once('drain', resolve));
          }
        }
        this.#report(m, started);
        if (!call.cancelled) call.end();
      } catch (err) {
        const failure = statusOf(err);
        this.#report(m, started, failure);
        if (!call.cancelled) call.emit('error', toServiceError(failure));
      } finally {
        this.#active.delete(ac);
      }
    };
  }

  /**
   * We own the listening socket and hand grpc-js each connection ourselves, after reading its
   * opening (h2_opening.ts): as it is, or through a RewritingConnection for Go clients that send a
   * unix socket path as `:authority`, which Node's HTTP/2 layer would reject.
   */
  async listen(options: ServeCriOptions): Promise<void> {
    const address = options.socketPath ?? options.address;
    if (!address) throw new Error('serveCri needs socketPath or address');
    const ep = parseEndpoint(address, { allowPortZero: true });
    if (ep.kind === 'unix') await prepareSocketPath(ep.path);
    const injector = this.#grpc.createConnectionInjector(ServerCredentials.createInsecure());
    // noDelay: HTTP/2 writes small frames and waits for answers; Nagle would hold them for an ACK.
    const listener = net.createServer({ noDelay: true }, (socket) => this.#accept(injector, socket));
    await new Promise<void>((resolve, reject) => {
      listener.once('error', (err) =>
        reject(new Error(`cannot listen on ${ep.uri}: ${err.message}`, { cause: err })),
      );
      // tcp://[::1]:port: net wants the address without brackets.
      const target =
        ep.kind === 'unix' ? { path: ep.path } : { host: ep.host.replace(/^\[|\]$/g, ''), port: ep.port };
      listener.listen(target, resolve);
    }).catch((err) => {
      injector.destroy();
      throw err;
    });
    // Accept failures (EMFILE) are reported, never thrown at the process.
    listener.on('error', (err) => this.#connectionError(err));
    this.#listener = listener;
    if (ep.kind === 'unix') {
      this.#socketPath = ep.path;
      await restrictSocket(ep.path);
      this.endpoint = ep.uri;
    } else {
      this.endpoint = `tcp://${ep.host}:${(listener.address() as net.AddressInfo).port}`;
    }
  }

  #accept(injector: ConnectionInjector, socket: net.Socket): void {
    this.#connections.add(socket);
    socket.once('close', () => this.#connections.delete(socket));
    acceptConnection(
      socket,
      (connection, path) => {
        injector.injectConnection(connection);
        this.#connectionOpened(path);
      },
      { onError: (err) => this.#connectionError(err) },
    );
  }

  #connectionOpened(path: ConnectionPath): void {
    try {
      this.onConnection?.(path);
    } catch {
      // Observers never change what the server does.
    }
  }

  #connectionError(err: Error): void {
    try {
      this.onConnectionError?.(err);
    } catch {
      // Observers never change what the server does.
    }
  }

  async close(options: { graceMs?: number } = {}): Promise<void> {
    for (const ac of this.#active) ac.abort(new Error('server closing'));
    const listener = this.#listener;
    const listenerClosed = new Promise<void>((resolve) =>
      listener ? listener.close(() => resolve()) : resolve(),
    );
    const graceMs = options.graceMs ?? 2_000;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.#grpc.forceShutdown();
        resolve();
      }, graceMs);
      this.#grpc.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
    // What the HTTP/2 sessions did not close: connections that never spoke HTTP/2, or that
    // still read a GOAWAY.
    for (const socket of this.#connections) socket.destroy();
    await listenerClosed;
    if (this.#socketPath) await removeSocket(this.#socketPath);
  }
}

/**
 * Serves a CRI backend over gRPC. Handlers are `async (request, ctx) => response`; throwing a
 * CriError sends its code and details, any other error becomes INTERNAL, and RPCs without a
 * handler answer UNIMPLEMENTED naming the backend and the method.
 */
export async function serveCri(backend: CriBackend, options: ServeCriOptions): Promise<CriServer> {
  const server = new CriServerImpl(backend, options.onCall, options.onConnectionError, options.onConnection);
  await server.listen(options);
  return server;
}
