/**
 * The shape of a failed Engine API call, as docker-modem reports it: the HTTP status, the Engine's
 * JSON body, or a socket error code. The fake client fails with the same shape (EngineError), so
 * the CRI mapping above this folder reads one kind of error whatever the client.
 */
interface DockerApiError {
  statusCode?: number;
  json?: { message?: string } | null;
  reason?: string;
  code?: string;
  message?: string;
}

// Socket-level failures: the engine is down or unreachable, not a bad request.
const CONNECTION_ERRORS = new Set(['ECONNREFUSED', 'ENOENT', 'EACCES', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT']);

/** An Engine API answer with an error status, as docker-modem builds it. */
export class EngineError extends Error {
  readonly json: { message: string };
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(`(HTTP code ${statusCode}) ${message}`);
    this.json = { message };
  }
}

export function dockerStatusCode(err: unknown): number | undefined {
  return (err as DockerApiError | undefined)?.statusCode;
}

/** The engine's own message ("No such container: abc") rather than docker-modem's wrapper text. */
export function dockerMessage(err: unknown): string {
  const e = err as DockerApiError | undefined;
  const fromJson = e?.json?.message;
  if (typeof fromJson === 'string' && fromJson !== '') return fromJson;
  return e?.message ?? String(err);
}

export function isDockerNotFound(err: unknown): boolean {
  return dockerStatusCode(err) === 404;
}

export function isDockerConnectionError(err: unknown): boolean {
  const code = (err as DockerApiError | undefined)?.code;
  return typeof code === 'string' && CONNECTION_ERRORS.has(code);
}
