// Field errors as Kubernetes reports them (k8s.io/apimachinery/pkg/util/validation/field): a
// field path, a reason and a message such as `spec.port: Invalid value: 70000: must be between 1
// and 65535`. Validators collect them all in an ErrorList, so one answer names every problem.

/** The cause reasons of a 422 Status; the names are Kubernetes' field.ErrorType values. */
export type ErrorType =
  | 'FieldValueNotFound'
  | 'FieldValueRequired'
  | 'FieldValueDuplicate'
  | 'FieldValueInvalid'
  | 'FieldValueNotSupported'
  | 'FieldValueForbidden'
  // Not a Kubernetes ErrorType: strict decoding reports unknown fields in its own words, which
  // the node agent's config loader repeats for a field the schema does not know.
  | 'FieldValueUnknown';

const TYPE_TEXT: Record<ErrorType, string> = {
  FieldValueNotFound: 'Not found',
  FieldValueRequired: 'Required value',
  FieldValueDuplicate: 'Duplicate value',
  FieldValueInvalid: 'Invalid value',
  FieldValueNotSupported: 'Unsupported value',
  FieldValueForbidden: 'Forbidden',
  FieldValueUnknown: 'unknown field',
};

/** The types whose message leaves out the value. */
const NO_VALUE = new Set<ErrorType>(['FieldValueRequired', 'FieldValueForbidden', 'FieldValueUnknown']);

export interface FieldError {
  type: ErrorType;
  /** The field path, e.g. `spec.containers[0].image`. */
  field: string;
  value?: unknown;
  detail: string;
}

/** The message without the field: `Invalid value: 70000: must be …`, a Status cause's message. */
export function errorBody(e: FieldError): string {
  let s = TYPE_TEXT[e.type];
  if (!NO_VALUE.has(e.type)) s += `: ${JSON.stringify(e.value)}`;
  return e.detail ? `${s}: ${e.detail}` : s;
}

/** `field: body`, as field.Error's Error() prints it. */
export function formatFieldError(e: FieldError): string {
  return `${e.field}: ${errorBody(e)}`;
}

/** One error as itself, several as `[a, b]`, as ErrorList.ToAggregate().Error() prints them. */
export function aggregateMessage(errors: readonly FieldError[]): string {
  const list = errors.map(formatFieldError);
  return list.length === 1 ? (list[0] as string) : `[${list.join(', ')}]`;
}

/** Collects field errors while a validator walks an object. */
export class ErrorList {
  readonly errors: FieldError[] = [];

  get empty(): boolean {
    return this.errors.length === 0;
  }

  required(field: string, detail = ''): void {
    this.errors.push({ type: 'FieldValueRequired', field, detail });
  }

  invalid(field: string, value: unknown, detail: string): void {
    this.errors.push({ type: 'FieldValueInvalid', field, value, detail });
  }

  notSupported(field: string, value: unknown, allowed: readonly string[]): void {
    const detail = `supported values: ${allowed.map((a) => JSON.stringify(a)).join(', ')}`;
    this.errors.push({ type: 'FieldValueNotSupported', field, value, detail });
  }

  duplicate(field: string, value: unknown): void {
    this.errors.push({ type: 'FieldValueDuplicate', field, value, detail: '' });
  }

  notFound(field: string, value: unknown): void {
    this.errors.push({ type: 'FieldValueNotFound', field, value, detail: '' });
  }

  forbidden(field: string, detail: string): void {
    this.errors.push({ type: 'FieldValueForbidden', field, detail });
  }

  unknown(field: string): void {
    this.errors.push({ type: 'FieldValueUnknown', field, detail: '' });
  }
}
