import { status } from '@grpc/grpc-js';

/** gRPC status codes, re-exported so callers need not depend on @grpc/grpc-js. */
export { status as GrpcStatus } from '@grpc/grpc-js';

export interface CriErrorOptions {
  /** CRI method name as in the proto, e.g. "RunPodSandbox". */
  method?: string;
  cause?: unknown;
}

/**
 * Every failed CRI call, on the client and in server handlers, is a CriError: `code` is the gRPC
 * status, `details` the status message as sent on the wire, `method` the RPC it came from.
 */
export class CriError extends Error {
  readonly code: status;
  readonly details: string;
  readonly method: string | undefined;

  constructor(code: status, details: string, options: CriErrorOptions = {}) {
    super(options.method ? `${options.method}: ${details}` : details, { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.details = details;
    this.method = options.method;
  }

  /** Upper-case gRPC name of the code, e.g. "NOT_FOUND". */
  get codeName(): string {
    return status[this.code] ?? `CODE_${this.code}`;
  }
}

// One subclass per gRPC code, so callers can `instanceof` or `catch` precisely.
export class CanceledError extends CriError {
  constructor(details: string, options?: CriErrorOptions) {
    super(status.CANCELLED, details, options);
  }
}
export class UnknownCriError extends CriError {
  constructor(details: string, options?: CriErrorOptions) {
    super(status.UNKNOWN, details, options);
  }
}
export class InvalidArgumentError extends CriError {
  constructor(details: string, options?: CriErrorOptions) {
    super(status.INVALID_ARGUMENT, details, options);
  }
}
export class DeadlineExceededError extends CriError {
  constructor(details: string, options?: CriErrorOptions) {
    super(status.DEADLINE_EXCEEDED, details, options);
  }
}
export class NotFoundError extends CriError {
  constructor(details: string, options?: CriErrorOptions) {
    super(status.NOT_FOUND, details, options);
  }
}
export class AlreadyExistsError extends CriError {
  constructor(details: string, options?: CriErrorOptions) {
    super(status.ALREADY_EXISTS, details, options);
  }
}
export class PermissionDeniedError extends CriError {
  constructor(details: string, options?: CriErrorOptions) {
    super(status.PERMISSION_DENIED, details, options);
  }
}
export class ResourceExhaustedError extends CriError {
  constructor(details: string, options?: CriErrorOptions) {
    super(status.RESOURCE_EXHAUSTED, details, options);
  }
}
export class FailedPreconditionError extends CriError {
  constructor(details: string, options?: CriErrorOptions) {
    super(status.FAILED_PRECONDITION, details, options);
  }
}
export class AbortedError extends CriError {
  constructor(details: string, options?: CriErrorOptions) {
    super(status.ABORTED, details, options);
  }
}
export class OutOfRangeError extends CriError {
  constructor(details: string, options?: CriErrorOptions) {
    super(status.OUT_OF_RANGE, details, options);
  }
}
export class UnimplementedError extends CriError {
  constructor(details: string, options?: CriErrorOptions) {
    super(status.UNIMPLEMENTED, details, options);
  }
}
export class InternalError extends CriError {
  constructor(details: string, options?: CriErrorOptions) {
    super(status.INTERNAL, details, options);
  }
}
export class UnavailableError extends CriError {
  constructor(details: string, options?: CriErrorOptions) {
    super(status.UNAVAILABLE, details, options);
  }
}
export class DataLossError extends CriError {
  constructor(details: string, options?: CriErrorOptions) {
    super(status.DATA_LOSS, details, options);
  }
}
export class UnauthenticatedError extends CriError {
  constructor(details: string, options?: CriErrorOptions) {
    super(status.UNAUTHENTICATED, details, options);
  }
}

type CriErrorClass = new (details: string, options?: CriErrorOptions) => CriError;

const classByCode: ReadonlyMap<status, CriErrorClass> = new Map<status, CriErrorClass>([
  [status.CANCELLED, CanceledError],
  [status.UNKNOWN, UnknownCriError],
  [status.INVALID_ARGUMENT, InvalidArgumentError],
  [status.DEADLINE_EXCEEDED, DeadlineExceededError],
  [status.NOT_FOUND, NotFoundError],
  [status.ALREADY_EXISTS, AlreadyExistsError],
  [status.PERMISSION_DENIED, PermissionDeniedError],
  [status.RESOURCE_EXHAUSTED, ResourceExhaustedError],
  [status.FAILED_PRECONDITION, FailedPreconditionError],
  [status.ABORTED, AbortedError],
  [status.OUT_OF_RANGE, OutOfRangeError],
  [status.UNIMPLEMENTED, UnimplementedError],
  [status.INTERNAL, InternalError],
  [status.UNAVAILABLE, UnavailableError],
  [status.DATA_LOSS, DataLossError],
  [status.UNAUTHENTICATED, UnauthenticatedError],
]);

/** Builds the subclass matching `code` (a plain CriError for codes without one, e.g. OK). */
export function criErrorFromCode(code: status, details: string, options?: CriErrorOptions): CriError {
  const Cls = classByCode.get(code);
  return Cls ? new Cls(details, options) : new CriError(code, details, options);
}

function isGrpcStatusError(err: unknown): err is { code: number; details?: string; message?: string } {
  return typeof err === 'object' && err !== null && typeof (err as { code?: unknown }).code === 'number';
}

/**
 * Normalises anything thrown by grpc-js or a handler into a CriError. A CriError passes through
 * (re-labelled with `method` if it had none); a grpc ServiceError keeps its code and details;
 * anything else becomes UNKNOWN.
 */
export function toCriError(err: unknown, method?: string): CriError {
  if (err instanceof CriError) {
    return err.method || !method
      ? err
      : criErrorFromCode(err.code, err.details, { method, cause: err.cause });
  }
  if (isGrpcStatusError(err) && err.code in status) {
    const details = err.details ?? err.message ?? '';
    return criErrorFromCode(err.code, details, { method, cause: err });
  }
  const details = err instanceof Error ? err.message : String(err);
  return new UnknownCriError(details, { method, cause: err });
}

function hasCode(err: unknown, code: status): boolean {
  return err instanceof CriError && err.code === code;
}

export const isNotFound = (err: unknown): boolean => hasCode(err, status.NOT_FOUND);
export const isUnimplemented = (err: unknown): boolean => hasCode(err, status.UNIMPLEMENTED);
export const isInvalidArgument = (err: unknown): boolean => hasCode(err, status.INVALID_ARGUMENT);
export const isDeadlineExceeded = (err: unknown): boolean => hasCode(err, status.DEADLINE_EXCEEDED);
export const isUnavailable = (err: unknown): boolean => hasCode(err, status.UNAVAILABLE);
export const isAlreadyExists = (err: unknown): boolean => hasCode(err, status.ALREADY_EXISTS);
export const isCanceled = (err: unknown): boolean => hasCode(err, status.CANCELLED);
