import { aggregateMessage, ErrorList, errorBody } from '@kh/apimachinery';
import type { KObject } from './object.js';

export interface StatusCause {
  reason: string;
  message: string;
  field?: string;
}

/** An error that is answered as a metav1.Status with an HTTP code, as kube-apiserver does. */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: {
      name?: string;
      group?: string;
      kind?: string;
      causes?: StatusCause[];
      retryAfterSeconds?: number;
    },
    /** The Status's ListMeta (an expired continue token's replacement). */
    readonly listMeta?: { continue?: string },
  ) {
    super(message);
  }

  toStatus(): KObject {
    const s: KObject = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: { ...this.listMeta },
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      code: this.code,
    };
    if (this.details !== undefined) s.details = this.details;
    return s;
  }
}

export interface ResourceRef {
  group: string;
  resource: string;
}

const qualified = (r: ResourceRef) => (r.group === '' ? r.resource : `${r.resource}.${r.group}`);

export const notFound = (r: ResourceRef, name: string) =>
  new ApiError(404, 'NotFound', `${qualified(r)} "${name}" not found`, {
    name,
    group: r.group || undefined,
    kind: r.resource,
  });

export const alreadyExists = (r: ResourceRef, name: string) =>
  new ApiError(409, 'AlreadyExists', `${qualified(r)} "${name}" already exists`, {
    name,
    group: r.group || undefined,
    kind: r.resource,
  });

export const conflict = (r: ResourceRef, name: string, why: string) =>
  new ApiError(409, 'Conflict', `Operation cannot be fulfilled on ${qualified(r)} "${name}": ${why}`, {
    name,
    group: r.group || undefined,
    kind: r.resource,
  });

export const staleConflict = (r: ResourceRef, name: string) =>
  conflict(
    r,
    name,
    'the object has been modified; please apply your changes to the latest version and try again',
  );

export const badRequest = (message: string) => new ApiError(400, 'BadRequest', message);

export const expired = (message: string, listMeta?: { continue?: string }) =>
  new ApiError(410, 'Expired', message, undefined, listMeta);

export const resourceNotFound = () =>
  new ApiError(404, 'NotFound', 'the server could not find the requested resource', {});

export const methodNotAllowed = (verb: string, resource: string) =>
  new ApiError(405, 'MethodNotAllowed', `${verb} is not supported on resources of kind "${resource}"`, {});

export const forbidden = (r: ResourceRef, name: string, why: string) =>
  new ApiError(403, 'Forbidden', `${qualified(r)} "${name}" is forbidden: ${why}`, {
    name,
    group: r.group || undefined,
    kind: r.resource,
  });

export const unauthorized = () => new ApiError(401, 'Unauthorized', 'Unauthorized');

export const unsupportedMediaType = (got: string, accepted: string[]) =>
  new ApiError(
    415,
    'UnsupportedMediaType',
    `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`,
    { causes: [{ reason: 'UnexpectedServerResponse', message: `unsupported media type "${got}"` }] },
  );

export const tooLarge = (limit: number) =>
  new ApiError(413, 'RequestEntityTooLarge', `Request entity too large: limit is ${limit}`);

/** A field error list turned into the 422 Invalid Status kube-apiserver sends. */
export class FieldErrors extends ErrorList {
  /** One Status cause per error: the ErrorType as reason, the message without the field. */
  get causes(): StatusCause[] {
    return this.errors.map((e) => ({ reason: e.type, message: errorBody(e), field: e.field }));
  }

  throwIfAny(kind: string, name: string, group = '') {
    if (this.empty) return;
    // errors.NewInvalid names the kind qualified by its group (GroupKind.String()).
    const qualifiedKind = group === '' ? kind : `${kind}.${group}`;
    throw new ApiError(
      422,
      'Invalid',
      `${qualifiedKind} "${name}" is invalid: ${aggregateMessage(this.errors)}`,
      {
        name,
        group: group || undefined,
        kind,
        causes: this.causes,
      },
    );
  }
}
