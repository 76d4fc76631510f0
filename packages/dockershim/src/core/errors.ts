import {
  AlreadyExistsError,
  CriError,
  FailedPreconditionError,
  InternalError,
  InvalidArgumentError,
  NotFoundError,
  UnavailableError,
} from '@kh/cri-api';
import { dockerMessage, dockerStatusCode, isDockerConnectionError } from '../docker/errors.js';

/**
 * Maps an Engine API failure to the gRPC status a CRI client expects. `action` says what the shim was
 * doing, so the message reads "create container "x": No such image: y" rather than a bare HTTP code.
 */
export function toCriError(err: unknown, action: string): CriError {
  if (err instanceof CriError) return err;
  const message = `${action}: ${dockerMessage(err)}`;
  if (isDockerConnectionError(err))
    return new UnavailableError(`${message} (is dockerd running?)`, { cause: err });
  switch (dockerStatusCode(err)) {
    case 400:
      return new InvalidArgumentError(message, { cause: err });
    case 404:
      return new NotFoundError(message, { cause: err });
    case 409:
      return /already in use/i.test(message)
        ? new AlreadyExistsError(message, { cause: err })
        : new FailedPreconditionError(message, { cause: err });
    default:
      return new InternalError(message, { cause: err });
  }
}

/** Runs one Engine API interaction and rethrows any failure as a CriError. */
export async function docker<T>(action: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw toCriError(err, action);
  }
}

/** INVALID_ARGUMENT for a missing required field, named as in the proto. */
export function required<T>(value: T | undefined | null | '', field: string): T {
  if (value === undefined || value === null || value === '') {
    throw new InvalidArgumentError(`${field} is required`);
  }
  return value;
}
